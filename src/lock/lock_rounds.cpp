// SPDX-License-Identifier: BSL-1.0
// The rounds that a lock's operations run on the nodes.

#include "lock/lock_rounds.hpp"

#include "lock/client_impl.hpp"
#include "lock/watchdog.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <string>
#include <utility>

namespace redlock::detail {

namespace asio = boost::asio;
using asio::use_awaitable;

report make_report(std::vector<node_outcome> outcomes, int attempts)
{
    report r;
    r.nodes = std::move(outcomes);
    r.attempts = attempts;
    return r;
}

round release_round(const mutex_state& m, std::string_view value, bool announce, stop_rule rule)
{
    return background_round(m, value, release_request(m.shape(), value, announce), rule);
}

round background_round(const mutex_state& m, std::string_view value, request req, stop_rule rule)
{
    const options& o = m.opts;
    return round{.cmd = std::move(req.cmd),
                 .read = req.read,
                 .value = value,
                 .deadline = clock::now() + node_timeout(o.expiry, o.timeout_factor),
                 .rule = rule,
                 .quorum = m.quorum,
                 .background = m.client->background};
}

round handing_off(const lock_state& l)
{
    const mutex_state& m = *l.mutex;
    bool announce = true;
    // A semaphore's release frees one permit of several, and a writer's lets every reader in:
    // either goes out with its message, for other clients' waiters. This client's own are
    // woken now, as the nodes' messages would wake them (which are then answered), so that a
    // new acquire of the client cannot get ahead of them (`waiter_queue::taking_a_release`).
    // A reader's release lets nobody in while other readers hold: the nodes tell.
    if (m.rules->release_wakes_own) {
        for (const std::string& key : m.keys) {
            m.client->waiters->released(key, l.value);
        }
    }
    if (!m.opts.reentrant && m.rules->hands_off_in_client) {
        // For a single key the waiter's attempt and the release go out in one write per node.
        const auto* hold = m.keys.size() == 1 ? &m.client->connections : nullptr;
        for (const std::string& key : m.keys) {
            if (m.client->waiters->hand_off(key, l.value, hold, clock::now(),
                                            longest_run(m.opts.expiry)) &&
                hold) {
                announce = false;
            }
        }
    }
    // Released once a quorum confirms it, or once that can no longer happen.
    return release_round(m, l.value, announce, stop_rule::outcome_known);
}

round extend_round(const lock_state& l, clock::time_point start)
{
    const options& o = l.mutex->opts;
    request req = extend_request(l.mutex->shape(), l.value, o.expiry, o.set_nx_on_extend);
    return round{.cmd = std::move(req.cmd),
                 .read = req.read,
                 .value = l.value,
                 .deadline = start + node_timeout(o.expiry, o.timeout_factor),
                 .rule = stop_rule::quorum_reached,
                 .quorum = l.mutex->quorum,
                 .shuffle = o.shuffle_nodes};
}

tally keep_report(lock_state& l, std::vector<node_outcome> outcomes)
{
    const tally t = count(outcomes, l.mutex->quorum);
    l.set_report(make_report(std::move(outcomes), 1));
    return t;
}

void release_in_background(const std::shared_ptr<lock_state>& l)
{
    if (!l || !l->owns.exchange(false)) {
        return;
    }
    auto background = l->mutex->client->background;
    background->begin();
    asio::co_spawn(
        l->mutex->client->strand,
        [](std::shared_ptr<lock_state> l) -> asio::awaitable<void> {
            note_released(*l);
            keep_report(*l, co_await run_round(l->mutex->client->connections, handing_off(*l)));
        }(l),
        [background](const std::exception_ptr&) { background->end(); });
}

}  // namespace redlock::detail
