// SPDX-License-Identifier: BSL-1.0
// A fake node that answers with bytes a real Redis never sends: garbage, truncated replies,
// wrong reply types, error replies, NOSCRIPT forever, stray replies. Every case must end
// with the documented error, a node-level report that says what happened, no crash and no
// hang.

#include "hostile.hpp"

#include <random>

namespace redlock::test {
namespace {

constexpr auto op_limit = 10s;

/// A lock on one fake node: a per-node deadline of 2 s x 0.05 = 100 ms.
const options one_try{.expiry = 2s, .tries = 1};

/// try_acquire on a client whose only node is `fake`: must fail with `expected`, within
/// `within`, and the report must name the node with an error or timeout that explains
/// itself and mentions each of `mentions`.
void acquire_fails(fake_server& fake, std::vector<std::string> mentions,
                   redlock::error expected = redlock::error::failed,
                   std::chrono::milliseconds within = 2s)
{
    asio::io_context io;
    redlock::client c(io.get_executor(), config_of({fake.node()}));
    auto m = c.make_mutex("hostile", one_try);
    const auto start = steady::now();
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    const auto took = since(start);
    BOOST_TEST(ec == expected);
    BOOST_TEST(!g.owns_lock());
    BOOST_TEST((took < within), "took " << took.count() << " ms");
    const report r = g.last_report();
    BOOST_TEST_REQUIRE(r.nodes.size() == 1u);
    expect_clear_failure(r.nodes[0], "acquire");
    for (const std::string& part : mentions) {
        BOOST_TEST(contains(r.nodes[0].detail, part),
                   "detail '" << r.nodes[0].detail << "' does not mention '" << part << "'");
    }
    // The mutex keeps the same report.
    BOOST_TEST(m.last_report().to_string() == r.to_string());
    BOOST_TEST(fake.script_failures().empty());
}

/// A script that answers SET like Redis and every other command with `bad(command)`.
fake_server::script set_ok_then(std::function<std::string(const command_args&)> bad)
{
    return answer_each([bad = std::move(bad), redis = std::make_shared<mini_redis>()](
                           const command_args& c) -> std::string {
        return c.at(0) == "SET" ? redis->answer(c) : bad(c);
    });
}

/// Acquires the lock on the single fake node (which answers SET with +OK), then checks that
/// extend, valid and release end with their documented errors and a clear report that
/// mentions `mentions`.
void guard_ops_fail(fake_server& fake, std::string_view mentions,
                    std::chrono::milliseconds within = 2s)
{
    asio::io_context io;
    redlock::client c(io.get_executor(), config_of({fake.node()}));
    auto m = c.make_mutex("hostile", {.expiry = 10s, .tries = 1, .timeout_factor = 0.01});
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST_REQUIRE(!ec, "acquire: " << ec.message() << "\n" << g.last_report().to_string());
    BOOST_TEST_REQUIRE(g.owns_lock());

    // clang 14 cannot capture a structured binding: name the guard.
    redlock::guard& acquired = g;
    auto check = [&acquired, mentions, within](std::string_view what, steady::time_point start) {
        const redlock::guard& g = acquired;
        BOOST_TEST((since(start) < within), what << " took " << since(start).count() << " ms");
        BOOST_TEST_REQUIRE(g.last_report().nodes.size() == 1u);
        const node_outcome o = g.last_report().nodes[0];
        expect_clear_failure(o, what);
        BOOST_TEST(contains(o.detail, mentions),
                   what << ": detail '" << o.detail << "' does not mention '" << mentions << "'");
    };

    auto start = steady::now();
    auto [xec] = run(io, extend_of(g), op_limit);
    BOOST_TEST(xec == redlock::error::extend_failed);
    check("extend", start);

    start = steady::now();
    auto [vec, held] = run(io, valid_of(g), op_limit);
    BOOST_TEST(!vec);
    BOOST_TEST(!held);
    check("valid", start);

    start = steady::now();
    auto [rec] = run(io, release_of(g), op_limit);
    BOOST_TEST(rec == redlock::error::not_held);
    BOOST_TEST(!g.owns_lock());
    check("release", start);
    BOOST_TEST(fake.script_failures().empty());
}

BOOST_AUTO_TEST_SUITE(garbage)

BOOST_AUTO_TEST_CASE(text_that_is_not_resp)
{
    fake_server fake(answer_each([](const command_args&) { return "hello\r\n"; }));
    acquire_fails(fake, {"protocol error from " + fake.endpoint(), "\"h\""});
}

BOOST_AUTO_TEST_CASE(random_binary)
{
    // Whatever the bytes, the node fails (protocol error, or no complete reply before the
    // deadline) and the operation ends in bounded time.
    for (unsigned seed = 1; seed <= 12; ++seed) {
        BOOST_TEST_CONTEXT("seed " << seed)
        {
            std::mt19937 gen(seed);
            std::string noise(64 + seed * 37, '\0');
            for (char& ch : noise) {
                ch = static_cast<char>(gen());
            }
            fake_server fake(answer_each([noise](const command_args&) { return noise; }));
            acquire_fails(fake, {});
        }
    }
}

BOOST_AUTO_TEST_CASE(bad_numbers)
{
    for (std::string bad : {":12x\r\n", "$abc\r\n", "$-7\r\n", "*-3\r\n", "$\r\n",
                            ":99999999999999999999999\r\n", "*99999999999\r\n"}) {
        BOOST_TEST_CONTEXT("reply " << bad.substr(0, bad.size() - 2))
        {
            fake_server fake(answer_each([bad](const command_args&) { return bad; }));
            acquire_fails(fake, {"protocol error from " + fake.endpoint()});
        }
    }
}

BOOST_AUTO_TEST_CASE(resp3_types_the_client_did_not_ask_for)
{
    for (std::string bad : {"_\r\n", "#t\r\n", ">2\r\n+a\r\n+b\r\n", "%1\r\n+a\r\n+b\r\n"}) {
        BOOST_TEST_CONTEXT("reply " << bad.substr(0, 2))
        {
            fake_server fake(answer_each([bad](const command_args&) { return bad; }));
            acquire_fails(fake, {"protocol error from " + fake.endpoint()});
        }
    }
}

BOOST_AUTO_TEST_CASE(arrays_nested_too_deep)
{
    std::string deep;
    for (int i = 0; i < 64; ++i) {
        deep += "*1\r\n";
    }
    deep += ":1\r\n";
    fake_server fake(answer_each([deep](const command_args&) { return deep; }));
    acquire_fails(fake, {"protocol error from " + fake.endpoint()});
}

BOOST_AUTO_TEST_CASE(garbage_after_a_good_set)
{
    fake_server fake(set_ok_then([](const command_args&) { return "\x01\x02 not resp\r\n"; }));
    guard_ops_fail(fake, "protocol error");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(truncated)

BOOST_AUTO_TEST_CASE(partial_reply_then_close)
{
    for (std::string part : {"+O", "$5\r\nab", ":12", "*2\r\n:1\r\n", "-ERR half"}) {
        BOOST_TEST_CONTEXT("partial " << part)
        {
            fake_server fake([part](fake_session& s) -> asio::awaitable<void> {
                if (co_await s.read_command()) {
                    co_await s.send(part);
                }
                s.close();
            });
            acquire_fails(fake, {fake.endpoint()});
        }
    }
}

BOOST_AUTO_TEST_CASE(accepts_and_closes_at_once)
{
    fake_server fake([](fake_session& s) -> asio::awaitable<void> {
        s.close();
        co_return;
    });
    acquire_fails(fake, {fake.endpoint()});

    // The connection is not stuck in its failure: after the reconnect pause the client
    // connects again (and fails again, cleanly).
    asio::io_context io;
    redlock::client c(io.get_executor(), config_of({fake.node()}));
    auto m = c.make_mutex("again", {.expiry = 2s, .tries = 5, .retry_delay = 30ms});
    const auto before = fake.connections();
    auto [ec, g] = run(io, try_get(m), op_limit);
    BOOST_TEST(ec == redlock::error::failed);
    BOOST_TEST(g.last_report().attempts == 5);
    BOOST_TEST(fake.connections() >= before + 2);
    expect_clear_failure(g.last_report().nodes[0], "reconnecting acquire");
}

BOOST_AUTO_TEST_CASE(partial_reply_to_release_then_close)
{
    auto redis = std::make_shared<mini_redis>();
    fake_server fake([redis](fake_session& s) -> asio::awaitable<void> {
        while (auto cmd = co_await s.read_command()) {
            if (cmd->at(0) == "SET") {
                co_await s.send(redis->answer(*cmd));
                continue;
            }
            co_await s.send(":");
            s.close();
            co_return;
        }
    });
    asio::io_context io;
    redlock::client c(io.get_executor(), config_of({fake.node()}));
    auto m = c.make_mutex("hostile", one_try);
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST_REQUIRE(!ec);
    auto [rec] = run(io, release_of(g), op_limit);
    BOOST_TEST(rec == redlock::error::not_held);
    expect_clear_failure(g.last_report().nodes[0], "release");
    BOOST_TEST(
        contains(g.last_report().nodes[0].detail, "connection closed by " + fake.endpoint()));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(wrong_types)

BOOST_AUTO_TEST_CASE(integer_to_set)
{
    fake_server fake(answer_each([](const command_args&) { return ":1\r\n"; }));
    acquire_fails(fake, {"unexpected integer reply 1"});
}

BOOST_AUTO_TEST_CASE(bulk_to_set)
{
    fake_server fake(answer_each([](const command_args&) { return bulk("OK"); }));
    acquire_fails(fake, {"unexpected reply 'OK'"});
}

BOOST_AUTO_TEST_CASE(array_to_set)
{
    fake_server fake(answer_each([](const command_args&) { return "*1\r\n+OK\r\n"; }));
    acquire_fails(fake, {"unexpected array reply"});
}

BOOST_AUTO_TEST_CASE(status_other_than_ok_to_set)
{
    fake_server fake(answer_each([](const command_args&) { return "+QUEUED\r\n"; }));
    acquire_fails(fake, {"unexpected reply 'QUEUED'"});
}

BOOST_AUTO_TEST_CASE(array_to_evalsha_and_get)
{
    fake_server fake(set_ok_then([](const command_args&) { return "*2\r\n:1\r\n:1\r\n"; }));
    guard_ops_fail(fake, "unexpected array reply");
}

BOOST_AUTO_TEST_CASE(out_of_range_integer_to_evalsha)
{
    fake_server fake(set_ok_then([](const command_args&) { return integer(7); }));
    guard_ops_fail(fake, "unexpected integer reply 7");
}

BOOST_AUTO_TEST_CASE(nil_to_evalsha_and_status_to_get)
{
    fake_server fake(set_ok_then([](const command_args& c) {
        return c.at(0) == "GET" ? std::string("+PONG\r\n") : std::string("$-1\r\n");
    }));
    asio::io_context io;
    redlock::client cl(io.get_executor(), config_of({fake.node()}));
    auto m = cl.make_mutex("hostile", one_try);
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST_REQUIRE(!ec);
    auto [xec] = run(io, extend_of(g), op_limit);
    BOOST_TEST(xec == redlock::error::extend_failed);
    BOOST_TEST(contains(g.last_report().nodes[0].detail, "unexpected nil reply"));
    auto [vec, held] = run(io, valid_of(g), op_limit);
    BOOST_TEST(!vec);
    BOOST_TEST(!held);
    BOOST_TEST(contains(g.last_report().nodes[0].detail, "unexpected reply 'PONG'"));
    auto [rec] = run(io, release_of(g), op_limit);
    BOOST_TEST(rec == redlock::error::not_held);
    BOOST_TEST(contains(g.last_report().nodes[0].detail, "unexpected nil reply"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(error_replies)

BOOST_AUTO_TEST_CASE(error_to_every_command)
{
    fake_server fake(answer_each([](const command_args&) { return "-ERR boom\r\n"; }));
    acquire_fails(fake, {"ERR boom"});
}

BOOST_AUTO_TEST_CASE(error_to_everything_but_set)
{
    fake_server fake(set_ok_then([](const command_args&) { return "-ERR boom\r\n"; }));
    guard_ops_fail(fake, "ERR boom");
}

BOOST_AUTO_TEST_CASE(empty_error_reply)
{
    fake_server fake(answer_each([](const command_args&) { return "-\r\n"; }));
    acquire_fails(fake, {"Redis error"});
}

BOOST_AUTO_TEST_CASE(noscript_forever_to_eval_is_not_retried)
{
    fake_server fake(
        set_ok_then([](const command_args&) { return "-NOSCRIPT No matching script.\r\n"; }));
    guard_ops_fail(fake, "NOSCRIPT");
    // extend and release each use their script for the first time on the connection, so
    // each sent EVAL once (a NOSCRIPT to EVAL is not retried); GET is not a script.
    BOOST_TEST(fake.count("EVALSHA") == 0u);
    BOOST_TEST(fake.count("EVAL") == 2u);
}

BOOST_AUTO_TEST_CASE(noscript_then_eval_works)
{
    // A server whose script cache is empty: EVALSHA fails, EVAL succeeds.
    auto redis = std::make_shared<mini_redis>();
    fake_server fake(answer_each([redis](const command_args& c) -> std::string {
        return c.at(0) == "EVALSHA" ? "-NOSCRIPT No matching script.\r\n" : redis->answer(c);
    }));
    asio::io_context io;
    redlock::client cl(io.get_executor(), config_of({fake.node()}));
    auto m = cl.make_mutex("hostile", one_try);
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST_REQUIRE(!ec);
    // The first extend sends the script's text; the second only its SHA-1, which this
    // server does not know: NOSCRIPT, and the same request goes again as EVAL.
    for (int i = 0; i < 2; ++i) {
        auto [xec] = run(io, extend_of(g), op_limit);
        BOOST_TEST(!xec);
    }
    auto [rec] = run(io, release_of(g), op_limit);
    BOOST_TEST(!rec);
    BOOST_TEST(fake.count("EVALSHA") == 1u);
    BOOST_TEST(fake.count("EVAL") == 3u);
    BOOST_TEST(!redis->get("hostile").has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pacing)

BOOST_AUTO_TEST_CASE(replies_one_byte_at_a_time)
{
    auto redis = std::make_shared<mini_redis>();
    fake_server fake([redis](fake_session& s) -> asio::awaitable<void> {
        while (auto cmd = co_await s.read_command()) {
            if (!co_await s.send_slowly(redis->answer(*cmd), 2ms)) {
                co_return;
            }
        }
    });
    asio::io_context io;
    redlock::client c(io.get_executor(), config_of({fake.node()}));
    // Per-node deadline 10 s x 0.05 = 500 ms; the slowest reply (a bulk string with the
    // owner value) takes about 35 bytes x 2 ms.
    auto m = c.make_mutex("slow", {.expiry = 10s, .tries = 1});
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST_REQUIRE(!ec, g.last_report().to_string());
    BOOST_TEST((redis->get("slow") == g.value()));
    auto [vec, held] = run(io, valid_of(g), op_limit);
    BOOST_TEST(!vec);
    BOOST_TEST(held, g.last_report().to_string());
    auto [xec] = run(io, extend_of(g), op_limit);
    BOOST_TEST(!xec, g.last_report().to_string());
    auto [rec] = run(io, release_of(g), op_limit);
    BOOST_TEST(!rec, g.last_report().to_string());
    BOOST_TEST(!redis->get("slow").has_value());
    BOOST_TEST(fake.connections() == 1u);
}

BOOST_AUTO_TEST_CASE(pipelined_replies_split_at_every_byte)
{
    // Four locks at once on one connection: requests are in flight together while the
    // server dribbles out its answers.
    auto redis = std::make_shared<mini_redis>();
    fake_server fake([redis](fake_session& s) -> asio::awaitable<void> {
        while (auto cmd = co_await s.read_command()) {
            if (!co_await s.send_slowly(redis->answer(*cmd), 1ms)) {
                co_return;
            }
        }
    });
    asio::io_context io;
    redlock::client c(io.get_executor(), config_of({fake.node()}));
    int released = 0;
    int finished = 0;
    for (int i = 0; i < 4; ++i) {
        auto m = c.make_mutex("k" + std::to_string(i), {.expiry = 20s, .tries = 1});
        asio::co_spawn(
            io,
            [m, &released, &finished]() mutable -> asio::awaitable<void> {
                auto [ec, g] = co_await m.async_try_acquire(asio::as_tuple(asio::use_awaitable));
                if (!ec) {
                    auto [rec] = co_await g.async_release(asio::as_tuple(asio::use_awaitable));
                    released += !rec;
                }
                ++finished;
            },
            asio::detached);
    }
    run(
        io,
        [&]() -> asio::awaitable<int> {
            asio::steady_timer tick(io);
            while (finished < 4) {
                tick.expires_after(5ms);
                co_await tick.async_wait(asio::use_awaitable);
            }
            co_return 0;
        }(),
        op_limit);
    BOOST_TEST(released == 4);
    BOOST_TEST(fake.connections() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(stray_bytes)

// BUG (see the report): a reply nobody asked for is matched to the next request. Redis
// answers a connection's commands in order and never sends an unrequested reply (RESP2, no
// pub/sub), so bytes that arrive while nothing is in flight mean the stream can no longer
// be trusted; the client must drop the connection instead of shifting every later reply by
// one.
BOOST_AUTO_TEST_CASE(an_extra_reply_is_not_taken_as_the_next_answer)
{
    auto redis = std::make_shared<mini_redis>();
    // Another owner holds "theirs".
    redis->answer({"SET", "theirs", "someone-else", "NX", "PX", "60000"});
    fake_server fake(answer_each([redis, first = true](const command_args& c) mutable {
        std::string out = redis->answer(c);
        if (first && c.at(0) == "SET") {
            first = false;
            out += "+OK\r\n";  // one reply too many
        }
        return out;
    }));
    asio::io_context io;
    redlock::client cl(io.get_executor(), config_of({fake.node()}));
    auto mine = cl.make_mutex("mine", one_try);
    auto theirs = cl.make_mutex("theirs", one_try);

    auto [ec, g] = run(io, try_get(mine, true), op_limit);
    BOOST_TEST_REQUIRE(!ec);
    // The server answers this SET with nil (taken). The stray +OK must not stand in for it.
    auto [ec2, g2] = run(io, try_get(theirs, true), op_limit);
    BOOST_TEST_MESSAGE("second acquire: " << ec2.message() << "\n" << g2.last_report().to_string());
    BOOST_TEST(!g2.owns_lock(), "acquired a lock the server refused, from a stray reply");
    BOOST_TEST((ec2 == redlock::error::taken || ec2 == redlock::error::failed));
    g2 = redlock::guard();
    auto [rec] = run(io, release_of(g), op_limit);
    BOOST_TEST_MESSAGE("release: " << rec.message() << "\n" << g.last_report().to_string());
}

BOOST_AUTO_TEST_CASE(extra_bytes_after_a_reply_in_the_same_write)
{
    // Garbage glued to a good reply: the good reply counts, the connection is dropped.
    auto redis = std::make_shared<mini_redis>();
    fake_server fake(
        answer_each([redis](const command_args& c) { return redis->answer(c) + "\x7f\x7fjunk"; }));
    asio::io_context io;
    redlock::client cl(io.get_executor(), config_of({fake.node()}));
    auto m = cl.make_mutex("glued", one_try);
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST(!ec);
    // Whatever the client makes of the junk, release answers in bounded time and never
    // reports success for a node it did not hear a valid reply from.
    auto [rec] = run(io, release_of(g), op_limit);
    BOOST_TEST_MESSAGE("release: " << rec.message() << "\n" << g.last_report().to_string());
    const node_outcome o = g.last_report().nodes[0];
    if (o.status != node_status::ok) {
        expect_clear_failure(o, "release after junk");
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(report_text)

// BUG (see the report): report::to_string promises one line per node, but the detail quotes
// server-controlled text verbatim, so a server can add lines (forge another node's outcome)
// or put terminal escapes into the caller's logs.
BOOST_AUTO_TEST_CASE(server_text_cannot_forge_report_lines)
{
    fake_server fake(answer_each(
        [](const command_args&) { return std::string("-ERR x\n10.0.0.1:6379 ok\x1b[2J\r\n"); }));
    asio::io_context io;
    redlock::client c(io.get_executor(), config_of({fake.node()}));
    auto m = c.make_mutex("forged", one_try);
    auto [ec, g] = run(io, try_get(m, true), op_limit);
    BOOST_TEST(ec == redlock::error::failed);
    const std::string text = g.last_report().to_string();
    BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 1, "report: " << text);
    BOOST_TEST(std::none_of(text.begin(), text.end() - 1,
                            [](char ch) { return static_cast<unsigned char>(ch) < 0x20; }),
               "control characters in the report");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
