// SPDX-License-Identifier: BSL-1.0
// Hash slots as Redis Cluster computes them, and helper keys placed in their lock key's slot.

#include "protocol/key_slot.hpp"
#include "protocol/key_space.hpp"

#include <boost/test/unit_test.hpp>

using namespace redlock::detail;

BOOST_AUTO_TEST_SUITE(key_slots)

BOOST_AUTO_TEST_CASE(slots_are_those_that_cluster_keyslot_answers)
{
    // Values from CLUSTER KEYSLOT on Redis 7.0.
    BOOST_TEST(key_slot("foo") == 12182);
    BOOST_TEST(key_slot("bar") == 5061);
    BOOST_TEST(key_slot("") == 0);
    BOOST_TEST(key_slot("123456789") == (0x31C3 % 16384));  // the CRC-16/XMODEM check value
}

BOOST_AUTO_TEST_CASE(a_hash_tag_alone_decides_the_slot)
{
    BOOST_TEST(hashed_part("{user1000}.following") == "user1000");
    BOOST_TEST(key_slot("{user1000}.following") == key_slot("{user1000}.followers"));
    BOOST_TEST(key_slot("{user1000}.following") == key_slot("user1000"));
    // Only the first '{' and the next '}' count.
    BOOST_TEST(hashed_part("foo{bar}{zap}") == "bar");
    BOOST_TEST(hashed_part("foo{{bar}}zap") == "{bar");
}

BOOST_AUTO_TEST_CASE(an_empty_or_unclosed_tag_is_no_tag)
{
    BOOST_TEST(hashed_part("foo{}{bar}") == "foo{}{bar}");
    BOOST_TEST(hashed_part("{}") == "{}");
    BOOST_TEST(hashed_part("foo{bar") == "foo{bar");
    BOOST_TEST(hashed_part("}foo{") == "}foo{");
}

BOOST_AUTO_TEST_CASE(fence_names_are_unchanged_without_a_cluster)
{
    BOOST_TEST(fence_key("", "orders") == "redlock:fence:orders");
    BOOST_TEST(fence_key("app:", "app:orders") == "app:redlock:fence:orders");
}

BOOST_AUTO_TEST_CASE(on_a_cluster_the_fence_counter_shares_its_lock_keys_slot)
{
    for (const char* prefix : {"", "app:", "{app}:", "a{b}c:"}) {
        for (const char* name : {"orders", "{tenant7}orders", "x{y}z", "a{b"}) {
            const std::string key = std::string(prefix) + name;
            const std::string counter = fence_key(prefix, key, true);
            BOOST_TEST_CONTEXT("key '" << key << "'")
            {
                BOOST_TEST(!counter.empty());
                BOOST_TEST(key_slot(counter) == key_slot(key));
            }
        }
    }
    // A name with its own tag keeps the usual counter name; one without gets braces.
    BOOST_TEST(fence_key("", "{tenant7}orders", true) == "redlock:fence:{tenant7}orders");
    BOOST_TEST(fence_key("", "orders", true) == "redlock:fence:{orders}");
    BOOST_TEST(fence_key("{app}:", "{app}:orders", true) == "{app}:redlock:fence:orders");
}

BOOST_AUTO_TEST_CASE(a_key_that_no_braces_can_tag_has_no_counter_on_a_cluster)
{
    // "{a}b}" would hash "a": no name beside "a}b" shares its slot this way.
    BOOST_TEST(fence_key("", "a}b", true).empty());
    BOOST_TEST(fence_key("", "a}b") == "redlock:fence:a}b");
    BOOST_TEST(fence_key("x}:", "x}:orders", true).empty());
    BOOST_TEST(fence_key("", "{}", true).empty());  // an empty tag is no tag
}

BOOST_AUTO_TEST_SUITE_END()
