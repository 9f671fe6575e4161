// SPDX-License-Identifier: BSL-1.0
// The rows of rules, one per kind of lock.

#include "lock/kind_rules.hpp"

#include "lock/election_rules.hpp"
#include "lock/fair_rules.hpp"
#include "lock/rw_rules.hpp"
#include "lock/semaphore_rules.hpp"

namespace redlock::detail {

namespace {

std::size_t majority(std::size_t nodes, std::size_t)
{
    return quorum_of(nodes);
}

std::size_t permit_quorum(std::size_t nodes, std::size_t permits)
{
    return semaphore_quorum(nodes, permits);
}

bool held_by_other(const tally& t)
{
    return t.taken_by_other();
}

// A semaphore is full for this client once its full nodes leave too few for a quorum.
bool full(const tally& t)
{
    return t.taken > t.nodes - t.quorum();
}

std::string no_refusal(const options&, std::size_t, std::ptrdiff_t)
{
    return {};
}

std::string fair_refusal(const options& opts, std::size_t keys, std::ptrdiff_t)
{
    return fair_problem(opts, keys);
}

std::string election_refusal(const options& opts, std::size_t, std::ptrdiff_t)
{
    return election_problem(opts);
}

std::string semaphore_refusal(const options& opts, std::size_t, std::ptrdiff_t permits)
{
    return semaphore_problem(opts, permits);
}

std::string rw_refusal(const options& opts, std::size_t, std::ptrdiff_t)
{
    return rw_problem(opts);
}

// The table's columns, short.
constexpr wake_rule one_owner = wake_rule::one_owner;
constexpr wake_rule one_permit = wake_rule::one_permit;
constexpr wake_rule together = wake_rule::shared;
constexpr waiting retry = waiting::retry;
constexpr waiting queue = waiting::queue;
constexpr error taken = error::taken;
constexpr error failed = error::failed;

}  // namespace

// One row per kind. The last seven columns: hands_off_in_client, release_wakes_own,
// writer_intent, shared, busy, refusal_writes_nothing, names_next_waiter.
// clang-format off
//                               name         scripts             quorum         taken          refusal            wakes       waits  hands  own    intent shared busy    refusal_writes_nothing  names
const kind_rules mutex_kind     {"mutex",     &mutex_scripts,     majority,      held_by_other, no_refusal,        one_owner,  retry, true,  false, false, false, taken,  true,                   true};
const kind_rules fair_kind      {"fair",      &fair_scripts,      majority,      held_by_other, fair_refusal,      one_owner,  queue, false, false, false, false, taken,  false,                  false};
const kind_rules election_kind  {"election",  &election_scripts,  majority,      held_by_other, election_refusal,  one_owner,  queue, false, false, false, false, failed, false,                  false};
const kind_rules semaphore_kind {"semaphore", &semaphore_scripts, permit_quorum, full,          semaphore_refusal, one_permit, retry, false, true,  false, false, taken,  true,                   true };
const kind_rules read_kind      {"read",      &reader_scripts,    majority,      held_by_other, rw_refusal,        together,   retry, false, false, false, true,  taken,  true,                   false};
const kind_rules write_kind     {"write",     &writer_scripts,    majority,      held_by_other, rw_refusal,        one_owner,  retry, false, true,  true,  false, taken,  true,                   false};
// clang-format on

bool registers_waiters(const kind_rules& rules, const options& opts, std::size_t keys,
                       bool in_cluster)
{
    return rules.names_next_waiter && opts.wake_on_release && !opts.reentrant && !opts.fencing &&
           keys == 1 && !in_cluster;
}

}  // namespace redlock::detail
