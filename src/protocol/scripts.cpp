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

// A semaphore's keys on a node: its holders and its limit.
std::vector<std::string> semaphore_keys(const lock_shape& lock)
{
    return {lock.keys.front(), limit_key(lock.prefix, lock.keys.front(), lock.in_cluster)};
}

request semaphore_acquire_request(const lock_shape& lock, std::string_view value,
                                  const std::string& ms)
{
    const std::string permits = std::to_string(lock.permits);
    return {
        script_command(script_id::semaphore_acquire, semaphore_keys(lock), {value, ms, permits}),
        read_semaphore_acquire_reply};
}

bool read_write(const lock_shape& lock)
{
    return lock.kind == lock_kind::read || lock.kind == lock_kind::write;
}

// A read-write lock's entry names its mode: 'r' a reader, 'w' the writer.
std::string_view mode_of(const lock_shape& lock)
{
    return lock.kind == lock_kind::read ? "r" : "w";
}

// A writer with fencing bumps the counter beside the key and answers its token.
request rw_acquire_request(const lock_shape& lock, std::string_view value, const std::string& ms,
                           std::chrono::milliseconds intent)
{
    std::vector<std::string> keys{lock.keys.front()};
    const bool fenced = lock.fencing && lock.kind == lock_kind::write;
    if (fenced) {
        keys.push_back(fence_key(lock.prefix, lock.keys.front(), lock.in_cluster));
    }
    return {script_command(script_id::rw_acquire, keys,
                           {value, ms, mode_of(lock), std::to_string(intent.count())}),
            fenced ? read_fenced_acquire_reply : read_script_reply};
}

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

}  // namespace

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
        if (lock.kind == lock_kind::semaphore && limit_key(lock.prefix, key, true).empty()) {
            return "the semaphore's key '" + key +
                   "' holds a '}' outside any hash tag, so its limit cannot share its Redis "
                   "Cluster slot: name it without '}', or give it a hash tag";
        }
        if (lock.kind == lock_kind::fair &&
            queue_key(lock.prefix, key, queue_part::order, true).empty()) {
            return "the fair lock's key '" + key +
                   "' holds a '}' outside any hash tag, so its queue cannot share its Redis "
                   "Cluster slot: name it without '}', or give it a hash tag";
        }
        if (lock.fencing && fence_key(lock.prefix, key, true).empty()) {
            return "the key '" + key +
                   "' holds a '}' outside any hash tag, so no fencing counter can share its Redis "
                   "Cluster slot: name it without '}', or give it a hash tag";
        }
    }
    return {};
}

request acquire_request(lock_shape lock, std::string_view value, std::chrono::milliseconds expiry,
                        std::chrono::milliseconds intent)
{
    const std::string ms = std::to_string(expiry.count());
    if (read_write(lock)) {
        return rw_acquire_request(lock, value, ms, intent);
    }
    if (lock.kind == lock_kind::semaphore) {
        return semaphore_acquire_request(lock, value, ms);
    }
    if (lock.fencing) {
        std::vector<std::string> keys = lock.keys;
        for (const std::string& key : lock.keys) {
            keys.push_back(fence_key(lock.prefix, key, lock.in_cluster));
        }
        // validate() refuses fencing on reentrant locks.
        return {script_command(script_id::fenced_acquire, keys, {value, ms}),
                read_fenced_acquire_reply};
    }
    if (!lock.reentrant && lock.keys.size() == 1) {
        command c;
        resp::append_command(c.payload, {"SET", lock.keys[0], value, "NX", "PX", ms});
        c.key_at = static_cast<std::uint32_t>(resp::first_argument_at(6, "SET"));
        return {std::move(c), read_acquire_reply};
    }
    return {script_command(lock.reentrant ? script_id::reentrant_acquire : script_id::plain_acquire,
                           lock.keys, {value, ms}),
            read_script_reply};
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

request fair_join_request(lock_shape lock, std::string_view value,
                          std::chrono::milliseconds entry_ttl, bool commit,
                          std::string_view channel_tag)
{
    return {
        script_command(script_id::fair_join, fair_keys(lock),
                       {value, std::to_string(entry_ttl.count()), commit ? "1" : "0", channel_tag}),
        read_fenced_acquire_reply};
}

request fair_acquire_request(lock_shape lock, std::string_view value,
                             std::chrono::milliseconds expiry, std::chrono::milliseconds entry_ttl,
                             std::optional<std::uint64_t> ticket, std::string_view channel_tag)
{
    std::vector<std::string> keys = fair_keys(lock);
    if (lock.fencing) {
        keys.push_back(fence_key(lock.prefix, keys.front(), lock.in_cluster));
    }
    return {
        script_command(script_id::fair_acquire, keys,
                       {value, std::to_string(expiry.count()), std::to_string(entry_ttl.count()),
                        ticket ? std::to_string(*ticket) : std::string(), channel_tag},
                       announcing(lock)),
        read_fair_acquire_reply};
}

request fair_release_request(lock_shape lock, std::string_view value, bool leave, bool announce)
{
    return {script_command(script_id::fair_release, fair_keys(lock),
                           {value, leave ? "1" : "0", "", "", ""},
                           announce ? announcing(lock) : std::vector<std::string>{}),
            read_script_reply};
}

request fair_clean_up_request(lock_shape lock, std::string_view value,
                              std::optional<std::uint64_t> hand_off_stamp,
                              std::chrono::milliseconds entry_ttl, std::string_view channel_tag)
{
    return {script_command(script_id::fair_release, fair_keys(lock),
                           {value, "0", hand_off_stamp ? std::to_string(*hand_off_stamp) : "",
                            std::to_string(entry_ttl.count()), channel_tag}),
            read_script_reply};
}

request release_request(lock_shape lock, std::string_view value, bool announce, bool keep_intent)
{
    if (lock.kind == lock_kind::fair) {
        return fair_release_request(lock, value, true, announce);
    }
    std::vector<std::string> channels;
    if (announce) {
        channels = announcing(lock);
    }
    if (lock.kind == lock_kind::semaphore) {
        return {
            script_command(script_id::semaphore_release, semaphore_keys(lock), {value}, channels),
            read_script_reply};
    }
    if (read_write(lock)) {
        return {script_command(script_id::rw_release, {lock.keys.front()},
                               {value, mode_of(lock), keep_intent ? "0" : "1"}, channels),
                read_script_reply};
    }
    return {script_command(lock.reentrant ? script_id::reentrant_release : script_id::plain_release,
                           lock.keys, {value}, channels),
            read_script_reply};
}

request extend_request(lock_shape lock, std::string_view value, std::chrono::milliseconds expiry,
                       bool recreate)
{
    const std::string ms = std::to_string(expiry.count());
    if (lock.kind == lock_kind::semaphore) {
        // A permit that expired is never recreated: validate() refuses set_nx_on_extend.
        return {
            script_command(script_id::semaphore_check_extend, semaphore_keys(lock), {value, ms}),
            read_script_reply};
    }
    if (read_write(lock)) {
        // An entry that expired is never recreated: make_rw_mutex refuses set_nx_on_extend.
        return {script_command(script_id::rw_check_extend, {lock.keys.front()},
                               {value, mode_of(lock), ms}),
                read_script_reply};
    }
    return {script_command(
                lock.reentrant ? script_id::reentrant_check_extend : script_id::plain_check_extend,
                lock.keys, {value, ms, recreate ? "1" : "0"}),
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

request check_request(lock_shape lock, std::string_view value)
{
    if (lock.kind == lock_kind::semaphore) {
        return {script_command(script_id::semaphore_check_extend, semaphore_keys(lock), {value}),
                read_script_reply};
    }
    if (read_write(lock)) {
        return {
            script_command(script_id::rw_check_extend, {lock.keys.front()}, {value, mode_of(lock)}),
            read_script_reply};
    }
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
