// SPDX-License-Identifier: BSL-1.0
#include "engine/handshake_fsm.hpp"

#include "core/error_reply.hpp"

#include <algorithm>
#include <utility>

namespace redlock::detail {

namespace {

// Well above a TLS handshake's round trips on a LAN (see plain_ping_answered).
constexpr std::chrono::milliseconds probe_after_max{100};

}  // namespace

handshake_fsm::handshake_fsm(const node& endpoint, bool select_db, bool has_tls_context,
                             std::chrono::milliseconds timeout)
    : endpoint_(endpoint),
      name_(endpoint.endpoint()),
      select_db_(select_db),
      has_tls_context_(has_tls_context),
      probe_after_(std::min(probe_after_max, timeout / 4))
{
}

handshake_fsm::action handshake_fsm::complete(node_failure failure)
{
    return action{.what = step::complete, .failure = std::move(failure)};
}

handshake_fsm::action handshake_fsm::connected(node_failure failure) const
{
    if (failure) {
        return complete(std::move(failure));
    }
    if (!endpoint_.tls) {
        return greet_or_complete();
    }
    if (!has_tls_context_) {
        return complete(
            node_failure{node_errc::tls_failed,
                         "TLS requested for " + name_ + " but the client has no TLS context"});
    }
    return action{.what = step::start_tls, .probe_after = probe_after_};
}

handshake_fsm::action handshake_fsm::tls_done(node_failure failure) const
{
    if (failure) {
        failure.detail += " (" + name_ + ")";
        return complete(std::move(failure));
    }
    return greet_or_complete();
}

// AUTH when a password is set; SELECT when asked for and the db is not 0.
handshake_fsm::action handshake_fsm::greet_or_complete() const
{
    action a{.what = step::greet};
    if (!endpoint_.password.empty()) {
        if (endpoint_.username.empty()) {
            resp::append_command(a.payload, {"AUTH", endpoint_.password});
        } else {
            resp::append_command(a.payload, {"AUTH", endpoint_.username, endpoint_.password});
        }
        ++a.replies;
    }
    if (select_db_ && endpoint_.db != 0) {
        resp::append_command(a.payload, {"SELECT", std::to_string(endpoint_.db)});
        ++a.replies;
    }
    return a.replies == 0 ? complete(node_failure{}) : a;
}

handshake_fsm::action handshake_fsm::greeted(node_failure failure,
                                             std::span<const resp::reply> replies) const
{
    if (failure) {
        // A protocol error's detail already names the node and what came.
        if (failure.code != node_errc::protocol_error) {
            failure.detail.insert(0, "handshake with " + name_ + " failed: ");
        }
        return complete(std::move(failure));
    }
    const char* steps[] = {endpoint_.password.empty() ? "SELECT" : "AUTH", "SELECT"};
    for (std::size_t i = 0; i < replies.size() && i < 2; ++i) {
        if (replies[i].is_error()) {
            // The reply text comes from the server and never contains the password; the
            // code (authentication for WRONGPASS and NOAUTH, ...) is what callers decide on.
            return complete(node_failure{
                classify_error_reply(replies[i].text),
                std::string(steps[i]) + " on " + name_ + " failed: " + with_hint(replies[i].text)});
        }
    }
    return complete(node_failure{});
}

node_failure handshake_fsm::plain_ping_answered(const resp::reply& reply)
{
    // A TLS handshake with a server that speaks plain Redis gets no answer at all (the
    // server waits for the end of an inline command that never comes), so it would end only
    // at the connect timeout, like one with a stopped server.
    if (reply.type == resp::kind::simple_string || reply.is_error()) {
        return node_failure{node_errc::tls_mismatch,
                            "TLS handshake unanswered, but the port answered a plain-text PING "
                            "with '" +
                                reply.text + "' (" + std::string(tls_to_plain_hint) + ")"};
    }
    return node_failure{};
}

}  // namespace redlock::detail
