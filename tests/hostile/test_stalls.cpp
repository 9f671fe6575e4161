// SPDX-License-Identifier: BSL-1.0
// Servers that accept and never answer, or stall the handshake: every operation stays
// bounded by the per-node deadline or the connect timeout. And a fake node among two real
// ones: the quorum still forms, and the report says what the fake one did.

#include "hostile.hpp"

namespace redlock::test {
namespace {

constexpr auto op_limit = 10s;

/// Reads (and records) every command, answers none.
fake_server::script silent()
{
    return [](fake_session& s) -> asio::awaitable<void> {
        while (co_await s.read_command()) {
        }
    };
}

BOOST_AUTO_TEST_SUITE(silent_servers)

BOOST_AUTO_TEST_CASE(accepts_and_never_answers)
{
    fake_server fake(silent());
    asio::io_context io;
    redlock::client c(io.get_executor(), config_of({fake.node()}));
    // Per-node deadline: 2 s x 0.05 = 100 ms.
    auto m = c.make_mutex("silent", {.expiry = 2s, .tries = 1});
    auto start = steady::now();
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST(ec == redlock::error::failed);
    BOOST_TEST((since(start) < 1s), "took " << since(start).count() << " ms");
    const node_outcome o = g.last_report().nodes.at(0);
    expect_clear_failure(o, "acquire");
    BOOST_TEST(o.status == node_status::timed_out);
    BOOST_TEST(contains(o.detail, "deadline"));

    // Several attempts: each is bounded; the stuck connection is dropped and reopened.
    auto again = c.make_mutex("silent", {.expiry = 2s, .tries = 4, .retry_delay = 20ms});
    start = steady::now();
    auto [ec2, g2] = run(io, try_get(again), op_limit);
    BOOST_TEST(ec2 == redlock::error::failed);
    BOOST_TEST(g2.last_report().attempts == 4);
    BOOST_TEST((since(start) < 2s), "took " << since(start).count() << " ms");
    expect_clear_failure(g2.last_report().nodes.at(0), "acquire, 4 tries");
}

BOOST_AUTO_TEST_CASE(answers_set_then_goes_silent)
{
    auto redis = std::make_shared<mini_redis>();
    fake_server fake([redis](fake_session& s) -> asio::awaitable<void> {
        while (auto cmd = co_await s.read_command()) {
            if (cmd->at(0) != "SET") {
                co_await s.ignore_all();
                co_return;
            }
            co_await s.send(redis->answer(*cmd));
        }
    });
    asio::io_context io;
    redlock::client c(io.get_executor(), config_of({fake.node()}));
    auto m = c.make_mutex("silent", {.expiry = 2s, .tries = 1});
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST_REQUIRE(!ec);

    auto start = steady::now();
    auto [xec] = run(io, extend_of(g), op_limit);
    BOOST_TEST(xec == redlock::error::extend_failed);
    BOOST_TEST((since(start) < 1s));
    expect_clear_failure(g.last_report().nodes.at(0), "extend");

    start = steady::now();
    auto [vec, held] = run(io, valid_of(g), op_limit);
    BOOST_TEST(!vec);
    BOOST_TEST(!held);
    BOOST_TEST((since(start) < 1s));
    expect_clear_failure(g.last_report().nodes.at(0), "valid");

    start = steady::now();
    auto [rec] = run(io, release_of(g), op_limit);
    BOOST_TEST(rec == redlock::error::not_held);
    BOOST_TEST((since(start) < 1s));
    expect_clear_failure(g.last_report().nodes.at(0), "release");
}

BOOST_AUTO_TEST_CASE(handshake_never_answered)
{
    fake_server fake(silent());
    auto cfg = config_of({fake.node()});
    cfg.nodes[0].password = "secret-password";
    cfg.connect_timeout = 100ms;
    asio::io_context io;
    redlock::client c(io.get_executor(), cfg);
    // Per-node deadline 250 ms: the connect timeout (100 ms) comes first and is reported.
    auto m = c.make_mutex("auth", {.expiry = 5s, .tries = 3, .retry_delay = 150ms});
    const auto start = steady::now();
    auto [ec, g] = run(io, try_get(m), op_limit);
    BOOST_TEST(ec == redlock::error::failed);
    BOOST_TEST((since(start) < 3s));
    const node_outcome o = g.last_report().nodes.at(0);
    expect_clear_failure(o, "acquire behind a silent AUTH");
    BOOST_TEST(contains(o.detail, "timed out after 100 ms"), o.detail);
    BOOST_TEST(!contains(o.detail, "secret-password"));
    BOOST_TEST(fake.count("AUTH") >= 1u);
}

BOOST_AUTO_TEST_CASE(handshake_answered_with_garbage)
{
    fake_server fake(answer_each([](const command_args&) { return "\x13\x37garbage\r\n"; }));
    auto cfg = config_of({fake.node()});
    cfg.nodes[0].password = "secret-password";
    asio::io_context io;
    redlock::client c(io.get_executor(), cfg);
    auto m = c.make_mutex("auth", {.expiry = 5s, .tries = 1});
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST(ec == redlock::error::failed);
    const node_outcome o = g.last_report().nodes.at(0);
    expect_clear_failure(o, "acquire behind a garbage AUTH reply");
    BOOST_TEST(contains(o.detail, "protocol error"), o.detail);
    BOOST_TEST(!contains(o.detail, "secret-password"));
}

BOOST_AUTO_TEST_CASE(handshake_answered_with_an_error)
{
    fake_server fake(answer_each([](const command_args& c) {
        return c.at(0) == "AUTH" ? std::string("-WRONGPASS invalid username-password pair\r\n")
                                 : std::string("+OK\r\n");
    }));
    auto cfg = config_of({fake.node()});
    cfg.nodes[0].password = "secret-password";
    asio::io_context io;
    redlock::client c(io.get_executor(), cfg);
    auto m = c.make_mutex("auth", {.expiry = 5s, .tries = 1});
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST(ec == redlock::error::misconfigured);  // a wrong password stays wrong
    const node_outcome o = g.last_report().nodes.at(0);
    expect_clear_failure(o, "acquire with a refused AUTH");
    BOOST_TEST(contains(o.detail, "WRONGPASS"), o.detail);
    BOOST_TEST(fake.count("SET") == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(one_hostile_node_of_three)

struct behaviour
{
    const char* name;
    fake_server::script script;
};

std::vector<behaviour> behaviours()
{
    auto close_after = [](std::string bytes) {
        return [bytes](fake_session& s) -> asio::awaitable<void> {
            if (co_await s.read_command()) {
                co_await s.send(bytes);
            }
            s.close();
        };
    };
    return {
        {"garbage", answer_each([](const command_args&) { return "hello\r\n"; })},
        {"truncated then close", close_after("$10\r\nabc")},
        {"integer to everything", answer_each([](const command_args&) { return ":5\r\n"; })},
        {"array to everything", answer_each([](const command_args&) { return "*1\r\n:1\r\n"; })},
        {"error to everything", answer_each([](const command_args&) { return "-ERR boom\r\n"; })},
        {"NOSCRIPT to everything",
         answer_each([](const command_args&) { return "-NOSCRIPT No matching script.\r\n"; })},
        {"never answers", silent()},
        {"closes at once",
         [](fake_session& s) -> asio::awaitable<void> {
             s.close();
             co_return;
         }},
    };
}

BOOST_AUTO_TEST_CASE(quorum_forms_and_the_report_names_the_hostile_node)
{
    redis_cluster real(2);
    for (behaviour& b : behaviours()) {
        BOOST_TEST_CONTEXT(b.name)
        {
            fake_server fake(std::move(b.script));
            asio::io_context io;
            redlock::client c(io.get_executor(), two_real_and(real, fake));
            auto m = c.make_mutex(std::string("mixed-") + b.name, {.expiry = 4s, .tries = 1});
            auto start = steady::now();
            auto [ec, g] = run(io, try_get(m, true), op_limit);
            BOOST_TEST_REQUIRE(!ec, ec.message() << "\n" << g.last_report().to_string());
            BOOST_TEST((since(start) < 1s));
            BOOST_TEST(g.last_report().count(node_status::ok) >= 2u);
            BOOST_TEST(outcome_of(g.last_report(), fake.endpoint()).status != node_status::ok);
            BOOST_TEST((redis_get(real[0].port(), m.name()) == g.value()));
            BOOST_TEST((redis_get(real[1].port(), m.name()) == g.value()));

            auto [xec] = run(io, extend_of(g), op_limit);
            BOOST_TEST(!xec, g.last_report().to_string());
            auto [vec, held] = run(io, valid_of(g), op_limit);
            BOOST_TEST(!vec);
            BOOST_TEST(held, g.last_report().to_string());

            // Release completes once the two real nodes confirmed it; the hostile one is
            // reported with its cause, or as still pending if it had not answered by then.
            start = steady::now();
            auto [rec] = run(io, release_of(g), op_limit);
            BOOST_TEST(!rec, g.last_report().to_string());
            BOOST_TEST((since(start) < 1s));
            BOOST_TEST(g.last_report().count(node_status::ok) == 2u);
            const node_outcome hostile = outcome_of(g.last_report(), fake.endpoint());
            if (hostile.status == node_status::abandoned) {
                BOOST_TEST(contains(hostile.detail, "goes on in the background"));
            } else {
                expect_clear_failure(hostile, b.name);
            }
            BOOST_TEST(!redis_get(real[0].port(), m.name()).has_value());
            BOOST_TEST(!redis_get(real[1].port(), m.name()).has_value());
            BOOST_TEST(fake.script_failures().empty());
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
