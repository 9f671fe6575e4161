// SPDX-License-Identifier: BSL-1.0
// The library names its Lua scripts by their SHA-1, as Redis does. A wrong digest would not
// fail any operation: every EVALSHA would answer NOSCRIPT and the EVAL fallback would take
// over, silently doubling the traffic. These tests hold the digests against a real server,
// and what each lock script does to its keys.

#include "fixture.hpp"

#include "protocol/key_space.hpp"
#include "protocol/script_table.hpp"
#include "protocol/scripts.hpp"
#include "resp/resp.hpp"

#include <algorithm>

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

// The EVAL that a connection sends in place of `c` when it must.
std::string eval_form(const detail::command& c)
{
    std::string out;
    detail::append_eval_form(out, c);
    return out;
}

BOOST_AUTO_TEST_SUITE(scripts)

BOOST_AUTO_TEST_CASE(every_script_is_named_by_the_digest_redis_gives_it)
{
    redis_server node;
    for (const detail::lua_script& script : detail::all_scripts()) {
        BOOST_TEST_CONTEXT(script.name)
        {
            // Also proves that the text compiles: SCRIPT LOAD refuses a syntax error.
            BOOST_TEST(redis_command(node.port(), {"SCRIPT", "LOAD", std::string(script.text)}) ==
                       script.sha);
        }
    }
}

// What a key of a lock holds before a script runs.
enum class held { ours, missing, other };

// The state a lock script answers for one key: ours 1, missing 0, another owner's -1.
int answer_for(held h)
{
    return h == held::ours ? 1 : h == held::missing ? 0 : -1;
}

const std::vector<std::string> two_keys{"lock:{s}:1", "lock:{s}:2"};

void put(std::uint16_t port, const std::string& key, held h, bool reentrant)
{
    redis_command(port, {"DEL", key});
    if (h == held::missing) {
        return;
    }
    const std::string value = h == held::ours ? "me" : "them";
    if (reentrant) {
        redis_command(port, {"HSET", key, value, "1"});
    } else {
        redis_command(port, {"SET", key, value});
    }
}

// A key's contents as redis_command renders them: "me", "me 1" (a hash), "(nil)", "none".
std::string contents(std::uint16_t port, const std::string& key, bool reentrant)
{
    if (redis_command(port, {"EXISTS", key}) == "0") {
        return "none";
    }
    return reentrant ? redis_command(port, {"HGETALL", key}) : redis_command(port, {"GET", key});
}

std::string run_script(std::uint16_t port, const detail::request& r)
{
    return redis_command(port, args_of(eval_form(r.cmd)));
}

// Every mix of two keys' states, for both kinds of lock: check, extend and release answer the
// least state of their keys, touch nothing when a key is another owner's (release: only the
// keys that are ours), and an extend with recreate sets keys that vanished.
BOOST_AUTO_TEST_CASE(lock_scripts_answer_the_least_state_of_their_keys)
{
    redis_server node;
    const std::uint16_t port = node.port();
    const std::vector<held> states{held::ours, held::missing, held::other};
    for (bool reentrant : {false, true}) {
        const detail::lock_shape shape{two_keys, reentrant};
        const std::string mine = reentrant ? "me 1" : "me";
        for (held first : states) {
            for (held second : states) {
                BOOST_TEST_CONTEXT("reentrant " << reentrant << ", states " << answer_for(first)
                                                << " " << answer_for(second))
                {
                    const auto now = [&] {
                        return std::vector<std::string>{contents(port, two_keys[0], reentrant),
                                                        contents(port, two_keys[1], reentrant)};
                    };
                    const auto setup = [&] {
                        put(port, two_keys[0], first, reentrant);
                        put(port, two_keys[1], second, reentrant);
                        return now();
                    };
                    const int least = std::min(answer_for(first), answer_for(second));
                    const bool other = least < 0;

                    std::vector<std::string> before = setup();
                    BOOST_TEST(run_script(port, detail::check_request(shape, "me")) ==
                               std::to_string(least));
                    BOOST_TEST(now() == before, boost::test_tools::per_element());

                    BOOST_TEST(run_script(port, detail::extend_request(shape, "me", 60s, false)) ==
                               std::to_string(least));
                    BOOST_TEST(now() == before, boost::test_tools::per_element());
                    for (const std::string& key : two_keys) {
                        // Set without an expiry: -1 unless extended (-2 when missing).
                        BOOST_TEST(
                            (least == 1 ? redis_pttl(port, key) > 0 : redis_pttl(port, key) < 0));
                    }

                    before = setup();
                    BOOST_TEST(run_script(port, detail::extend_request(shape, "me", 60s, true)) ==
                               (other ? "-1" : "1"));
                    if (other) {
                        BOOST_TEST(now() == before, boost::test_tools::per_element());
                    } else {
                        BOOST_TEST(now() == std::vector<std::string>({mine, mine}),
                                   boost::test_tools::per_element());
                        BOOST_TEST(redis_pttl(port, two_keys[0]) > 0);
                        BOOST_TEST(redis_pttl(port, two_keys[1]) > 0);
                    }

                    before = setup();
                    BOOST_TEST(run_script(port, detail::release_request(shape, "me", false)) ==
                               std::to_string(least));
                    std::vector<std::string> released = before;
                    for (std::string& c : released) {
                        c = c == mine ? "none" : c;
                    }
                    BOOST_TEST(now() == released, boost::test_tools::per_element());
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_reentrant_release_takes_one_hold_and_deletes_with_the_last)
{
    redis_server node;
    const std::uint16_t port = node.port();
    const detail::lock_shape shape{two_keys, true};
    const detail::request acquire = detail::acquire_request(shape, "me", 60s);
    BOOST_TEST(run_script(port, acquire) == "1");
    BOOST_TEST(run_script(port, acquire) == "1");
    BOOST_TEST(contents(port, two_keys[0], true) == "me 2");
    BOOST_TEST(run_script(port, detail::acquire_request(shape, "them", 60s)) == "-1");
    BOOST_TEST(run_script(port, detail::release_request(shape, "me", false)) == "1");
    BOOST_TEST(contents(port, two_keys[1], true) == "me 1");
    BOOST_TEST(run_script(port, detail::release_request(shape, "me", false)) == "1");
    BOOST_TEST(contents(port, two_keys[0], true) == "none");
    BOOST_TEST(contents(port, two_keys[1], true) == "none");
    BOOST_TEST(run_script(port, detail::release_request(shape, "me", false)) == "0");
}

BOOST_AUTO_TEST_CASE(a_plain_acquire_takes_all_keys_or_none)
{
    redis_server node;
    const std::uint16_t port = node.port();
    const detail::lock_shape shape{two_keys, false};
    put(port, two_keys[1], held::other, false);
    BOOST_TEST(run_script(port, detail::acquire_request(shape, "me", 60s)) == "-1");
    BOOST_TEST(contents(port, two_keys[0], false) == "none");
    redis_command(port, {"DEL", two_keys[1]});
    BOOST_TEST(run_script(port, detail::acquire_request(shape, "me", 60s)) == "1");
    BOOST_TEST(contents(port, two_keys[0], false) == "me");
    BOOST_TEST(contents(port, two_keys[1], false) == "me");
    BOOST_TEST(redis_pttl(port, two_keys[1]) > 0);
    // Held, even by the same value: an acquire is refused.
    BOOST_TEST(run_script(port, detail::acquire_request(shape, "me", 60s)) == "-1");
}

// A fencing write-back can reach a node after it restarted without its data (the client
// paused, or its connection was made again). The counter it finds missing must start at the
// node's clock, as an acquire would start it, not at the old token: otherwise the node would
// hand out tokens below those already handed out.
BOOST_AUTO_TEST_CASE(a_late_write_back_does_not_set_a_lost_counter_below_the_clock)
{
    redis_server node;
    const std::uint16_t port = node.port();
    const std::vector<std::string> key{"lock:late"};
    const detail::lock_shape shape{key, false, true};
    const std::string counter = detail::fence_key("", key[0]);
    const std::uint64_t clock_before = static_cast<std::uint64_t>(server_ms(port)) * 1000;
    BOOST_TEST(run_script(port, detail::fence_raise_request(shape, 5)) == "1");
    BOOST_TEST(std::stoull(redis_command(port, {"GET", counter})) >= clock_before);
    // A token above the counter still raises it.
    const std::uint64_t above = static_cast<std::uint64_t>(server_ms(port)) * 1000 + 1'000'000'000;
    BOOST_TEST(run_script(port, detail::fence_raise_request(shape, above)) == "1");
    BOOST_TEST(redis_command(port, {"GET", counter}) == std::to_string(above));
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
            // digest: 3 scripts (acquire, release, and check_extend for both extend and
            // valid) used 12 times.
            BOOST_TEST(info_count(port, "commandstats", "cmdstat_eval:calls=") == 3);
            BOOST_TEST(info_count(port, "commandstats", "cmdstat_evalsha:calls=") == 9);
            BOOST_TEST(info_count(port, "errorstats", "errorstat_NOSCRIPT:count=") == 0);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
