// SPDX-License-Identifier: BSL-1.0
// The decisions of one connect attempt: ping a stuck server's fresh socket before using it,
// drop a socket the link no longer wants, and what an attached socket's failure means.
#include "node/probe_fsm.hpp"

#include <boost/test/unit_test.hpp>

using namespace redlock::detail;
using namespace std::chrono_literals;
using redlock::node_errc;
using step = probe_fsm::step;

namespace {

const auto t0 = clock::time_point{} + 1h;

// A link whose first connect attempt is under way.
connection_fsm connecting()
{
    connection_fsm link(50ms, 2000ms);
    link.admit(t0);
    return link;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(probe_decisions)

BOOST_AUTO_TEST_CASE(a_fresh_socket_is_attached_at_once)
{
    const auto link = connecting();
    const probe_fsm attempt(link.generation());
    BOOST_TEST((attempt.start().what == step::open));
    BOOST_TEST((attempt.opened({}, link).what == step::attach));
}

BOOST_AUTO_TEST_CASE(a_failed_opening_fails_the_attempt_with_its_failure)
{
    const auto link = connecting();
    const probe_fsm attempt(link.generation());
    const auto a = attempt.opened(node_failure{node_errc::authentication, "AUTH failed"}, link);
    BOOST_TEST((a.what == step::fail));
    BOOST_TEST((a.failure.code == node_errc::authentication));
}

BOOST_AUTO_TEST_CASE(a_stuck_server_must_answer_a_ping_on_the_fresh_socket_first)
{
    auto link = connecting();
    link.connected();
    link.stuck(t0);
    BOOST_TEST((link.admit(t0 + 50ms) == connection_fsm::admission::probe));
    const probe_fsm attempt(link.generation());
    BOOST_TEST((attempt.opened({}, link).what == step::ping));
    BOOST_TEST((attempt.pinged({}, link).what == step::attach));
    const auto a =
        attempt.pinged(node_failure{node_errc::connect_timed_out, "PING timed out"}, link);
    BOOST_TEST((a.what == step::fail));
    BOOST_TEST((a.failure.code == node_errc::connect_timed_out));
}

BOOST_AUTO_TEST_CASE(an_attempt_the_link_moved_on_from_drops_its_socket)
{
    auto link = connecting();
    const probe_fsm old(link.generation());
    link.failed(t0);  // superseded: the link gave the attempt up
    BOOST_TEST((old.opened({}, link).what == step::drop));
    BOOST_TEST(
        (old.opened(node_failure{node_errc::connect_failed, "refused"}, link).what == step::drop));

    auto closing = connecting();
    const probe_fsm attempt(closing.generation());
    BOOST_TEST((attempt.opened({}, closing).what == step::attach));
    closing.close();  // while the PING is on its way
    BOOST_TEST((attempt.pinged({}, closing).what == step::drop));
}

BOOST_AUTO_TEST_CASE(a_reset_before_any_reply_on_a_plain_port_is_a_tls_mismatch)
{
    socket_failure reset{socket_failure::stage::reading, boost::asio::error::connection_reset};
    BOOST_TEST((probe_fsm::failure_code(reset, false, false) == node_errc::tls_mismatch));
    // After replies, or on a TLS connection: a dropped connection.
    BOOST_TEST((probe_fsm::failure_code(reset, true, false) == node_errc::connection_lost));
    BOOST_TEST((probe_fsm::failure_code(reset, false, true) == node_errc::connection_lost));
    socket_failure eof{socket_failure::stage::reading, boost::asio::error::eof};
    BOOST_TEST((probe_fsm::failure_code(eof, false, false) == node_errc::connection_lost));
    socket_failure garbage{socket_failure::stage::matching, {}, "bad type byte"};
    BOOST_TEST((probe_fsm::failure_code(garbage, false, false) == node_errc::protocol_error));
}

BOOST_AUTO_TEST_SUITE_END()
