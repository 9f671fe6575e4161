// SPDX-License-Identifier: BSL-1.0
// The library names its Lua scripts by their SHA-1, as Redis does. A wrong digest would not
// fail any operation: every EVALSHA would answer NOSCRIPT and the EVAL fallback would take
// over, silently doubling the traffic. These tests hold the digests against a real server.

#include "fixture.hpp"

#include "protocol/scripts.hpp"
#include "resp/resp.hpp"

#include <set>

namespace redlock::test {
namespace {

// The arguments of one encoded command (a RESP array of bulk strings).
std::vector<std::string> args_of(const std::string& wire)
{
    detail::resp::decoder d;
    d.feed(wire.data(), wire.size());
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    std::vector<std::string> out;
    for (const auto& e : r->elements) {
        out.push_back(e.text);
    }
    return out;
}

BOOST_AUTO_TEST_SUITE(scripts)

BOOST_AUTO_TEST_CASE(every_script_is_named_by_the_digest_redis_gives_it)
{
    redis_server node;
    const std::vector<std::string> one = {"k"};
    const std::vector<std::string> two = {"k1", "k2"};
    std::vector<detail::request> requests;
    for (bool reentrant : {false, true}) {
        const detail::lock_shape shape{two, reentrant};
        requests.push_back(detail::acquire_request(shape, "v", 1000ms));
        requests.push_back(detail::release_request(shape, "v", true));
        requests.push_back(detail::extend_request(shape, "v", 1000ms, false));
        requests.push_back(detail::check_request(shape, "v"));
    }
    requests.push_back(detail::acquire_request({one, false, true}, "v", 1000ms));
    requests.push_back(detail::fence_raise_request({one, false, true}, 7));

    std::set<std::string> distinct;
    for (const detail::request& r : requests) {
        const auto eval = args_of(r.cmd.fallback);
        const auto evalsha = args_of(r.cmd.payload);
        BOOST_TEST_REQUIRE(eval.size() > 1u);
        BOOST_TEST_REQUIRE(evalsha.size() > 1u);
        BOOST_TEST(redis_command(node.port(), {"SCRIPT", "LOAD", eval[1]}) == evalsha[1]);
        distinct.insert(evalsha[1]);
    }
    BOOST_TEST(distinct.size() == requests.size());
}

BOOST_FIXTURE_TEST_CASE(repeated_scripts_run_by_digest_without_noscript, five_nodes)
{
    redlock::client c(io.get_executor(), config());
    auto m = c.make_multi_mutex({"script-a", "script-b"});
    run(io, [&]() -> asio::awaitable<int> {
        for (int round = 0; round < 3; ++round) {
            redlock::guard g = co_await m.acquire();
            co_await g.extend();
            BOOST_TEST(co_await g.valid());
            co_await g.release();
        }
        co_await c.async_shutdown();  // the deletes beyond the quorum have been answered
        co_return 0;
    }());
    for (std::size_t i = 0; i < 5; ++i) {
        BOOST_TEST_CONTEXT("node " << i)
        {
            const std::uint16_t port = nodes[i].port();
            // The first use of each script on the connection goes as EVAL, later ones by
            // digest: 4 scripts used 3 times each.
            BOOST_TEST(info_count(port, "commandstats", "cmdstat_evalsha:calls=") == 8);
            BOOST_TEST(info_count(port, "errorstats", "errorstat_NOSCRIPT:count=") == 0);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
