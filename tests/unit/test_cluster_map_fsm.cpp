// SPDX-License-Identifier: BSL-1.0
// The decisions of a cluster node's map: where a request goes, when CLUSTER SLOTS is asked and
// of which server, what its answer means, and what MOVED and ASK mean for the map.
#include "node/cluster/cluster_map_fsm.hpp"
#include "reply_builders.hpp"

#include <boost/test/unit_test.hpp>

using namespace redlock::detail;
using namespace redlock::test;
using namespace std::chrono_literals;
using redlock::node_errc;
using redlock::server_address;
using route_step = cluster_map_fsm::route::step;
using learn_step = cluster_map_fsm::learning::step;

namespace {

const auto t0 = clock::time_point{} + 1h;
const server_address seed_a{.host = "10.0.0.1", .port = 7000};
const server_address seed_b{.host = "10.0.0.2", .port = 7000};

cluster_map_fsm make_map()
{
    return cluster_map_fsm({seed_a, seed_b}, "redis-cluster://10.0.0.1:7000", 50ms, 300ms);
}

resp::reply range(int first, int last, std::string host, int port)
{
    return array(
        {integer(first), integer(last), array({bulk(std::move(host)), integer(port), bulk("id")})});
}

// Slots 0-8191 on 10.0.0.3:7000, 8192-16383 on 10.0.0.4:7000.
resp::reply two_masters()
{
    return array({range(0, 8191, "10.0.0.3", 7000), range(8192, 16383, "10.0.0.4", 7000)});
}

// Learns `two_masters` from the first seed at `now`.
void learn(cluster_map_fsm& map, clock::time_point now)
{
    BOOST_TEST(map.learn_soon());
    const auto a = map.next_round(now);
    BOOST_TEST((a.what == learn_step::ask));
    BOOST_TEST((map.answered({}, two_masters(), now).what == learn_step::learned));
    BOOST_TEST((map.round_done(now).what == learn_step::stop));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cluster_map_decisions)

BOOST_AUTO_TEST_CASE(requests_wait_for_the_first_map_which_the_seeds_tell)
{
    auto map = make_map();
    BOOST_TEST((map.route_for(std::uint16_t{5}, t0, false).what == route_step::wait));
    BOOST_TEST(map.learn_soon());
    auto a = map.next_round(t0);
    BOOST_TEST((a.what == learn_step::ask));
    BOOST_TEST(!map.learn_soon());  // runs already: another round follows this one
    BOOST_TEST(map.where(a.source).host == "10.0.0.1");
    a = map.answered({}, two_masters(), t0);
    BOOST_TEST((a.what == learn_step::learned));

    const auto low = map.route_for(std::uint16_t{5}, t0, true);
    BOOST_TEST((low.what == route_step::send));
    BOOST_TEST(map.where(low.server).host == "10.0.0.3");
    const auto high = map.route_for(std::uint16_t{9000}, t0, false);
    BOOST_TEST(map.where(high.server).host == "10.0.0.4");
    BOOST_TEST(*map.master_of(9000) == high.server);
    // A command without keys: any master.
    BOOST_TEST((map.route_for(std::nullopt, t0, false).what == route_step::send));

    // The round asked for meanwhile waits out the interval since the map was learned.
    a = map.round_done(t0 + 10ms);
    BOOST_TEST((a.what == learn_step::pause));
    BOOST_TEST((a.until == t0 + cluster_map_fsm::map_interval));
    a = map.paused(a.until);
    BOOST_TEST((a.what == learn_step::ask));
    BOOST_TEST(map.where(a.source).host == "10.0.0.3");  // the masters known first
}

BOOST_AUTO_TEST_CASE(the_masters_known_are_asked_before_the_seeds)
{
    auto map = make_map();
    learn(map, t0);
    BOOST_TEST(map.learn_soon());
    auto a = map.next_round(t0 + 1s);
    std::vector<std::string> asked;
    while (a.what == learn_step::ask) {
        asked.push_back(address_name(map.where(a.source)));
        a = map.answered(node_failure{node_errc::connect_failed, "refused"}, {}, t0 + 1s);
    }
    const std::vector<std::string> order{"10.0.0.3:7000", "10.0.0.4:7000", "10.0.0.1:7000",
                                         "10.0.0.2:7000"};
    BOOST_TEST(asked == order, boost::test_tools::per_element());
    BOOST_TEST((a.what == learn_step::failed));
    BOOST_TEST((a.failure.code == node_errc::connect_failed));  // all alike
    // A map known before stays in use.
    BOOST_TEST((map.route_for(std::uint16_t{5}, t0 + 1s, false).what == route_step::send));
}

BOOST_AUTO_TEST_CASE(without_a_map_requests_are_refused_during_a_doubling_back_off)
{
    auto map = make_map();
    auto now = t0;
    const std::chrono::milliseconds expected[] = {50ms, 100ms, 200ms, 300ms, 300ms};
    for (auto pause : expected) {
        BOOST_TEST(map.learn_soon());
        auto a = map.next_round(now);
        a = map.answered(node_failure{node_errc::connect_failed, "refused"}, {}, now);
        a = map.answered({}, error("ERR This instance has cluster support disabled"), now);
        BOOST_TEST((a.what == learn_step::failed));
        BOOST_TEST((a.failure.code == node_errc::cluster_down));  // the causes differ
        BOOST_TEST(a.failure.detail.find("CLUSTER SLOTS on 10.0.0.2:7000: ERR This instance") !=
                   std::string::npos);
        BOOST_TEST((map.round_done(now).what == learn_step::stop));
        const auto refused = map.route_for(std::uint16_t{5}, now + pause - 1ms, false);
        BOOST_TEST((refused.what == route_step::refuse));
        BOOST_TEST((refused.failure.code == node_errc::cluster_down));
        now += pause;
        BOOST_TEST((map.route_for(std::uint16_t{5}, now, false).what == route_step::wait));
    }
    BOOST_TEST(map.learn_soon());
    map.next_round(now);
    map.answered({}, two_masters(), now);
    map.round_done(now);
    // With a map known, a round that fails leaves it in use.
    BOOST_TEST(map.learn_soon());
    map.next_round(now + 1s);
    map.answered({}, resp::reply{}, now + 1s);
    map.answered({}, resp::reply{}, now + 1s);
    map.answered({}, resp::reply{}, now + 1s);
    BOOST_TEST((map.answered({}, resp::reply{}, now + 1s).what == learn_step::failed));
    BOOST_TEST((map.route_for(std::uint16_t{5}, now + 1s, false).what == route_step::send));
}

BOOST_AUTO_TEST_CASE(a_slot_the_map_leaves_out_fails_a_request_that_waited_for_it)
{
    auto map = make_map();
    BOOST_TEST(map.learn_soon());
    map.next_round(t0);
    BOOST_TEST((map.answered({}, array({range(0, 99, "10.0.0.3", 7000)}), t0).what ==
                learn_step::learned));
    BOOST_TEST((map.route_for(std::uint16_t{50}, t0, true).what == route_step::send));
    BOOST_TEST((map.route_for(std::uint16_t{500}, t0, false).what == route_step::wait));
    const auto r = map.route_for(std::uint16_t{500}, t0, true);
    BOOST_TEST((r.what == route_step::refuse));
    BOOST_TEST((r.failure.code == node_errc::cluster_down));
    BOOST_TEST(r.failure.detail.starts_with("slot 500 of redis-cluster://10.0.0.1:7000"));
}

BOOST_AUTO_TEST_CASE(moved_updates_the_slot_and_asks_for_a_new_map)
{
    auto map = make_map();
    learn(map, t0);
    const std::size_t via = *map.master_of(5);
    const auto v = map.outcome(false, error("MOVED 5 10.0.0.5:7001"), 0, via);
    BOOST_TEST(v.follow);
    BOOST_TEST(!v.ask);
    BOOST_TEST(v.learn);
    BOOST_TEST(address_name(map.where(v.to)) == "10.0.0.5:7001");
    BOOST_TEST(*map.master_of(5) == v.to);
    BOOST_TEST(*map.master_of(6) == via);  // only that slot, until the new map
    // An empty host is the answering master's.
    const auto same_host = map.outcome(false, error("MOVED 6 :7002"), 0, via);
    BOOST_TEST(address_name(map.where(same_host.to)) == "10.0.0.3:7002");
}

BOOST_AUTO_TEST_CASE(ask_sends_this_request_only_and_leaves_the_map)
{
    auto map = make_map();
    learn(map, t0);
    const std::size_t via = *map.master_of(5);
    const auto v = map.outcome(false, error("ASK 5 10.0.0.5:7001"), 1, via);
    BOOST_TEST(v.follow);
    BOOST_TEST(v.ask);
    BOOST_TEST(!v.learn);
    BOOST_TEST(address_name(map.where(v.to)) == "10.0.0.5:7001");
    BOOST_TEST(*map.master_of(5) == via);
}

BOOST_AUTO_TEST_CASE(too_many_redirections_mean_the_cluster_cannot_serve_the_slot)
{
    auto map = make_map();
    learn(map, t0);
    const auto v =
        map.outcome(false, error("MOVED 5 10.0.0.5:7001"), cluster_map_fsm::max_redirections, 0);
    BOOST_TEST(!v.follow);
    BOOST_TEST((v.failure.code == node_errc::cluster_down));
    BOOST_TEST(v.failure.detail.find("slot 5, the last to 10.0.0.5:7001") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(failures_and_clusterdown_ask_for_a_new_map_other_replies_pass)
{
    auto map = make_map();
    learn(map, t0);
    auto v = map.outcome(true, resp::reply{}, 0, 0);
    BOOST_TEST((v.learn && !v.follow && !v.failure));
    v = map.outcome(false, error("CLUSTERDOWN The cluster is down"), 0, 0);
    BOOST_TEST((v.learn && !v.follow && !v.failure));
    v = map.outcome(false, error("NOSCRIPT No matching script"), 0, 0);
    BOOST_TEST((!v.learn && !v.follow && !v.failure));
    v = map.outcome(false, integer(1), 0, 0);
    BOOST_TEST((!v.learn && !v.follow && !v.failure));
}

BOOST_AUTO_TEST_CASE(once_closed_requests_are_refused_and_learning_stops)
{
    auto map = make_map();
    learn(map, t0);
    BOOST_TEST(map.learn_soon());
    auto a = map.next_round(t0 + 1s);
    map.close(node_failure{node_errc::closed, "client shut down"});
    a = map.answered(node_failure{node_errc::closed, "closed"}, {}, t0 + 1s);
    BOOST_TEST((a.what == learn_step::stop));  // the other sources are not asked
    BOOST_TEST(!map.learn_soon());
    const auto r = map.route_for(std::uint16_t{5}, t0 + 1s, false);
    BOOST_TEST((r.what == route_step::refuse));
    BOOST_TEST((r.failure.code == node_errc::closed));
    // Closed during the pause: no source is asked.
    auto paused = make_map();
    learn(paused, t0);
    BOOST_TEST(paused.learn_soon());
    a = paused.next_round(t0 + 1ms);
    BOOST_TEST((a.what == learn_step::pause));
    paused.close(node_failure{node_errc::closed, "client shut down"});
    BOOST_TEST((paused.paused(a.until).what == learn_step::stop));
}

BOOST_AUTO_TEST_SUITE_END()
