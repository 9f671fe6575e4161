// SPDX-License-Identifier: BSL-1.0
// The stale-token rule of fenced resources, without a server.

#include <redlock/fence.hpp>

#include <boost/test/unit_test.hpp>

namespace {

BOOST_AUTO_TEST_SUITE(fence_rule)

BOOST_AUTO_TEST_CASE(newer_tokens_pass_and_older_ones_are_refused)
{
    redlock::fence f;
    BOOST_TEST(f.newest() == 0u);
    BOOST_TEST(f.admit(5, "a"));
    BOOST_TEST(f.admit(5, "a"));  // one holder, many requests
    BOOST_TEST(f.admit(9, "b"));
    BOOST_TEST(!f.admit(5, "a"));  // the former owner, after a pause
    BOOST_TEST(!f.admit(8, "c"));
    BOOST_TEST(f.newest() == 9u);
    BOOST_TEST(f.newest_owner() == "b");
}

BOOST_AUTO_TEST_CASE(the_same_token_from_another_owner_is_refused)
{
    redlock::fence f;
    BOOST_TEST(f.admit(3, "a"));
    BOOST_TEST(!f.admit(3, "b"));
    BOOST_TEST(f.newest_owner() == "a");
    BOOST_TEST(f.admit(4, "b"));
}

BOOST_AUTO_TEST_CASE(token_zero_means_no_fencing_and_never_passes)
{
    redlock::fence f;
    BOOST_TEST(!f.admit(0, ""));
    BOOST_TEST(!f.admit(0, "a"));
    BOOST_TEST(!redlock::fence_admits(0, "", 0, ""));
    BOOST_TEST(f.newest() == 0u);
}

BOOST_AUTO_TEST_CASE(the_rule_as_a_constant_expression)
{
    static_assert(redlock::fence_admits(2, "x", 1, "y"));
    static_assert(redlock::fence_admits(2, "x", 2, "x"));
    static_assert(!redlock::fence_admits(2, "x", 2, "y"));
    static_assert(!redlock::fence_admits(1, "x", 2, "x"));
    BOOST_TEST(redlock::fence_admits(UINT64_MAX, "x", UINT64_MAX - 1, "x"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
