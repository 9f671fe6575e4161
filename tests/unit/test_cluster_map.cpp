// SPDX-License-Identifier: BSL-1.0
// What a Redis Cluster tells its clients: the slot map and the redirections.

#include "node/cluster/cluster_map.hpp"
#include "protocol/scripts.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace redlock::detail;
using redlock::server_address;

namespace {

resp::reply bulk(std::string text)
{
    return resp::reply{
        .type = resp::kind::bulk_string, .integer = 0, .text = std::move(text), .elements = {}};
}

resp::reply integer(std::int64_t n)
{
    return resp::reply{.type = resp::kind::integer, .integer = n, .text = {}, .elements = {}};
}

resp::reply array(std::vector<resp::reply> elements)
{
    return resp::reply{
        .type = resp::kind::array, .integer = 0, .text = {}, .elements = std::move(elements)};
}

resp::reply range(std::int64_t first, std::int64_t last, std::string host, std::int64_t port)
{
    return array({integer(first), integer(last),
                  array({bulk(std::move(host)), integer(port), bulk("0123abcd")}),
                  array({bulk("127.0.0.9"), integer(7100), bulk("replica-id")})});
}

const server_address asked{"10.1.1.1", 7000};

}  // namespace

BOOST_AUTO_TEST_SUITE(cluster_map)

BOOST_AUTO_TEST_CASE(the_slot_map_names_each_ranges_master)
{
    node_failure why;
    const auto map =
        read_slot_map(array({range(0, 5460, "127.0.0.1", 7000),
                             range(5461, 10922, "127.0.0.2", 7001), range(10923, 16383, "", 7002)}),
                      asked, why);
    BOOST_TEST_REQUIRE(map.has_value());
    BOOST_TEST_REQUIRE(map->size() == 3u);
    BOOST_TEST((*map)[0].first == 0);
    BOOST_TEST((*map)[0].last == 5460);
    BOOST_TEST((*map)[0].master.host == "127.0.0.1");
    BOOST_TEST((*map)[1].master.port == 7001);
    // An empty address stands for the server that answered.
    BOOST_TEST((*map)[2].master.host == "10.1.1.1");
    BOOST_TEST((*map)[2].master.port == 7002);
}

BOOST_AUTO_TEST_CASE(a_slot_map_that_cannot_be_used_says_why)
{
    node_failure why;
    resp::reply error{.type = resp::kind::error,
                      .integer = 0,
                      .text = "ERR This instance has cluster support disabled",
                      .elements = {}};
    BOOST_TEST(!read_slot_map(error, asked, why).has_value());
    // The server's words, with what to check; a standalone server retrying cannot change.
    BOOST_TEST(why.detail.starts_with(error.text), why.detail);
    BOOST_TEST(why.detail.find("list it as redis://") != std::string::npos, why.detail);
    BOOST_TEST((why.code == redlock::node_errc::wrong_mode));
    BOOST_TEST(is_misconfiguration(why.code));
    error.text.clear();  // found by the fuzzer: the reason must not be empty
    BOOST_TEST(!read_slot_map(error, asked, why).has_value());
    BOOST_TEST(!why.detail.empty());
    BOOST_TEST(!read_slot_map(array({}), asked, why).has_value());
    BOOST_TEST(why.detail.find("no slot is assigned") != std::string::npos);
    BOOST_TEST((why.code == redlock::node_errc::cluster_down));
    BOOST_TEST(!read_slot_map(bulk("x"), asked, why).has_value());
    BOOST_TEST((why.code == redlock::node_errc::unexpected_reply));
    BOOST_TEST(!read_slot_map(array({range(10, 5, "h", 1)}), asked, why).has_value());
    BOOST_TEST(why.detail.find("slot range") != std::string::npos);
    BOOST_TEST(!read_slot_map(array({range(0, 16384, "h", 1)}), asked, why).has_value());
    BOOST_TEST(!read_slot_map(array({range(0, 1, "h", 0)}), asked, why).has_value());
    BOOST_TEST(why.detail.find("master address") != std::string::npos);
    BOOST_TEST((why.code == redlock::node_errc::unexpected_reply));
    BOOST_TEST(!read_slot_map(array({array({integer(0), integer(1)})}), asked, why).has_value());
}

BOOST_AUTO_TEST_CASE(moved_and_ask_name_the_slot_and_its_server)
{
    auto moved = read_redirection("MOVED 3999 127.0.0.1:6381", asked);
    BOOST_TEST_REQUIRE(moved.has_value());
    BOOST_TEST(!moved->ask);
    BOOST_TEST(moved->slot == 3999);
    BOOST_TEST(moved->to.host == "127.0.0.1");
    BOOST_TEST(moved->to.port == 6381);
    auto ask = read_redirection("ASK 16383 [::1]:7002", asked);
    BOOST_TEST_REQUIRE(ask.has_value());
    BOOST_TEST(ask->ask);
    BOOST_TEST(ask->slot == 16383);
    BOOST_TEST(ask->to.host == "::1");
    // An empty host is the server that answered.
    auto bare = read_redirection("MOVED 1 :7005", asked);
    BOOST_TEST_REQUIRE(bare.has_value());
    BOOST_TEST(bare->to.host == "10.1.1.1");
    BOOST_TEST(address_name(ask->to) == "[::1]:7002");
}

BOOST_AUTO_TEST_CASE(other_errors_and_malformed_redirections_are_not_followed)
{
    for (const char* text : {"ERR unknown command", "MOVED", "MOVED 16384 h:1", "MOVED x h:1",
                             "ASK 1 h", "ASK 1 h:0", "MOVED 1 h:70000", "TRYAGAIN Multiple keys",
                             "CLUSTERDOWN The cluster is down", "MOVEDX 1 h:1"}) {
        BOOST_TEST_CONTEXT(text)
        {
            BOOST_TEST(!read_redirection(text, asked).has_value());
        }
    }
}

BOOST_AUTO_TEST_CASE(a_lock_whose_keys_are_in_different_slots_is_refused_on_a_cluster)
{
    const std::vector<std::string> apart{"stock", "payment"};
    const std::string why = cluster_key_problem(lock_shape{apart});
    BOOST_TEST(why.find("'stock' (slot") != std::string::npos);
    BOOST_TEST(why.find("'payment' (slot") != std::string::npos);
    BOOST_TEST(why.find("hash tag") != std::string::npos);
    const std::vector<std::string> tagged{"{order:7}:stock", "{order:7}:payment"};
    BOOST_TEST(cluster_key_problem(lock_shape{tagged}).empty());
    const std::vector<std::string> braces{"a}b"};
    BOOST_TEST(cluster_key_problem(lock_shape{braces}).empty());
    BOOST_TEST(cluster_key_problem(lock_shape{braces, false, true}).find("fencing counter") !=
               std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
