// SPDX-License-Identifier: BSL-1.0
#include "protocol/scripts.hpp"

#include "core/error_reply.hpp"
#include "protocol/key_slot.hpp"
#include "protocol/key_space.hpp"
#include "protocol/script_table.hpp"

#include <algorithm>

namespace redlock::detail {
namespace {

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

// The arguments that make a script publish on the release channel of `lock`'s key.
std::vector<std::string> announcing(const lock_shape& lock)
{
    std::vector<std::string> channels;
    channels.reserve(1 + lock.keys.size());
    channels.emplace_back(pubsub_for(lock.in_cluster).publish);
    for (const std::string& key : lock.keys) {
        channels.push_back(release_channel(lock.prefix, key, lock.in_cluster));
    }
    return channels;
}

std::vector<std::string> announcing_if(const lock_shape& lock, bool announce)
{
    return announce ? announcing(lock) : std::vector<std::string>{};
}

// ---- The registry of waiting clients (a mutex of one plain key, a semaphore). ----

// Whether `lock` keeps a registry of its waiting clients: its client's tag is set only for a
// lock that does (lock/kind_rules.hpp's registers_waiters).
bool names_waiters(const lock_shape& lock)
{
    return !lock.waiter_tag.empty();
}

// `keys` followed by the registry beside `lock`'s key: its order, then its marks.
std::vector<std::string> with_registry(const lock_shape& lock, std::vector<std::string> keys)
{
    const std::string& key = lock.keys.front();
    keys.push_back(waiters_key(lock.prefix, key, waiters_part::order, lock.in_cluster));
    keys.push_back(waiters_key(lock.prefix, key, waiters_part::named, lock.in_cluster));
    return keys;
}

std::vector<std::string> registry_keys(const lock_shape& lock)
{
    return with_registry(lock, {lock.keys.front()});
}

// `own_tag`: the releasing client's, which leaves the registry; empty for a clean-up, which
// registers the client when `registering` has since when it waits.
request naming_release(const lock_shape& lock, script_id id, const std::vector<std::string>& keys,
                       std::string_view value, std::string_view own_tag,
                       const clean_up_args* registering = nullptr)
{
    const pubsub_words words = pubsub_for(lock.in_cluster);
    std::vector<std::string> registration;
    if (registering && registering->waiting_since) {
        registration = {std::string(lock.waiter_tag), std::to_string(*registering->waiting_since),
                        std::to_string(registering->entry_ttl.count())};
    }
    return {script_command(id, keys,
                           {value, words.publish,
                            release_channel(lock.prefix, lock.keys.front(), lock.in_cluster),
                            own_tag, std::to_string(lock.named_bound.count())},
                           registration),
            read_script_reply};
}

// ---- A mutex: plain or reentrant keys, fenced or not. ----

request mutex_acquire(const lock_shape& lock, const attempt_args& a)
{
    const std::string ms = std::to_string(a.expiry.count());
    if (a.waiting_since && names_waiters(lock)) {
        return {script_command(script_id::plain_wait_acquire, registry_keys(lock),
                               {a.value, ms, lock.waiter_tag, std::to_string(*a.waiting_since),
                                std::to_string(a.entry_ttl.count())}),
                read_script_reply};
    }
    if (lock.fencing) {
        std::vector<std::string> keys = lock.keys;
        for (const std::string& key : lock.keys) {
            keys.push_back(fence_key(lock.prefix, key, lock.in_cluster));
        }
        // validate() refuses fencing on reentrant locks.
        return {script_command(script_id::fenced_acquire, keys, {a.value, ms}),
                read_fenced_acquire_reply};
    }
    if (!lock.reentrant && lock.keys.size() == 1) {
        command c;
        resp::append_command(c.payload, {"SET", lock.keys[0], a.value, "NX", "PX", ms});
        c.key_at = static_cast<std::uint32_t>(resp::first_argument_at(6, "SET"));
        return {std::move(c), read_acquire_reply};
    }
    return {script_command(lock.reentrant ? script_id::reentrant_acquire : script_id::plain_acquire,
                           lock.keys, {a.value, ms}),
            read_script_reply};
}

request mutex_release(const lock_shape& lock, std::string_view value, bool announce)
{
    if (announce && names_waiters(lock)) {
        return naming_release(lock, script_id::plain_release_naming, registry_keys(lock), value,
                              lock.waiter_tag);
    }
    return {script_command(lock.reentrant ? script_id::reentrant_release : script_id::plain_release,
                           lock.keys, {value}, announcing_if(lock, announce)),
            read_script_reply};
}

request mutex_clean_up(const lock_shape& lock, const clean_up_args& a)
{
    if (names_waiters(lock)) {
        return naming_release(lock, script_id::plain_release_naming, registry_keys(lock), a.value,
                              "", &a);
    }
    return mutex_release(lock, a.value, true);
}

request mutex_extend(const lock_shape& lock, std::string_view value,
                     std::chrono::milliseconds expiry, bool recreate)
{
    return {script_command(
                lock.reentrant ? script_id::reentrant_check_extend : script_id::plain_check_extend,
                lock.keys, {value, std::to_string(expiry.count()), recreate ? "1" : "0"}),
            read_script_reply};
}

request mutex_check(const lock_shape& lock, std::string_view value)
{
    if (!lock.reentrant && lock.keys.size() == 1) {
        command c;
        resp::append_command(c.payload, {"GET", lock.keys[0]});
        c.key_at = static_cast<std::uint32_t>(resp::first_argument_at(2, "GET"));
        return {std::move(c), read_get_reply};
    }
    return {script_command(
                lock.reentrant ? script_id::reentrant_check_extend : script_id::plain_check_extend,
                lock.keys, {value}),
            read_script_reply};
}

// ---- A semaphore: a sorted set of holders, with its limit in a key beside it. ----

// A semaphore's keys on a node: its holders and its limit.
std::vector<std::string> semaphore_keys(const lock_shape& lock)
{
    return {lock.keys.front(), limit_key(lock.prefix, lock.keys.front(), lock.in_cluster)};
}

// A semaphore's keys with its registry of waiting clients.
std::vector<std::string> semaphore_registry_keys(const lock_shape& lock)
{
    return with_registry(lock, semaphore_keys(lock));
}

request semaphore_acquire(const lock_shape& lock, const attempt_args& a)
{
    const std::string permits = std::to_string(lock.permits);
    if (a.waiting_since && names_waiters(lock)) {
        return {
            script_command(script_id::semaphore_acquire, semaphore_registry_keys(lock),
                           {a.value, std::to_string(a.expiry.count()), permits, lock.waiter_tag,
                            std::to_string(*a.waiting_since), std::to_string(a.entry_ttl.count())}),
            read_semaphore_acquire_reply};
    }
    return {script_command(script_id::semaphore_acquire, semaphore_keys(lock),
                           {a.value, std::to_string(a.expiry.count()), permits}),
            read_semaphore_acquire_reply};
}

request semaphore_release(const lock_shape& lock, std::string_view value, bool announce)
{
    if (announce && names_waiters(lock)) {
        return naming_release(lock, script_id::semaphore_release_naming,
                              semaphore_registry_keys(lock), value, lock.waiter_tag);
    }
    return {script_command(script_id::semaphore_release, semaphore_keys(lock), {value},
                           announcing_if(lock, announce)),
            read_script_reply};
}

request semaphore_clean_up(const lock_shape& lock, const clean_up_args& a)
{
    if (names_waiters(lock)) {
        return naming_release(lock, script_id::semaphore_release_naming,
                              semaphore_registry_keys(lock), a.value, "", &a);
    }
    return semaphore_release(lock, a.value, true);
}

// A permit that expired is never recreated: validate() refuses set_nx_on_extend.
request semaphore_extend(const lock_shape& lock, std::string_view value,
                         std::chrono::milliseconds expiry, bool)
{
    return {script_command(script_id::semaphore_check_extend, semaphore_keys(lock),
                           {value, std::to_string(expiry.count())}),
            read_script_reply};
}

request semaphore_check(const lock_shape& lock, std::string_view value)
{
    return {script_command(script_id::semaphore_check_extend, semaphore_keys(lock), {value}),
            read_script_reply};
}

std::string semaphore_key_problem(const lock_shape& lock, const std::string& key)
{
    if (!limit_key(lock.prefix, key, true).empty()) {
        return {};
    }
    return "the semaphore's key '" + key +
           "' holds a '}' outside any hash tag, so its limit cannot share its Redis Cluster "
           "slot: name it without '}', or give it a hash tag";
}

// ---- A read-write lock: a hash of entries, each naming its mode, 'r' a reader, 'w' the
// writer. ----

// A writer with fencing bumps the counter beside the key and answers its token.
request rw_acquire(const lock_shape& lock, const attempt_args& a, std::string_view mode,
                   bool fenced)
{
    std::vector<std::string> keys{lock.keys.front()};
    if (fenced) {
        keys.push_back(fence_key(lock.prefix, lock.keys.front(), lock.in_cluster));
    }
    return {script_command(script_id::rw_acquire, keys,
                           {a.value, std::to_string(a.expiry.count()), mode,
                            std::to_string(a.intent.count())}),
            fenced ? read_fenced_acquire_reply : read_script_reply};
}

// `keep_intent`: the clean-up between the attempts of a writer that waits on.
request rw_release(const lock_shape& lock, std::string_view value, std::string_view mode,
                   bool announce, bool keep_intent)
{
    return {script_command(script_id::rw_release, {lock.keys.front()},
                           {value, mode, keep_intent ? "0" : "1"}, announcing_if(lock, announce)),
            read_script_reply};
}

// An entry that expired is never recreated: make_rw_mutex refuses set_nx_on_extend.
request rw_extend(const lock_shape& lock, std::string_view value, std::string_view mode,
                  std::chrono::milliseconds expiry)
{
    return {script_command(script_id::rw_check_extend, {lock.keys.front()},
                           {value, mode, std::to_string(expiry.count())}),
            read_script_reply};
}

request rw_check(const lock_shape& lock, std::string_view value, std::string_view mode)
{
    return {script_command(script_id::rw_check_extend, {lock.keys.front()}, {value, mode}),
            read_script_reply};
}

// The builders of one mode: a reader's (`is_writer` false) or the writer's. Readers hold
// together, so no fencing token orders them; a writer that waits keeps its intent between
// attempts, so that new readers stay out meanwhile (its clean-up keeps it, its release
// withdraws it when the acquire ends).
template <bool is_writer>
struct rw_mode
{
    static constexpr std::string_view mode = is_writer ? "w" : "r";

    static request acquire(const lock_shape& lock, const attempt_args& a)
    {
        return rw_acquire(lock, a, mode, is_writer && lock.fencing);
    }
    static request clean_up(const lock_shape& lock, const clean_up_args& a)
    {
        return rw_release(lock, a.value, mode, true, is_writer);
    }
    static request release(const lock_shape& lock, std::string_view value, bool announce)
    {
        return rw_release(lock, value, mode, announce, false);
    }
    static request extend(const lock_shape& lock, std::string_view value,
                          std::chrono::milliseconds expiry, bool)
    {
        return rw_extend(lock, value, mode, expiry);
    }
    static request check(const lock_shape& lock, std::string_view value)
    {
        return rw_check(lock, value, mode);
    }
};
using reader = rw_mode<false>;
using writer = rw_mode<true>;

// ---- A fair lock: a plain key and, beside it, a queue of waiters ordered by ticket. ----

// A fair lock's keys on a node: the lock key and its queue's.
std::vector<std::string> fair_keys(const lock_shape& lock)
{
    const std::string& key = lock.keys.front();
    std::vector<std::string> keys{key};
    for (queue_part part :
         {queue_part::order, queue_part::expiries, queue_part::states, queue_part::counter}) {
        keys.push_back(queue_key(lock.prefix, key, part, lock.in_cluster));
    }
    return keys;
}

request fair_join(const lock_shape& lock, std::string_view value,
                  std::chrono::milliseconds entry_ttl, bool commit, std::string_view channel_tag)
{
    return {
        script_command(script_id::fair_join, fair_keys(lock),
                       {value, std::to_string(entry_ttl.count()), commit ? "1" : "0", channel_tag}),
        read_fenced_acquire_reply};
}

// A waiter ahead reads as `taken` (`read_fair_acquire_reply`).
request fair_acquire(const lock_shape& lock, const attempt_args& a)
{
    std::vector<std::string> keys = fair_keys(lock);
    if (lock.fencing) {
        keys.push_back(fence_key(lock.prefix, keys.front(), lock.in_cluster));
    }
    return {script_command(
                script_id::fair_acquire, keys,
                {a.value, std::to_string(a.expiry.count()), std::to_string(a.entry_ttl.count()),
                 a.ticket ? std::to_string(*a.ticket) : std::string(), a.channel_tag},
                announcing(lock)),
            read_fair_acquire_reply};
}

// Deletes the key where it holds `value`, and the entry leaves the queue.
request fair_release(const lock_shape& lock, std::string_view value, bool announce)
{
    return {script_command(script_id::fair_release, fair_keys(lock), {value, "1", "", "", ""},
                           announcing_if(lock, announce)),
            read_script_reply};
}

// Deletes the key where it holds the value and keeps the entry.
request fair_clean_up(const lock_shape& lock, const clean_up_args& a)
{
    return {script_command(script_id::fair_release, fair_keys(lock),
                           {a.value, "0", a.hand_off_stamp ? std::to_string(*a.hand_off_stamp) : "",
                            std::to_string(a.entry_ttl.count()), a.channel_tag}),
            read_script_reply};
}

std::string fair_key_problem(const lock_shape& lock, const std::string& key)
{
    if (!queue_key(lock.prefix, key, queue_part::order, true).empty()) {
        return {};
    }
    return "the fair lock's key '" + key +
           "' holds a '}' outside any hash tag, so its queue cannot share its Redis Cluster "
           "slot: name it without '}', or give it a hash tag";
}

// ---- An election: a fair lock whose leader publishes a value in a hash beside its key. ----

// A fair release whose hash of the leader goes too, announced on the election's channel.
request election_release(const lock_shape& lock, std::string_view value, bool announce)
{
    std::vector<std::string> keys = fair_keys(lock);
    keys.push_back(leader_key(lock.prefix, keys.front(), lock.in_cluster));
    std::vector<std::string> more = announcing_if(lock, announce);
    if (announce) {
        more.push_back(more.back() + std::string(leader_channel_suffix));
    }
    return {script_command(script_id::election_release, keys, {value, "1", "", "", ""}, more),
            read_script_reply};
}

// A mutex's extend of the key that keeps the leader's hash as long.
request election_extend(const lock_shape& lock, std::string_view value,
                        std::chrono::milliseconds expiry, bool recreate)
{
    const std::string& key = lock.keys.front();
    return {script_command(script_id::election_check_extend,
                           {key, leader_key(lock.prefix, key, lock.in_cluster)},
                           {value, std::to_string(expiry.count()), recreate ? "1" : "0"}),
            read_script_reply};
}

}  // namespace

// One set of builders per kind, a row each. A fair lock's key is a plain mutex's key (fair
// locks are neither reentrant nor multi-key), so its extend and check are a mutex's. An
// election's helper keys (its queue's parts and its leader's hash) are named alike: a fair
// lock's check of them is its check.
// clang-format off
//                                   acquire            clean_up            release            extend            check            join       helper_key_problem
const kind_scripts mutex_scripts    {mutex_acquire,     mutex_clean_up,     mutex_release,     mutex_extend,     mutex_check,     nullptr,   nullptr};
const kind_scripts semaphore_scripts{semaphore_acquire, semaphore_clean_up, semaphore_release, semaphore_extend, semaphore_check, nullptr,   semaphore_key_problem};
const kind_scripts reader_scripts   {reader::acquire,   reader::clean_up,   reader::release,   reader::extend,   reader::check,   nullptr,   nullptr};
const kind_scripts writer_scripts   {writer::acquire,   writer::clean_up,   writer::release,   writer::extend,   writer::check,   nullptr,   nullptr};
const kind_scripts fair_scripts     {fair_acquire,      fair_clean_up,      fair_release,      mutex_extend,     mutex_check,     fair_join, fair_key_problem};
const kind_scripts election_scripts {fair_acquire,      fair_clean_up,      election_release,  election_extend,  mutex_check,     fair_join, fair_key_problem};
// clang-format on

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
        if (lock.scripts->helper_key_problem) {
            if (std::string why = lock.scripts->helper_key_problem(lock, key); !why.empty()) {
                return why;
            }
        }
        if (lock.fencing && fence_key(lock.prefix, key, true).empty()) {
            return "the key '" + key +
                   "' holds a '}' outside any hash tag, so no fencing counter can share its Redis "
                   "Cluster slot: name it without '}', or give it a hash tag";
        }
    }
    return {};
}

void add_replica_wait(command& cmd, int replicas, std::chrono::milliseconds timeout)
{
    const std::string n = std::to_string(replicas);
    const std::string ms =
        std::to_string(std::max<std::chrono::milliseconds::rep>(timeout.count(), 1));
    resp::append_command(cmd.payload, {"WAIT", n, ms});
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

request leave_registry_request(lock_shape lock)
{
    return {script_command(script_id::waiter_leave, with_registry(lock, {}), {lock.waiter_tag}),
            read_script_reply};
}

request fence_raise_request(lock_shape lock, std::uint64_t token)
{
    std::vector<std::string> counters;
    for (const std::string& key : lock.keys) {
        counters.push_back(fence_key(lock.prefix, key, lock.in_cluster));
    }
    return {script_command(script_id::fence_raise, counters, {std::to_string(token)}),
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

node_status read_semaphore_acquire_reply(const resp::reply& r, std::string_view value,
                                         node_failure& why)
{
    const auto& e = r.elements;
    if (r.type == resp::kind::array && e.size() == 3 && e[0].type == resp::kind::integer &&
        e[0].integer == -2 && e[1].type == resp::kind::integer &&
        e[2].type == resp::kind::integer) {
        why = node_failure{
            node_errc::permits_mismatch,
            "the semaphore's holders on this node use " + std::to_string(e[1].integer) +
                " permits, this client " + std::to_string(e[2].integer) +
                ": every client of one semaphore must give make_semaphore the same number"};
        return node_status::error;
    }
    return read_script_reply(r, value, why);
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

node_status read_fair_acquire_reply(const resp::reply& r, std::string_view value, node_failure& why)
{
    if (r.type == resp::kind::integer && r.integer == -2) {
        return node_status::taken;
    }
    return read_fenced_acquire_reply(r, value, why);
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
