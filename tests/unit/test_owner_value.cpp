#include "detail/owner_value.hpp"

#include <boost/test/unit_test.hpp>

#include <set>
#include <string>
#include <vector>

using redlock::detail::base64_encode;
using redlock::detail::random_owner_value;

namespace {

std::string b64(std::string_view text)
{
    std::vector<unsigned char> bytes(text.begin(), text.end());
    return base64_encode(bytes);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(owner_values)

BOOST_AUTO_TEST_CASE(base64_rfc4648_vectors)
{
    BOOST_TEST(b64("") == "");
    BOOST_TEST(b64("f") == "Zg==");
    BOOST_TEST(b64("fo") == "Zm8=");
    BOOST_TEST(b64("foo") == "Zm9v");
    BOOST_TEST(b64("foob") == "Zm9vYg==");
    BOOST_TEST(b64("fooba") == "Zm9vYmE=");
    BOOST_TEST(b64("foobar") == "Zm9vYmFy");
}

BOOST_AUTO_TEST_CASE(base64_of_high_bytes_uses_plus_and_slash)
{
    const unsigned char ones[] = {0xff, 0xff, 0xff};
    BOOST_TEST(base64_encode(ones) == "////");
    const unsigned char mixed[] = {0xfb, 0xef, 0xbe, 0x00};
    BOOST_TEST(base64_encode(mixed) == "++++AA==");
}

BOOST_AUTO_TEST_CASE(random_value_is_24_base64_chars)
{
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string v = random_owner_value();
    BOOST_TEST_REQUIRE(v.size() == 24u);
    BOOST_TEST(v.substr(0, 22).find_first_not_of(alphabet) == std::string::npos, v);
    BOOST_TEST(v.substr(22) == "==");  // 16 bytes leave one byte in the last group
}

BOOST_AUTO_TEST_CASE(random_values_are_distinct)
{
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        seen.insert(random_owner_value());
    }
    BOOST_TEST(seen.size() == 1000u);
}

BOOST_AUTO_TEST_SUITE_END()
