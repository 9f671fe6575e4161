// SPDX-License-Identifier: BSL-1.0
// What the Sentinels answer: the master's address, and the +switch-master message.

#include "node/sentinel/sentinel.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace redlock::detail;

namespace {

resp::reply bulk(std::string text)
{
    return resp::reply{
        .type = resp::kind::bulk_string, .integer = 0, .text = std::move(text), .elements = {}};
}

resp::reply array(std::vector<resp::reply> elements)
{
    return resp::reply{
        .type = resp::kind::array, .integer = 0, .text = {}, .elements = std::move(elements)};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sentinel)

BOOST_AUTO_TEST_CASE(the_master_address_is_read_from_the_sentinels_reply)
{
    node_failure why;
    const auto a = read_master_address(array({bulk("10.0.0.7"), bulk("6380")}), why);
    BOOST_TEST_REQUIRE(a.has_value());
    BOOST_TEST(a->host == "10.0.0.7");
    BOOST_TEST(a->port == 6380);
}

BOOST_AUTO_TEST_CASE(an_unknown_master_or_a_malformed_reply_says_why)
{
    node_failure why;
    BOOST_TEST(!read_master_address(resp::reply{}, why).has_value());  // nil
    BOOST_TEST(why.detail == "it knows no master by that name");
    BOOST_TEST((why.code == redlock::node_errc::no_master));
    resp::reply error{
        .type = resp::kind::error, .integer = 0, .text = "NOPERM this user", .elements = {}};
    BOOST_TEST(!read_master_address(error, why).has_value());
    BOOST_TEST(why.detail.find("NOPERM this user") != std::string::npos, why.detail);
    BOOST_TEST((why.code == redlock::node_errc::no_permission));
    for (const resp::reply& r :
         {array({bulk("h")}), array({bulk(""), bulk("1")}), array({bulk("h"), bulk("0")}),
          array({bulk("h"), bulk("70000")}), array({bulk("h"), bulk("12x")})}) {
        why = {};
        BOOST_TEST(!read_master_address(r, why).has_value());
        BOOST_TEST(!why.detail.empty());
        BOOST_TEST((why.code == redlock::node_errc::unexpected_reply));
    }
}

BOOST_AUTO_TEST_CASE(a_switch_of_this_master_names_the_new_one)
{
    const auto a = switched_master("mymaster 127.0.0.1 7001 127.0.0.1 7002", "mymaster");
    BOOST_TEST_REQUIRE(a.has_value());
    BOOST_TEST(a->host == "127.0.0.1");
    BOOST_TEST(a->port == 7002);
}

BOOST_AUTO_TEST_CASE(a_switch_of_another_master_or_a_malformed_message_is_ignored)
{
    BOOST_TEST(!switched_master("other 127.0.0.1 7001 127.0.0.1 7002", "mymaster").has_value());
    BOOST_TEST(!switched_master("mymaster 127.0.0.1 7001 127.0.0.1", "mymaster").has_value());
    BOOST_TEST(
        !switched_master("mymaster 127.0.0.1 7001 127.0.0.1 7002 x", "mymaster").has_value());
    BOOST_TEST(!switched_master("mymaster 127.0.0.1 7001 127.0.0.1 port", "mymaster").has_value());
    BOOST_TEST(!switched_master("", "mymaster").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
