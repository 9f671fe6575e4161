// SPDX-License-Identifier: BSL-1.0
#include "protocol/scripts.hpp"

#include "core/error_reply.hpp"
#include "protocol/key_slot.hpp"
#include "protocol/key_space.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <stdexcept>

namespace redlock::detail {
namespace {

// ---- plain locks: string keys holding the owner value ----

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
// waiters would wake to fail.
constexpr std::string_view plain_release = R"lua(
local mine, other = 0, 0
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v == ARGV[1] then
    mine = mine + 1
    redis.call('DEL', KEYS[i])
    if ARGV[2 + i] then
      redis.call(ARGV[2], ARGV[2 + i], ARGV[1])
    end
  elseif v then
    other = other + 1
  end
end
if mine == #KEYS then return 1 end
if other > 0 then return -1 end
return 0
)lua";

constexpr std::string_view plain_extend = R"lua(
local mine, other = 0, 0
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v == ARGV[1] then mine = mine + 1 elseif v then other = other + 1 end
end
if other > 0 then return -1 end
if mine < #KEYS and ARGV[3] ~= '1' then return 0 end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1
)lua";

constexpr std::string_view plain_check = R"lua(
local mine, other = 0, 0
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v == ARGV[1] then mine = mine + 1 elseif v then other = other + 1 end
end
if mine == #KEYS then return 1 end
if other > 0 then return -1 end
return 0
)lua";

// ---- reentrant locks: hash keys {owner value: hold count}, one owner at a time ----

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

constexpr std::string_view reentrant_release = R"lua(
local mine, other = 0, 0
for i = 1, #KEYS do
  if redis.call('HEXISTS', KEYS[i], ARGV[1]) == 1 then
    mine = mine + 1
    if redis.call('HINCRBY', KEYS[i], ARGV[1], -1) <= 0 then
      redis.call('DEL', KEYS[i])
      if ARGV[2 + i] then
        redis.call(ARGV[2], ARGV[2 + i], ARGV[1])
      end
    end
  elseif redis.call('EXISTS', KEYS[i]) == 1 then
    other = other + 1
  end
end
if mine == #KEYS then return 1 end
if other > 0 then return -1 end
return 0
)lua";

constexpr std::string_view reentrant_extend = R"lua(
local mine, other = 0, 0
for i = 1, #KEYS do
  if redis.call('HEXISTS', KEYS[i], ARGV[1]) == 1 then
    mine = mine + 1
  elseif redis.call('EXISTS', KEYS[i]) == 1 then
    other = other + 1
  end
end
if other > 0 then return -1 end
if mine < #KEYS and ARGV[3] ~= '1' then return 0 end
for i = 1, #KEYS do
  if redis.call('HEXISTS', KEYS[i], ARGV[1]) == 0 then
    redis.call('HSET', KEYS[i], ARGV[1], 1)
  end
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
)lua";

constexpr std::string_view reentrant_check = R"lua(
local mine, other = 0, 0
for i = 1, #KEYS do
  if redis.call('HEXISTS', KEYS[i], ARGV[1]) == 1 then
    mine = mine + 1
  elseif redis.call('EXISTS', KEYS[i]) == 1 then
    other = other + 1
  end
end
if mine == #KEYS then return 1 end
if other > 0 then return -1 end
return 0
)lua";

// ---- fencing: one counter per lock key, KEYS[n + i] beside lock key KEYS[i] ----

// A counter that does not exist yet (never used, or lost with a node's data) starts at the
// server's clock in microseconds: far above every token handed out before, since no key is
// acquired a million times a second. So a node that restarted empty does not hand out small
// tokens again (as long as the nodes' clocks roughly agree).
#define REDLOCK_FENCE_BUMP                                                               \
    "local function bump(counter)\n"                                                     \
    "  if redis.call('EXISTS', counter) == 0 then\n"                                     \
    "    local now = redis.call('TIME')\n"                                               \
    "    redis.call('SET', counter, now[1] .. string.rep('0', 6 - #now[2]) .. now[2])\n" \
    "  end\n"                                                                            \
    "  return redis.call('INCR', counter)\n"                                             \
    "end\n"

// Answers the largest counter value (a token, >= 1) or -1 when another owner holds a key.
constexpr std::string_view fenced_plain_acquire = REDLOCK_FENCE_BUMP R"lua(
local n = #KEYS / 2
for i = 1, n do
  if redis.call('EXISTS', KEYS[i]) == 1 then return -1 end
end
local token = 0
for i = 1, n do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  token = math.max(token, bump(KEYS[n + i]))
end
return token
)lua";

#undef REDLOCK_FENCE_BUMP

// Raises each counter to at least ARGV[1], the token the quorum gave: once a majority holds
// it, every later acquisition's quorum meets one of them and gets a larger token.
constexpr std::string_view fence_raise = R"lua(
local token = tonumber(ARGV[1])
for i = 1, #KEYS do
  local current = tonumber(redis.call('GET', KEYS[i]) or '0')
  if current == nil or current < token then redis.call('SET', KEYS[i], ARGV[1]) end
end
return 1
)lua";

struct script
{
    std::string_view text;
    std::string sha;
};

const script& cached(std::string_view text)
{
    // One entry per script text above; computed once, on first use.
    static const script all[] = {
        {plain_acquire, script_sha1(plain_acquire)},
        {plain_release, script_sha1(plain_release)},
        {plain_extend, script_sha1(plain_extend)},
        {plain_check, script_sha1(plain_check)},
        {reentrant_acquire, script_sha1(reentrant_acquire)},
        {reentrant_release, script_sha1(reentrant_release)},
        {reentrant_extend, script_sha1(reentrant_extend)},
        {reentrant_check, script_sha1(reentrant_check)},
        {fenced_plain_acquire, script_sha1(fenced_plain_acquire)},
        {fence_raise, script_sha1(fence_raise)},
    };
    for (const script& s : all) {
        if (s.text.data() == text.data()) {
            return s;
        }
    }
    return all[0];  // unreachable: every caller passes one of the texts above
}

command script_command(std::string_view text, const std::vector<std::string>& keys,
                       std::initializer_list<std::string_view> args,
                       const std::vector<std::string>& more_args = {})
{
    return detail::script_command(text, cached(text).sha, keys, args, more_args);
}

// What a reply that is none of the command's answers says.
std::string unexpected_words(const resp::reply& r)
{
    switch (r.type) {
        case resp::kind::nil:
            return "unexpected nil reply";
        case resp::kind::integer:
            return "unexpected integer reply " + std::to_string(r.integer);
        case resp::kind::array:
            return "unexpected array reply";
        default:
            return "unexpected reply '" + r.text.substr(0, 64) + "'";
    }
}

node_failure unexpected(const resp::reply& r)
{
    if (r.is_error()) {
        return error_reply_failure(r.text);
    }
    return node_failure{node_errc::unexpected_reply, unexpected_words(r)};
}

}  // namespace

// EVALSHA sha numkeys keys... args..., with the same request as EVAL for NOSCRIPT.
command script_command(std::string_view text, std::string_view sha,
                       const std::vector<std::string>& keys,
                       std::initializer_list<std::string_view> args,
                       const std::vector<std::string>& more_args)
{
    const std::string numkeys = std::to_string(keys.size());
    std::vector<std::string_view> tail;
    tail.reserve(keys.size() + args.size() + more_args.size());
    tail.insert(tail.end(), keys.begin(), keys.end());
    tail.insert(tail.end(), args.begin(), args.end());
    tail.insert(tail.end(), more_args.begin(), more_args.end());
    command c;
    resp::append_command(c.payload, "EVALSHA", sha, numkeys, tail);
    resp::append_command(c.fallback, "EVAL", text, numkeys, tail);
    c.script = text.data();
    if (!keys.empty()) {
        c.slot = key_slot(keys.front());
    }
    return c;
}

// Redis names a script by the lowercase hex SHA-1 of its text. OpenSSL's EVP interface is
// public and stable, unlike Boost's internal uuid/detail/sha1.hpp, whose digest type changed
// in Boost 1.86 (a wrong name would only show as every EVALSHA falling back to EVAL).
std::string script_sha1(std::string_view script)
{
    constexpr std::size_t sha1_size = 20;
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int size = 0;
    if (EVP_Digest(script.data(), script.size(), digest.data(), &size, EVP_sha1(), nullptr) != 1 ||
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

std::string cluster_key_problem(lock_shape lock)
{
    const std::string& first = lock.keys.front();
    for (const std::string& key : lock.keys) {
        if (key_slot(key) != key_slot(first)) {
            std::string why = "the keys '";
            why.append(first).append("' (slot ").append(std::to_string(key_slot(first)));
            why.append(") and '").append(key).append("' (slot ");
            why.append(std::to_string(key_slot(key)));
            why.append(
                ") of one lock are in different Redis Cluster slots, and one script "
                "touches them together: give the names a common hash tag, as in "
                "'{order:7}:stock' and '{order:7}:payment'");
            return why;
        }
        if (lock.fencing && fence_key(lock.prefix, key, true).empty()) {
            return "the key '" + key +
                   "' holds a '}' outside any hash tag, so no fencing counter can share its Redis "
                   "Cluster slot: name it without '}', or give it a hash tag";
        }
    }
    return {};
}

request acquire_request(lock_shape lock, std::string_view value, std::chrono::milliseconds expiry)
{
    const std::string ms = std::to_string(expiry.count());
    if (lock.fencing) {
        std::vector<std::string> keys = lock.keys;
        for (const std::string& key : lock.keys) {
            keys.push_back(fence_key(lock.prefix, key, lock.in_cluster));
        }
        // validate() refuses fencing on reentrant locks.
        return {script_command(fenced_plain_acquire, keys, {value, ms}), read_fenced_acquire_reply};
    }
    if (!lock.reentrant && lock.keys.size() == 1) {
        command c;
        resp::append_command(c.payload, {"SET", lock.keys[0], value, "NX", "PX", ms});
        c.slot = key_slot(lock.keys[0]);
        return {std::move(c), read_acquire_reply};
    }
    return {
        script_command(lock.reentrant ? reentrant_acquire : plain_acquire, lock.keys, {value, ms}),
        read_script_reply};
}

void add_replica_wait(command& cmd, int replicas, std::chrono::milliseconds timeout)
{
    const std::string n = std::to_string(replicas);
    const std::string ms =
        std::to_string(std::max<std::chrono::milliseconds::rep>(timeout.count(), 1));
    resp::append_command(cmd.payload, {"WAIT", n, ms});
    if (!cmd.fallback.empty()) {
        resp::append_command(cmd.fallback, {"WAIT", n, ms});
    }
    cmd.replies = 2;
}

node_status read_replicated_reply(const resp::reply& r, reply_reader read, std::string_view value,
                                  int replicas, node_failure& why)
{
    if (r.type != resp::kind::array || r.elements.size() != 2) {
        why = node_failure{node_errc::unexpected_reply,
                           "unexpected reply to a command followed by WAIT"};
        return node_status::error;
    }
    const node_status status = read(r.elements[0], value, why);
    if (status != node_status::ok) {
        return status;
    }
    const resp::reply& acknowledged = r.elements[1];
    if (acknowledged.is_error()) {
        why = node_failure{classify_error_reply(acknowledged.text),
                           "the key was set, but WAIT failed: " + with_hint(acknowledged.text)};
        return node_status::error;
    }
    if (acknowledged.type != resp::kind::integer) {
        why = node_failure{node_errc::unexpected_reply,
                           "the key was set, but WAIT gave an unexpected reply"};
        return node_status::error;
    }
    if (acknowledged.integer < replicas) {
        why = node_failure{
            node_errc::not_replicated,
            "the key was set, but " + std::to_string(acknowledged.integer) + " of the " +
                std::to_string(replicas) +
                " replicas asked for acknowledged it in time (options::wait_for_replicas)"};
        return node_status::error;
    }
    return node_status::ok;
}

request release_request(lock_shape lock, std::string_view value, bool announce)
{
    std::vector<std::string> channels;
    if (announce) {
        channels.emplace_back(pubsub_for(lock.in_cluster).publish);
        for (const std::string& key : lock.keys) {
            channels.push_back(release_channel(lock.prefix, key, lock.in_cluster));
        }
    }
    return {script_command(lock.reentrant ? reentrant_release : plain_release, lock.keys, {value},
                           channels),
            read_script_reply};
}

request extend_request(lock_shape lock, std::string_view value, std::chrono::milliseconds expiry,
                       bool recreate)
{
    const std::string ms = std::to_string(expiry.count());
    return {script_command(lock.reentrant ? reentrant_extend : plain_extend, lock.keys,
                           {value, ms, recreate ? "1" : "0"}),
            read_script_reply};
}

request fence_raise_request(lock_shape lock, std::uint64_t token)
{
    std::vector<std::string> counters;
    for (const std::string& key : lock.keys) {
        counters.push_back(fence_key(lock.prefix, key, lock.in_cluster));
    }
    return {script_command(fence_raise, counters, {std::to_string(token)}), read_script_reply};
}

request check_request(lock_shape lock, std::string_view value)
{
    if (!lock.reentrant && lock.keys.size() == 1) {
        command c;
        resp::append_command(c.payload, {"GET", lock.keys[0]});
        c.slot = key_slot(lock.keys[0]);
        return {std::move(c), read_get_reply};
    }
    return {script_command(lock.reentrant ? reentrant_check : plain_check, lock.keys, {value}),
            read_script_reply};
}

node_status read_acquire_reply(const resp::reply& r, std::string_view, node_failure& why)
{
    if (r.type == resp::kind::simple_string && r.text == "OK") {
        return node_status::ok;
    }
    if (r.type == resp::kind::nil) {
        return node_status::taken;
    }
    why = unexpected(r);
    return node_status::error;
}

node_status read_script_reply(const resp::reply& r, std::string_view, node_failure& why)
{
    if (r.type == resp::kind::integer) {
        if (r.integer == 1) {
            return node_status::ok;
        }
        if (r.integer == 0) {
            return node_status::missing;
        }
        if (r.integer == -1) {
            return node_status::taken;
        }
    }
    why = unexpected(r);
    return node_status::error;
}

node_status read_fenced_acquire_reply(const resp::reply& r, std::string_view, node_failure& why)
{
    if (r.type == resp::kind::integer) {
        if (r.integer >= 1) {
            return node_status::ok;
        }
        if (r.integer == -1) {
            return node_status::taken;
        }
    }
    why = unexpected(r);
    return node_status::error;
}

node_status read_get_reply(const resp::reply& r, std::string_view value, node_failure& why)
{
    if (r.type == resp::kind::nil) {
        return node_status::missing;
    }
    if (r.type == resp::kind::bulk_string) {
        return r.text == value ? node_status::ok : node_status::taken;
    }
    why = unexpected(r);
    return node_status::error;
}

}  // namespace redlock::detail
