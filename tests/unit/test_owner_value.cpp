// SPDX-License-Identifier: BSL-1.0
#include "lock/owner_value.hpp"

#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>
#include <thread>
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

BOOST_AUTO_TEST_CASE(random_values_are_distinct_across_blocks_and_threads)
{
    // Several 512-byte blocks per thread, four threads at once.
    std::vector<std::vector<std::string>> drawn(4);
    std::vector<std::thread> threads;
    for (auto& out : drawn) {
        threads.emplace_back([&out] {
            for (int i = 0; i < 200; ++i) {
                out.push_back(random_owner_value());
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    std::set<std::string> seen;
    for (const auto& out : drawn) {
        seen.insert(out.begin(), out.end());
    }
    BOOST_TEST(seen.size() == 800u);
}

BOOST_AUTO_TEST_CASE(a_forked_child_does_not_repeat_its_parents_values)
{
    random_owner_value();  // the parent has a block with bytes left in it
    int fds[2];
    BOOST_TEST_REQUIRE(::pipe(fds) == 0);
    const pid_t child = ::fork();
    BOOST_TEST_REQUIRE(child >= 0);
    if (child == 0) {
        const std::string v = random_owner_value();
        const bool written = ::write(fds[1], v.data(), v.size()) == static_cast<ssize_t>(v.size());
        ::_exit(written ? 0 : 1);
    }
    ::close(fds[1]);
    const std::string parents = random_owner_value();
    std::string childs(24, '\0');
    std::size_t got = 0;
    while (got < childs.size()) {
        const ssize_t n = ::read(fds[0], childs.data() + got, childs.size() - got);
        if (n <= 0) {
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    ::close(fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(WEXITSTATUS(status) == 0);
    BOOST_TEST_REQUIRE(got == childs.size());
    BOOST_TEST(childs != parents);
}

BOOST_AUTO_TEST_SUITE_END()
