// SPDX-License-Identifier: BSL-1.0
// An election's rules without a server: the options it takes, who leads according to the
// nodes' answers, and how a node's answer reads.
#include "lock/election_rules.hpp"
#include "lock/kind_rules.hpp"
#include "protocol/election_requests.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

using namespace redlock::detail;
using namespace std::chrono_literals;
namespace resp = redlock::detail::resp;

namespace {

std::optional<leader_entry> naming(std::string owner, std::uint64_t term, std::uint64_t version,
                                   std::string value, std::chrono::milliseconds left)
{
    return leader_entry{.left = left,
                        .owner = std::move(owner),
                        .term = term,
                        .version = version,
                        .value = std::move(value)};
}

std::optional<leader_entry> nobody(std::chrono::milliseconds left = 0ms)
{
    return leader_entry{.left = left};
}

resp::reply integer(long long n)
{
    resp::reply r;
    r.type = resp::kind::integer;
    r.integer = n;
    return r;
}

resp::reply bulk(std::string text)
{
    resp::reply r;
    r.type = resp::kind::bulk_string;
    r.text = std::move(text);
    return r;
}

resp::reply array(std::vector<resp::reply> elements)
{
    resp::reply r;
    r.type = resp::kind::array;
    r.elements = std::move(elements);
    return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(election_rules)

BOOST_AUTO_TEST_CASE(an_election_is_fair_fenced_and_watched_and_campaigns_until_it_leads)
{
    const redlock::options o = election_options({.tries = 3});
    BOOST_TEST(o.fair);
    BOOST_TEST(o.fencing);
    BOOST_TEST(o.auto_extend);
    BOOST_TEST(o.tries > 1'000'000);
    BOOST_TEST(election_kind.name == "election");
    BOOST_TEST((election_kind.waits == waiting::queue));
    BOOST_TEST(!election_kind.shared);
}

BOOST_AUTO_TEST_CASE(a_fixed_value_reentrant_holds_and_an_extension_limit_are_refused)
{
    BOOST_TEST(election_problem({}).empty());
    BOOST_TEST(election_problem({.value = "me"}).find("options.value") != std::string::npos);
    BOOST_TEST(election_problem({.reentrant = true}).find("options.reentrant") !=
               std::string::npos);
    BOOST_TEST(election_problem({.auto_extend_limit = 3}).find("options.auto_extend_limit") !=
               std::string::npos);
    // The row refuses what the rules refuse.
    BOOST_TEST(!election_kind.refusal({.value = "me"}, 1, 1).empty());
}

BOOST_AUTO_TEST_CASE(a_leader_named_by_a_quorum_leads_with_its_latest_publication)
{
    // Node 2 missed the last publication: the others' later version wins.
    const leader_view v = view_of({naming("a", 7, 2, "new", 900ms), naming("a", 7, 2, "new", 800ms),
                                   naming("a", 7, 1, "old", 700ms), std::nullopt, nobody()},
                                  3);
    BOOST_TEST(v.answered);
    BOOST_TEST_REQUIRE(v.who.has_value());
    BOOST_TEST(v.who->value == "new");
    BOOST_TEST(v.who->term == 7u);
    // Named by a quorum until the third longest life among them runs out.
    BOOST_TEST(v.lapses_in.value().count() == 700);
}

BOOST_AUTO_TEST_CASE(nobody_leads_without_a_quorum_naming_one_owner_at_one_term)
{
    // Two owners, two nodes each: neither is named by a quorum of three.
    const leader_view split =
        view_of({naming("a", 7, 1, "x", 1s), naming("a", 7, 1, "x", 1s), naming("b", 8, 1, "y", 1s),
                 naming("b", 8, 1, "y", 1s), nobody()},
                3);
    BOOST_TEST(split.answered);
    BOOST_TEST(!split.who.has_value());
    BOOST_TEST(!split.lapses_in.has_value());
    // The same owner at two terms is two leaderships.
    const leader_view terms =
        view_of({naming("a", 7, 1, "x", 1s), naming("a", 8, 1, "x", 1s), nobody()}, 2);
    BOOST_TEST(!terms.who.has_value());
}

BOOST_AUTO_TEST_CASE(fewer_answers_than_a_quorum_say_nothing)
{
    const leader_view v = view_of({naming("a", 7, 1, "x", 1s), std::nullopt, std::nullopt}, 2);
    BOOST_TEST(!v.answered);
    BOOST_TEST(!v.who.has_value());
}

BOOST_AUTO_TEST_CASE(a_node_answer_reads_as_nobody_or_as_a_leader)
{
    const auto none = leader_on(array({integer(-2)}));
    BOOST_TEST_REQUIRE(none.has_value());
    BOOST_TEST(none->owner.empty());
    BOOST_TEST(!none->left.has_value());

    const auto some = leader_on(array(
        {integer(1500), bulk("owner"), bulk("12"), bulk("99"), bulk(std::string("v\0x", 3))}));
    BOOST_TEST_REQUIRE(some.has_value());
    BOOST_TEST(some->owner == "owner");
    BOOST_TEST(some->term == 12u);
    BOOST_TEST(some->version == 99u);
    BOOST_TEST(some->value == std::string("v\0x", 3));
    BOOST_TEST(some->left.value().count() == 1500);

    // A term that is not a number, an array too short, an integer: no answer of the read.
    BOOST_TEST(!leader_on(array({integer(1), bulk("o"), bulk("x1"), bulk("1"), bulk("v")})));
    BOOST_TEST(!leader_on(array({integer(1), bulk("o")})));
    BOOST_TEST(!leader_on(integer(1)));
    redlock::detail::node_failure why;
    BOOST_TEST((read_leader_reply(integer(1), "", why) == redlock::node_status::error));
    BOOST_TEST((why.code == redlock::node_errc::unexpected_reply));
}

BOOST_AUTO_TEST_CASE(announcements_are_told_apart_from_releases)
{
    BOOST_TEST(is_leader_announcement("l:"));
    BOOST_TEST(is_leader_announcement("l:42"));
    BOOST_TEST(!is_leader_announcement("n:abc"));
    BOOST_TEST(!is_leader_announcement("h:3:abc"));
    BOOST_TEST(!is_leader_announcement("q2hVdGVzdA=="));  // an owner value: base64
}

BOOST_AUTO_TEST_SUITE_END()
