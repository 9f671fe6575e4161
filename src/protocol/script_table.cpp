// SPDX-License-Identifier: BSL-1.0
#include "protocol/script_table.hpp"

#include "protocol/key_slot.hpp"

#include <boost/container/small_vector.hpp>

#include <openssl/evp.h>

#include <array>
#include <cassert>
#include <optional>
#include <stdexcept>

namespace redlock::detail {
namespace {

// ---- plain locks: string keys holding the owner value (ARGV[1]) for ARGV[2] ms ----

constexpr std::string_view plain_acquire = R"lua(
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then return -1 end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1
)lua";

// Waiting acquirers listen on each key's release channel (ARGV[2 + i] for KEYS[i]; see
// key_space.hpp), published with ARGV[2] (PUBLISH, or SPUBLISH for sharded pub/sub on a
// cluster); the message is the released owner value, so that a client recognises the
// releases it handed off itself. Without channels a release is quiet: the client hands the
// key to its own next acquire in the same write, so the key is never free and other clients'
// waiters would wake to fail. The keys that are ours go even when others are not.
constexpr std::string_view plain_release = R"lua(
local answer = 1
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v == ARGV[1] then
    redis.call('DEL', KEYS[i])
    if ARGV[2 + i] then redis.call(ARGV[2], ARGV[2 + i], ARGV[1]) end
  else
    answer = math.min(answer, v and -1 or 0)
  end
end
return answer
)lua";

// Without ARGV[2], only answers (a check). With it, sets every key again for ARGV[2] ms when
// all are ours, or, with ARGV[3] '1', when none is another owner's (recreating the keys that
// vanished): an extend.
constexpr std::string_view plain_check_extend = R"lua(
local answer = 1
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v ~= ARGV[1] then answer = math.min(answer, v and -1 or 0) end
end
if ARGV[2] and (answer == 1 or (answer == 0 and ARGV[3] == '1')) then
  for i = 1, #KEYS do
    redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  end
  answer = 1
end
return answer
)lua";

// ---- a mutex of one plain key whose waiting clients register (key_space.hpp's
// waiters_part): KEYS[2] the registry's order, KEYS[3] its namings ----

// An attempt of a client that waits: SET NX PX as plain_acquire (ARGV[1] the value, ARGV[2]
// the expiry); refused, the client ARGV[3] registers, keeping its place if it has one, as
// waiting since ARGV[4], and the registry lives ARGV[5] ms more. Either way a naming of the
// client is answered: it tried.
constexpr std::string_view plain_wait_acquire = R"lua(
redis.call('HDEL', KEYS[3], ARGV[3])
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
redis.call('PEXPIRE', KEYS[3], ARGV[5])
return -1
)lua";

// Naming a waiting client (after server_now), for the releases of locks whose waiting
// clients register (key_space.hpp's waiters_part: `order` a sorted set {client tag: since
// when it waits}, `marks` a hash {client tag: when a release named it, in the server's ms}).
// `register_waiter` registers client `tag`, keeping its place if it has one, for `life` ms.
// `name_waiter` publishes `message` with `publish` on the channel of the longest-waiting
// client (`channel`, '/' and its tag), so that one client tries, not all, and answers whether
// it named one. A client is passed over, and leaves the registry, when nobody hears its
// channel (it stopped waiting, or is gone) or when it was named over `bound` ms ago and has
// not tried since (stalled); with `fresh`, one named within `bound` is passed over but stays
// (several permits freed one after another go to several clients). At most four entries at a
// time, so that the cost stays bounded.
constexpr std::string_view waiter_naming = R"lua(
local function register_waiter(order, marks, tag, since, life)
  redis.call('ZADD', order, 'NX', since, tag)
  redis.call('PEXPIRE', order, life)
  redis.call('PEXPIRE', marks, life)
end
local function name_waiter(order, marks, publish, channel, message, bound, fresh)
  for _, tag in ipairs(redis.call('ZRANGE', order, 0, 3)) do
    local named = tonumber(redis.call('HGET', marks, tag))
    local stale = named and now - named > bound
    local busy = named and fresh and not stale
    if not stale and not busy and redis.call(publish, channel .. '/' .. tag, message) > 0 then
      if not named then redis.call('HSET', marks, tag, now) end
      return true
    end
    if not busy then
      redis.call('ZREM', order, tag)
      redis.call('HDEL', marks, tag)
    end
  end
  return false
end
)lua";

// The release of plain_release (ARGV[1] the value) for a key with a registry (KEYS[2] its
// order, KEYS[3] its marks): it names a waiting client (`name_waiter`, with ARGV[2] the
// publish command, ARGV[3] the release channel, ARGV[5] the bound), or, with nobody to name,
// publishes on the release channel itself, for waiters that have not registered. ARGV[4] is
// the releasing client's tag, which leaves the registry (it stops waiting, or yields and
// registers again behind the others); empty for the clean-up after a failed attempt, whose
// client waits on and may be named. Such a clean-up registers its client ARGV[6] given
// ARGV[7] (since when it waits) and ARGV[8] (the registry's life), whether or not it deletes
// anything: the clean-up after a client's first attempt.
constexpr std::string_view plain_release_naming_body = R"lua(
if ARGV[7] then register_waiter(KEYS[2], KEYS[3], ARGV[6], ARGV[7], ARGV[8]) end
local v = redis.call('GET', KEYS[1])
if v ~= ARGV[1] then return v and -1 or 0 end
redis.call('DEL', KEYS[1])
if ARGV[4] ~= '' then
  redis.call('ZREM', KEYS[2], ARGV[4])
  redis.call('HDEL', KEYS[3], ARGV[4])
end
if not name_waiter(KEYS[2], KEYS[3], ARGV[2], ARGV[3], ARGV[1], tonumber(ARGV[5]), false) then
  redis.call(ARGV[2], ARGV[3], ARGV[1])
end
return 1
)lua";

// A client that no longer waits leaves the registry (KEYS[1] its order, KEYS[2] its marks):
// client ARGV[1]'s entry goes, so that no release names it and no key of it stays behind.
constexpr std::string_view waiter_leave = R"lua(
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
)lua";

// ---- reentrant locks: hash keys {owner value: hold count}, one owner at a time ----

// A key is ours when it has a field for our value; another owner's when it exists without.
constexpr std::string_view reentrant_acquire = R"lua(
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 and redis.call('HEXISTS', KEYS[i], ARGV[1]) == 0 then
    return -1
  end
end
for i = 1, #KEYS do
  redis.call('HINCRBY', KEYS[i], ARGV[1], 1)
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
)lua";

// Takes one hold off each key that is ours; the key goes, announced as in plain_release,
// with its last hold.
constexpr std::string_view reentrant_release = R"lua(
local answer = 1
for i = 1, #KEYS do
  if redis.call('HEXISTS', KEYS[i], ARGV[1]) == 1 then
    if redis.call('HINCRBY', KEYS[i], ARGV[1], -1) <= 0 then
      redis.call('DEL', KEYS[i])
      if ARGV[2 + i] then redis.call(ARGV[2], ARGV[2 + i], ARGV[1]) end
    end
  else
    answer = math.min(answer, -redis.call('EXISTS', KEYS[i]))
  end
end
return answer
)lua";

// As plain_check_extend; a recreated key holds our value once.
constexpr std::string_view reentrant_check_extend = R"lua(
local answer = 1
for i = 1, #KEYS do
  local ours = redis.call('HEXISTS', KEYS[i], ARGV[1]) == 1
  if not ours then answer = math.min(answer, -redis.call('EXISTS', KEYS[i])) end
end
if ARGV[2] and (answer == 1 or (answer == 0 and ARGV[3] == '1')) then
  for i = 1, #KEYS do
    redis.call('HSETNX', KEYS[i], ARGV[1], 1)
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
  end
  answer = 1
end
return answer
)lua";

// ---- fencing: one counter per lock key, KEYS[n + i] beside lock key KEYS[i] ----

// A plain acquire that also bumps each key's counter, answering the largest value (a token,
// >= 1) or -1 when another owner holds a key. A counter that does not exist yet (never used,
// or lost with a node's data) starts at the server's clock in microseconds: far above every
// token handed out before, since no key is acquired a million times a second. So a node that
// restarted empty does not hand out small tokens again (as long as the nodes' clocks roughly
// agree).
constexpr std::string_view fenced_acquire = R"lua(
local n = #KEYS / 2
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 1 then return -1 end
end
local token = 0
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  local counter = KEYS[n + i]
  if redis.call('EXISTS', counter) == 0 then
    local now = redis.call('TIME')
    redis.call('SET', counter, now[1] .. string.rep('0', 6 - #now[2]) .. now[2])
  end
  token = math.max(token, redis.call('INCR', counter))
end
return token
)lua";

// Raises each counter to at least ARGV[1], the token the quorum gave: once a majority holds
// it, every later acquisition's quorum meets one of them and gets a larger token. A missing
// counter starts at the server's clock first, as in fenced_acquire: a write-back can arrive
// late (its client paused, its connection re-made) on a node that restarted without its
// data meanwhile, and an old token must not put that node's counter below the tokens handed
// out since.
constexpr std::string_view fence_raise = R"lua(
local token = tonumber(ARGV[1])
for i = 1, #KEYS do
  local current = redis.call('GET', KEYS[i])
  if not current then
    local now = redis.call('TIME')
    current = now[1] .. string.rep('0', 6 - #now[2]) .. now[2]
    redis.call('SET', KEYS[i], current)
  end
  current = tonumber(current)
  if current == nil or current < token then redis.call('SET', KEYS[i], ARGV[1]) end
end
return 1
)lua";

// The text of a script put together at compile time from pieces: several begin alike.
template <const std::string_view&... Parts>
struct joined
{
    static constexpr std::size_t size = (Parts.size() + ...);
    static constexpr std::array<char, size> chars = [] {
        std::array<char, size> out{};
        std::size_t i = 0;
        for (std::string_view part : {Parts...}) {
            for (char c : part) {
                out[i++] = c;
            }
        }
        return out;
    }();
    static constexpr std::string_view text{chars.data(), size};
};

// The server's clock in ms (`t` as TIME answers it, `now` in ms): the expiries of
// semaphores, read-write locks and fair queues are the server's own milliseconds.
constexpr std::string_view server_now = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
)lua";

// ---- semaphores: KEYS[1] a sorted set {owner value: expiry}, KEYS[2] the limit ----

// Expiries are the server's own milliseconds (TIME; scripts replicate their effects, so
// replicas copy the result, not the clock), never a client's: a holder that died leaves
// when its expiry passes on the node. Both keys expire with the last holder. Answers 1 when
// the permit is ours (granted, or already ours: a retried request), -1 when the limit's
// holders are all live, {-2, stored limit, asked limit} when the live holders use another
// limit than ARGV[3]: a code, so that the client decides on it, with both numbers. Given the
// registry of waiting clients (KEYS[3] its order, KEYS[4] its marks), the attempt answers a
// naming of client ARGV[4] and, refused because the semaphore is full, registers it as
// waiting since ARGV[5] for ARGV[6] ms (`register_waiter`).
constexpr std::string_view semaphore_acquire_body = R"lua(
if KEYS[3] then redis.call('HDEL', KEYS[4], ARGV[4]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
if held == 0 then redis.call('DEL', KEYS[2]) end
local asked = tonumber(ARGV[3])
local limit = tonumber(redis.call('GET', KEYS[2]) or ARGV[3]) or -1
if limit ~= asked then return {-2, limit, asked} end
if held >= limit and not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if KEYS[3] then register_waiter(KEYS[3], KEYS[4], ARGV[4], ARGV[5], ARGV[6]) end
  return -1
end
redis.call('ZADD', KEYS[1], string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2]
redis.call('SET', KEYS[2], ARGV[3], 'PXAT', last)
redis.call('PEXPIREAT', KEYS[1], last)
return 1
)lua";
constexpr std::string_view plain_release_naming =
    joined<server_now, waiter_naming, plain_release_naming_body>::text;
constexpr std::string_view semaphore_acquire =
    joined<server_now, waiter_naming, semaphore_acquire_body>::text;

// Removes our permit, live or expired, announced as in plain_release (ARGV[2] the command,
// ARGV[3] the channel); the limit goes with the last holder. Answers 1 when the permit was
// live, 0 otherwise.
constexpr std::string_view semaphore_release_body = R"lua(
local expiry = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not expiry then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('DEL', KEYS[2]) end
if ARGV[3] then redis.call(ARGV[2], ARGV[3], ARGV[1]) end
return expiry > now and 1 or 0
)lua";
constexpr std::string_view semaphore_release = joined<server_now, semaphore_release_body>::text;

// semaphore_release for a semaphore with a registry (KEYS[3], KEYS[4]), arguments as for
// plain_release_naming: the permit freed names a waiting client not named already, so that
// permits freed one after another go to as many clients. A clean-up (no ARGV[4]) names
// nobody and publishes nothing: it runs only on the nodes its attempt reached, so its namings
// would differ from node to node (a client named on some nodes only would split the vote of
// one named on the others), and the clients of a split vote retry after their delay anyway.
constexpr std::string_view semaphore_release_naming_body = R"lua(
if ARGV[7] then register_waiter(KEYS[3], KEYS[4], ARGV[6], ARGV[7], ARGV[8]) end
local expiry = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not expiry then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('DEL', KEYS[2]) end
if ARGV[4] == '' then return expiry > now and 1 or 0 end
redis.call('ZREM', KEYS[3], ARGV[4])
redis.call('HDEL', KEYS[4], ARGV[4])
if not name_waiter(KEYS[3], KEYS[4], ARGV[2], ARGV[3], ARGV[1], tonumber(ARGV[5]), true) then
  redis.call(ARGV[2], ARGV[3], ARGV[1])
end
return expiry > now and 1 or 0
)lua";
constexpr std::string_view semaphore_release_naming =
    joined<server_now, waiter_naming, semaphore_release_naming_body>::text;

// Answers 1 when our permit is live, 0 otherwise; with ARGV[2], a live permit's expiry
// becomes ARGV[2] ms from now (an extend), and the keys expire with the last holder. A
// permit that expired is never taken back: another holder may have its place.
constexpr std::string_view semaphore_check_extend_body = R"lua(
local expiry = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not expiry or expiry <= now then return 0 end
if ARGV[2] then
  redis.call('ZADD', KEYS[1], 'XX', string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2]
  redis.call('PEXPIREAT', KEYS[1], last)
  redis.call('PEXPIREAT', KEYS[2], last)
end
return 1
)lua";
constexpr std::string_view semaphore_check_extend =
    joined<server_now, semaphore_check_extend_body>::text;

// ---- read-write locks: KEYS[1] a hash {mode .. ':' .. owner value: expiry} ----

// Modes: 'r' a reader (any number), 'w' the writer (one), 'i' the intent of a writer that
// waits for readers to leave (one). Expiries are the server's own milliseconds, as a
// semaphore's, so each entry ends on its own and an owner that died blocks nobody longer than
// its entry's expiry; the key expires with its latest entry. ARGV[1] the owner value,
// ARGV[2] ms, ARGV[3] the mode ('r' or 'w'), ARGV[4] ms of a waiting writer's intent ('0':
// none, a try). A reader is refused while a writer or an intent is live, so a writer that
// waits is not overtaken by new readers; a writer is refused while a reader or another
// writer is live, and when readers are what refuse it, its intent is recorded (unless
// another writer's is live). Intents never refuse a writer: over several nodes writers whose
// intents are on different nodes would otherwise refuse each other until the intents expire,
// which every attempt postpones. With KEYS[2] (a writer's fencing counter, as fenced_acquire's)
// a granted writer answers its token; 1 otherwise, -1 when refused.
constexpr std::string_view rw_acquire_body = R"lua(
local entries = redis.call('HGETALL', KEYS[1])
local readers, writer, intent = 0, nil, nil
for i = 1, #entries, 2 do
  local mode, owner = string.sub(entries[i], 1, 1), string.sub(entries[i], 3)
  if tonumber(entries[i + 1]) <= now then redis.call('HDEL', KEYS[1], entries[i])
  elseif mode == 'r' then readers = readers + 1
  elseif mode == 'w' then writer = owner
  else intent = owner end
end
local function enter(field, ms)
  redis.call('HSET', KEYS[1], field, string.format('%.0f', now + tonumber(ms)))
  if redis.call('PTTL', KEYS[1]) < tonumber(ms) then redis.call('PEXPIRE', KEYS[1], ms) end
end
if ARGV[3] == 'r' then
  if writer or intent then return -1 end
else
  if readers > 0 and ARGV[4] ~= '0' and (not intent or intent == ARGV[1]) then
    enter('i:' .. ARGV[1], ARGV[4])
  end
  if readers > 0 or (writer and writer ~= ARGV[1]) then return -1 end
  redis.call('HDEL', KEYS[1], 'i:' .. ARGV[1])
end
enter(ARGV[3] .. ':' .. ARGV[1], ARGV[2])
if not KEYS[2] then return 1 end
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[2], t[1] .. string.rep('0', 6 - #t[2]) .. t[2])
end
return redis.call('INCR', KEYS[2])
)lua";
constexpr std::string_view rw_acquire = joined<server_now, rw_acquire_body>::text;

// Removes our entry of mode ARGV[2], live or expired, and with ARGV[3] '1' our intent too (a
// writer that gave up, or released: readers may enter again); announced as in plain_release
// (ARGV[4] the command, ARGV[5] the channel) when what went may let a waiter in: a writer or
// an intent, after which every reader may enter, or the last live reader, after which a
// writer may. A reader that leaves others live lets nobody in (a writer waits for them all,
// and readers that wait are kept out by a writer or an intent, which stays), so it is quiet:
// readers that wait wake for every message. Answers 1 when the entry was live, 0 otherwise.
constexpr std::string_view rw_release_body = R"lua(
local field = ARGV[2] .. ':' .. ARGV[1]
local expiry = tonumber(redis.call('HGET', KEYS[1], field))
local gone = redis.call('HDEL', KEYS[1], field) > 0
local lets_in = gone and ARGV[2] ~= 'r'
if ARGV[3] == '1' and redis.call('HDEL', KEYS[1], 'i:' .. ARGV[1]) > 0 then lets_in = true end
if gone and not lets_in then
  lets_in = true
  local entries = redis.call('HGETALL', KEYS[1])
  for i = 1, #entries, 2 do
    if string.sub(entries[i], 1, 1) == 'r' and tonumber(entries[i + 1]) > now then lets_in = false end
  end
end
if lets_in and ARGV[5] then redis.call(ARGV[4], ARGV[5], ARGV[1]) end
return expiry and expiry > now and 1 or 0
)lua";
constexpr std::string_view rw_release = joined<server_now, rw_release_body>::text;

// Answers 1 when our entry of mode ARGV[2] is live, 0 otherwise; with ARGV[3], a live entry's
// expiry becomes ARGV[3] ms from now (an extend), and the key lives at least as long. An
// entry that expired is never taken back: a writer may have come in meanwhile.
constexpr std::string_view rw_check_extend_body = R"lua(
local field = ARGV[2] .. ':' .. ARGV[1]
local expiry = tonumber(redis.call('HGET', KEYS[1], field))
if not expiry or expiry <= now then return 0 end
if ARGV[3] then
  redis.call('HSET', KEYS[1], field, string.format('%.0f', now + tonumber(ARGV[3])))
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
end
return 1
)lua";
constexpr std::string_view rw_check_extend = joined<server_now, rw_check_extend_body>::text;

// ---- fair locks: KEYS[1] the lock key, KEYS[2..5] its queue (key_space.hpp's queue_part) ----

// Each fair script first drops the queue's entries whose expiry (the server's own ms, as for
// semaphores) has passed: a waiter that stopped refreshing its entry leaves by itself. The
// queue is ordered by (score, owner value), the score being a committed entry's ticket or a
// pending entry's proposal, which its ticket can only exceed: so the first entry is the head
// when it is committed, and when it is pending no committed entry can be sure yet that it
// comes first. The queue's keys expire with their last entry; a counter started again
// begins at the server's clock in microseconds, above every ticket handed out before (as
// fencing counters do).

// The expired entries dropped (after server_now).
constexpr std::string_view queue_drop_expired = R"lua(
for _, v in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
  redis.call('ZREM', KEYS[2], v); redis.call('ZREM', KEYS[3], v); redis.call('HDEL', KEYS[4], v)
end
)lua";

// An entry's state in KEYS[4]: 'p' (pending) or 'c' (committed); then, for a committed entry
// that a release may hand the key to, the stamp the clean-up after its last attempt gave it;
// then '/' and its client's channel tag, when it has one. A message for an entry goes to the
// lock's channel followed by '/' and the entry's tag, to which only its client listens, so
// that a release wakes one client and not all that wait.
constexpr std::string_view fair_states = R"lua(
local function committed(s) return s and string.sub(s, 1, 1) == 'c' end
local function suffix(tag) return tag ~= '' and ('/' .. tag) or '' end
local function tell(s, channel, message)
  local tag = string.match(s, '/(.+)$')
  redis.call(channel[1], tag and (channel[2] .. '/' .. tag) or channel[2], message)
end
)lua";

// Joins (phase 1): answers the entry's proposal, a new one from the counter unless the entry
// exists (a retried request). ARGV: value, entry ttl ms, '1' to commit at once (one node: the
// proposal is the ticket), the client's channel tag.
constexpr std::string_view fair_join_body = R"lua(
local p = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
if not p then
  if redis.call('EXISTS', KEYS[5]) == 0 then
    redis.call('SET', KEYS[5], t[1] .. string.rep('0', 6 - #t[2]) .. t[2])
  end
  p = redis.call('INCR', KEYS[5])
  redis.call('ZADD', KEYS[2], string.format('%.0f', p), ARGV[1])
  redis.call('HSET', KEYS[4], ARGV[1], (ARGV[3] == '1' and 'c' or 'p') .. suffix(ARGV[4]))
end
redis.call('ZADD', KEYS[3], string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])
local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')[2]
for i = 2, 5 do redis.call('PEXPIREAT', KEYS[i], last) end
return p
)lua";

// With a ticket ARGV[4], commits the caller's entry at it (phase 2; again on every refresh,
// which re-adds an entry the node lost or never had), pushes its expiry ARGV[3] ms ahead and
// raises the counter to the ticket; then sets the lock key (PX ARGV[2]) if it is free and the
// caller is the head, or if it already holds the caller's value (a release handed it over
// before this attempt arrived); a key of another kind (a read-write lock's hash, a semaphore's
// set) is held. With an empty ticket (try_acquire) the caller has no entry and the key is set
// only if nobody is queued. ARGV[5] is the client's channel tag. Answers 1 (or,
// with a fencing counter KEYS[6], the token), -1 when the key is held, -2 when another waiter
// goes first. A commit that changed the queue may have unblocked a head that waits with the
// key free: it is told (ARGV[6] the publish command, ARGV[7] the channel, the message 'n:' and
// the head's owner value). The entry is plainly committed from here on, without a stamp: no
// release hands the key to an attempt under way.
constexpr std::string_view fair_acquire_body = R"lua(
local changed = false
if ARGV[4] ~= '' then
  changed = not committed(redis.call('HGET', KEYS[4], ARGV[1]))
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
  redis.call('HSET', KEYS[4], ARGV[1], 'c' .. suffix(ARGV[5]))
  redis.call('ZADD', KEYS[3], string.format('%.0f', now + tonumber(ARGV[3])), ARGV[1])
  if tonumber(redis.call('GET', KEYS[5]) or '0') < tonumber(ARGV[4]) then
    redis.call('SET', KEYS[5], ARGV[4])
  end
  local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')[2]
  for i = 2, 5 do redis.call('PEXPIREAT', KEYS[i], last) end
end
local held = redis.call('EXISTS', KEYS[1]) == 1
if held and (redis.call('TYPE', KEYS[1]).ok ~= 'string' or redis.call('GET', KEYS[1]) ~= ARGV[1]) then
  return -1
end
if not held then
  local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  local state = head and redis.call('HGET', KEYS[4], head)
  if head and (head ~= ARGV[1] or not committed(state)) then
    if changed and ARGV[7] and committed(state) then tell(state, {ARGV[6], ARGV[7]}, 'n:' .. head) end
    return -2
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if not KEYS[6] then return 1 end
if redis.call('EXISTS', KEYS[6]) == 0 then
  redis.call('SET', KEYS[6], t[1] .. string.rep('0', 6 - #t[2]) .. t[2])
end
return redis.call('INCR', KEYS[6])
)lua";

// Deletes the lock key if it holds ARGV[1]; with ARGV[2] '1' the caller's entry leaves the
// queue too (a release, a waiter that gives up). The clean-up after a failed attempt keeps the
// entry, and with a stamp ARGV[3] it marks the entry, if committed, as one that a release may
// hand the key to (the stamp after the 'c'; ARGV[5] the client's channel tag) and pushes its
// expiry ARGV[4] ms ahead. Then, with a channel (ARGV[6] the publish command, ARGV[7] the
// channel) and the key free, the queue's head, if it is committed and not the caller, is
// told: a head marked with a stamp is handed the key, set to its owner value for what is left
// of its entry's life, and the message is 'h:', the stamp, ':' and its owner value; any other
// head is named ('n:' and its owner value), so that only it attempts. Answers as
// plain_release.
constexpr std::string_view fair_release_body = R"lua(
local holder = redis.call('GET', KEYS[1])
local answer = holder == ARGV[1] and 1 or (holder and -1 or 0)
if answer == 1 then redis.call('DEL', KEYS[1]) end
if ARGV[2] == '1' then
  redis.call('ZREM', KEYS[2], ARGV[1]); redis.call('ZREM', KEYS[3], ARGV[1]); redis.call('HDEL', KEYS[4], ARGV[1])
elseif ARGV[3] ~= '' and committed(redis.call('HGET', KEYS[4], ARGV[1])) then
  redis.call('HSET', KEYS[4], ARGV[1], 'c' .. ARGV[3] .. suffix(ARGV[5]))
  redis.call('ZADD', KEYS[3], string.format('%.0f', now + tonumber(ARGV[4])), ARGV[1])
  local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')[2]
  for i = 2, 5 do redis.call('PEXPIREAT', KEYS[i], last) end
end
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if not ARGV[7] or answer == -1 or not head or head == ARGV[1] then return answer end
local state = redis.call('HGET', KEYS[4], head)
if not committed(state) then return answer end
local stamp = string.match(state, '^c(%d+)')
if not stamp then
  tell(state, {ARGV[6], ARGV[7]}, 'n:' .. head)
  return answer
end
local left = tonumber(redis.call('ZSCORE', KEYS[3], head)) - now
redis.call('SET', KEYS[1], head, 'PX', string.format('%.0f', left))
tell(state, {ARGV[6], ARGV[7]}, 'h:' .. stamp .. ':' .. head)
return answer
)lua";

constexpr std::string_view fair_join =
    joined<server_now, queue_drop_expired, fair_states, fair_join_body>::text;
constexpr std::string_view fair_acquire =
    joined<server_now, queue_drop_expired, fair_states, fair_acquire_body>::text;
constexpr std::string_view fair_release =
    joined<server_now, queue_drop_expired, fair_states, fair_release_body>::text;

// ---- elections: a fair lock, and beside its key a hash {owner, term, version, value} ----

// A fair release (KEYS[1..5], ARGV[1..7] as fair_release), then, if the hash KEYS[6] is the
// caller's, the hash goes too and, announcing, ARGV[8] (the election's channel) hears 'l:'.
// The fair release is a function here: its early returns end only it.
constexpr std::string_view election_release_head = R"lua(
local function release()
)lua";
constexpr std::string_view election_release_tail = R"lua(
end
local answer = release()
if redis.call('HGET', KEYS[6], 'owner') == ARGV[1] then
  redis.call('DEL', KEYS[6])
  if ARGV[8] then redis.call(ARGV[6], ARGV[8], 'l:') end
end
return answer
)lua";

// As plain_check_extend for the one key KEYS[1]; an extension also keeps the hash KEYS[2] for
// as long as the key when it is the caller's, so that the published value lives as long as
// the leadership.
constexpr std::string_view election_check_extend = R"lua(
local v = redis.call('GET', KEYS[1])
local answer = v == ARGV[1] and 1 or (v and -1 or 0)
if ARGV[2] and (answer == 1 or (answer == 0 and ARGV[3] == '1')) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  if redis.call('HGET', KEYS[2], 'owner') == ARGV[1] then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
  answer = 1
end
return answer
)lua";

// Where the key KEYS[1] holds the caller's value ARGV[1], publishes ARGV[4] as its value in
// the hash KEYS[2] with its term ARGV[2] and version ARGV[3] (the caller's own clock: a later
// publication of one leader has a larger one), for as long as the key lives, and announces it
// (ARGV[5] the publish command, ARGV[6] the channel). It also raises the fencing counter
// KEYS[3] to the term, as the token's write-back does: a node whose write-back was lost must
// not let a later leader take the same term or a smaller one (docs/safety.md). Answers as
// plain_check_extend.
constexpr std::string_view election_proclaim = R"lua(
local v = redis.call('GET', KEYS[1])
if v ~= ARGV[1] then return v and -1 or 0 end
if tonumber(redis.call('GET', KEYS[3]) or '0') < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[3], ARGV[2])
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'owner', ARGV[1], 'term', ARGV[2], 'version', ARGV[3], 'value', ARGV[4])
redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))
redis.call(ARGV[5], ARGV[6], 'l:' .. ARGV[2])
return 1
)lua";

// Who leads, as this node sees it: {ttl} when nobody does (no hash, or the key no longer
// holds the hash's owner: the leader resigned, lapsed or has not published yet), else {ttl,
// owner, term, version, value}; ttl is the key's PTTL.
constexpr std::string_view election_read = R"lua(
local ttl = redis.call('PTTL', KEYS[1])
local owner = redis.call('HGET', KEYS[2], 'owner')
if not owner or redis.call('GET', KEYS[1]) ~= owner then return {ttl} end
local h = redis.call('HMGET', KEYS[2], 'term', 'version', 'value')
return {ttl, owner, h[1], h[2], h[3]}
)lua";

constexpr std::string_view election_release =
    joined<server_now, queue_drop_expired, fair_states, election_release_head, fair_release_body,
           election_release_tail>::text;

// ---- inspection ----

// TYPE answers a status reply, which a script sees as {ok = name}. The third element names
// the master when the node is a replica, whose locks are only copies ('' otherwise, also when
// the user may not run INFO: redis.pcall answers an error table instead of failing). The key's
// contents follow only for the types locks are made of, and with a hash or a sorted set, whose
// entries carry expiries in the server's milliseconds, the server's time; with a sorted set
// (a semaphore) also its limit, KEYS[2] when given. With a fair queue's keys (KEYS[3] its
// order, KEYS[4] the entries' expiries, KEYS[5] their states), a string or a missing key is
// followed by the time and the queue in order: value, ticket, state, expiry for each entry.
constexpr std::string_view inspect = R"lua(
local t = redis.call('TYPE', KEYS[1]).ok
local ttl = redis.call('PTTL', KEYS[1])
local master = ''
local info = redis.pcall('INFO', 'replication')
if type(info) == 'string' and string.match(info, 'role:slave') then
  master = (string.match(info, 'master_host:([^\r\n]*)') or '?') .. ':' ..
           (string.match(info, 'master_port:(%d+)') or '?')
end
local now = redis.call('TIME')
now = string.format('%.0f', tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000))
local function queue()
  local out = {}
  local order = redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES')
  for i = 1, #order, 2 do
    out[#out + 1] = order[i]
    out[#out + 1] = order[i + 1]
    out[#out + 1] = redis.call('HGET', KEYS[5], order[i]) or ''
    out[#out + 1] = redis.call('ZSCORE', KEYS[4], order[i]) or ''
  end
  return out
end
if t == 'string' then
  if KEYS[3] then return {t, ttl, master, redis.call('GET', KEYS[1]), now, queue()} end
  return {t, ttl, master, redis.call('GET', KEYS[1])}
end
if t == 'none' and KEYS[3] then return {t, ttl, master, now, queue()} end
if t == 'hash' then return {t, ttl, master, redis.call('HGETALL', KEYS[1]), now} end
if t == 'zset' then
  local limit = KEYS[2] and redis.call('GET', KEYS[2]) or ''
  return {t, ttl, master, redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'), now, limit or ''}
end
return {t, ttl, master}
)lua";

// ---- fenced_store: a hash {token, owner, value} per resource ----

// Refuses ({0}) a request whose token ARGV[1] is older than the key's newest, or equal to it
// from another owner than ARGV[2] (fence.hpp's rule); otherwise the key remembers the token
// and its owner, and the request writes ARGV[3] when it has one ({1}) or reads the value
// ({1, value}, or {1} when there is none).
constexpr std::string_view fenced_access = R"lua(
local token = tonumber(ARGV[1])
local newest = tonumber(redis.call('HGET', KEYS[1], 'token') or '0') or 0
if token < newest or (token == newest and redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2]) then
  return {0}
end
if token > newest then redis.call('HSET', KEYS[1], 'token', ARGV[1], 'owner', ARGV[2]) end
if ARGV[3] then
  redis.call('HSET', KEYS[1], 'value', ARGV[3])
  return {1}
end
local value = redis.call('HGET', KEYS[1], 'value')
if value then return {1, value} end
return {1}
)lua";

// A row as written down; `all_scripts` adds its index and SHA-1.
struct row
{
    script_id id;
    std::string_view name;
    std::optional<std::size_t> keys;
    std::string_view text;
};

constexpr std::optional<std::size_t> any_keys = std::nullopt;

constexpr std::array<row, script_count> rows{{
    {script_id::plain_acquire, "plain_acquire", any_keys, plain_acquire},
    {script_id::plain_release, "plain_release", any_keys, plain_release},
    {script_id::plain_check_extend, "plain_check_extend", any_keys, plain_check_extend},
    {script_id::plain_wait_acquire, "plain_wait_acquire", 3, plain_wait_acquire},
    {script_id::plain_release_naming, "plain_release_naming", 3, plain_release_naming},
    {script_id::waiter_leave, "waiter_leave", 2, waiter_leave},
    {script_id::reentrant_acquire, "reentrant_acquire", any_keys, reentrant_acquire},
    {script_id::reentrant_release, "reentrant_release", any_keys, reentrant_release},
    {script_id::reentrant_check_extend, "reentrant_check_extend", any_keys, reentrant_check_extend},
    {script_id::fenced_acquire, "fenced_acquire", any_keys, fenced_acquire},
    {script_id::fence_raise, "fence_raise", any_keys, fence_raise},
    {script_id::semaphore_acquire, "semaphore_acquire", any_keys, semaphore_acquire},
    {script_id::semaphore_release, "semaphore_release", 2, semaphore_release},
    {script_id::semaphore_check_extend, "semaphore_check_extend", 2, semaphore_check_extend},
    {script_id::semaphore_release_naming, "semaphore_release_naming", 4, semaphore_release_naming},
    {script_id::rw_acquire, "rw_acquire", any_keys, rw_acquire},
    {script_id::rw_release, "rw_release", 1, rw_release},
    {script_id::rw_check_extend, "rw_check_extend", 1, rw_check_extend},
    {script_id::fair_join, "fair_join", 5, fair_join},
    {script_id::fair_acquire, "fair_acquire", any_keys, fair_acquire},
    {script_id::fair_release, "fair_release", 5, fair_release},
    {script_id::election_release, "election_release", 6, election_release},
    {script_id::election_check_extend, "election_check_extend", 2, election_check_extend},
    {script_id::election_proclaim, "election_proclaim", 3, election_proclaim},
    {script_id::election_read, "election_read", 2, election_read},
    {script_id::inspect, "inspect", any_keys, inspect},
    {script_id::fenced_access, "fenced_access", 1, fenced_access},
}};

// A row left out, or out of order, fails the build here.
constexpr bool every_id_has_its_row()
{
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (static_cast<std::size_t>(rows[i].id) != i || rows[i].text.empty()) {
            return false;
        }
    }
    return true;
}
static_assert(every_id_has_its_row(), "rows must list every script_id once, in order");

constexpr bool names_are_unique()
{
    for (std::size_t i = 0; i < rows.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            if (rows[i].name == rows[j].name) {
                return false;
            }
        }
    }
    return true;
}
static_assert(names_are_unique());
static_assert(script_count <= max_scripts, "a connection's script_set is too small");

}  // namespace

std::span<const lua_script, script_count> all_scripts()
{
    static const std::array<lua_script, script_count> table = [] {
        std::array<lua_script, script_count> out;
        for (std::size_t i = 0; i < script_count; ++i) {
            out[i] = lua_script{static_cast<std::uint8_t>(i), rows[i].name, rows[i].keys,
                                rows[i].text, script_sha1(rows[i].text)};
        }
        return out;
    }();
    return table;
}

const lua_script& script_of(script_id id)
{
    return all_scripts()[static_cast<std::size_t>(id)];
}

// EVALSHA sha numkeys keys... args..., which a connection sends as EVAL when it must.
command script_command(script_id id, const std::vector<std::string>& keys,
                       std::initializer_list<std::string_view> args,
                       const std::vector<std::string>& more_args)
{
    const lua_script& script = script_of(id);
    assert(!keys.empty() && (!script.keys || *script.keys == keys.size()));
    const std::string numkeys = std::to_string(keys.size());
    // On the stack for the commands of the common locks.
    boost::container::small_vector<std::string_view, 12> tail;
    tail.reserve(keys.size() + args.size() + more_args.size());
    tail.insert(tail.end(), keys.begin(), keys.end());
    tail.insert(tail.end(), args.begin(), args.end());
    tail.insert(tail.end(), more_args.begin(), more_args.end());
    command c;
    resp::append_command(c.payload, "EVALSHA", script.sha, numkeys, {tail.data(), tail.size()});
    c.script = &script;
    c.script_at = static_cast<std::uint32_t>(resp::length_size(3 + tail.size()));
    c.key_at = static_cast<std::uint32_t>(resp::first_argument_at(3 + tail.size(), "EVALSHA") +
                                          resp::bulk_size(script.sha) + resp::bulk_size(numkeys));
    return c;
}

// Redis names a script by the lowercase hex SHA-1 of its text. OpenSSL's EVP interface is
// public and stable, unlike Boost's internal uuid/detail/sha1.hpp, whose digest type changed
// in Boost 1.86 (a wrong name would only show as every EVALSHA falling back to EVAL).
std::string script_sha1(std::string_view text)
{
    constexpr std::size_t sha1_size = 20;
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int size = 0;
    if (EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha1(), nullptr) != 1 ||
        size != sha1_size) {
        throw std::runtime_error("redlock: OpenSSL could not compute a SHA-1 digest");
    }
    constexpr std::string_view hex_digits = "0123456789abcdef";
    std::string hex;
    hex.reserve(2 * sha1_size);
    for (std::size_t i = 0; i < sha1_size; ++i) {
        hex += hex_digits[digest[i] >> 4];
        hex += hex_digits[digest[i] & 0x0f];
    }
    return hex;
}

}  // namespace redlock::detail
