// SPDX-License-Identifier: BSL-1.0
#include "node/sentinel/sentinel_resolve_fsm.hpp"

#include "core/error_reply.hpp"
#include "node/sentinel/sentinel.hpp"

#include <utility>

namespace redlock::detail {

namespace {

// ROLE's first word: "master", "slave" ..., or what came instead.
std::string role_of(const resp::reply& r)
{
    if (!r.elements.empty()) {
        return r.elements[0].text;
    }
    return r.is_error() ? r.text : std::string("?");
}

node_failure none()
{
    return node_failure{};
}

}  // namespace

sentinel_resolve_fsm::sentinel_resolve_fsm(const node& n, std::chrono::milliseconds timeout)
    : node_(n), timeout_(timeout), share_(timeout / static_cast<int>(n.sentinels.size() + 1))
{
}

sentinel_resolve_fsm::action sentinel_resolve_fsm::ask(std::size_t sentinel) const
{
    action a{.what = step::ask_sentinel,
             .server = sentinel_server(node_, node_.sentinels[sentinel])};
    resp::append_command(a.payload, {"SENTINEL", "get-master-addr-by-name", node_.master_name});
    a.timeout = share_;
    return a;
}

sentinel_resolve_fsm::action sentinel_resolve_fsm::start()
{
    asked_ = 0;
    if (node_.sentinels.empty()) {
        return sentinel_answered(node_failure{}, resp::reply{});  // none to ask: none named it
    }
    return ask(0);
}

sentinel_resolve_fsm::action sentinel_resolve_fsm::sentinel_answered(node_failure failure,
                                                                     const resp::reply& reply)
{
    if (asked_ < node_.sentinels.size()) {
        if (!failure) {
            if (auto master = read_master_address(reply, failure)) {
                const node server = node_at(node_, *master);
                reached_ = server.endpoint();
                return action{.what = step::connect_master, .server = server, .timeout = timeout_};
            }
            failure.detail.insert(
                0, "Sentinel " + sentinel_server(node_, node_.sentinels[asked_]).endpoint() + ": ");
        }
        failures_.add(failure);
        if (++asked_ < node_.sentinels.size()) {
            return ask(asked_);
        }
    }
    return action{.failure = failures_.joined("no Sentinel of " + node_.endpoint() +
                                                  " named the master '" + node_.master_name + "'",
                                              node_errc::no_master)};
}

sentinel_resolve_fsm::action sentinel_resolve_fsm::master_connected(node_failure failure)
{
    if (failure) {
        failure.detail.insert(0, "the master the Sentinels name: ");
        return action{.failure = std::move(failure)};
    }
    action a{.what = step::ask_role};
    resp::append_command(a.payload, {"ROLE"});
    return a;
}

sentinel_resolve_fsm::action sentinel_resolve_fsm::role_answered(node_failure failure,
                                                                 const resp::reply& r) const
{
    if (failure) {
        failure.detail.insert(0, "ROLE on " + reached_ + " failed: ");
        return action{.failure = std::move(failure)};
    }
    if (r.is_error() && classify_error_reply(r.text) == node_errc::no_permission) {
        return action{.failure = none()};  // the user may not ask; the Sentinels' word stands
    }
    if (r.type != resp::kind::array || r.elements.empty() || r.elements[0].text != "master") {
        return action{.failure =
                          node_failure{node_errc::master_switched,
                                       "the Sentinels name " + reached_ + " as the master '" +
                                           node_.master_name + "', but its ROLE is '" + role_of(r) +
                                           "' (a failover in progress?)"}};
    }
    return action{.failure = none()};
}

}  // namespace redlock::detail
