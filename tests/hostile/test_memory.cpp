// SPDX-License-Identifier: BSL-1.0
// Replies that never end: a bulk length of 2^40, a line without CRLF, an array header of
// 2^31 - 1 elements. The client must fail the node with a protocol error after a bounded
// amount of memory and time, not buffer, parse or allocate for as long as the server sends.

#include "hostile.hpp"

#include "resp/resp.hpp"

#include <atomic>

namespace redlock::test {
namespace {

namespace resp = detail::resp;

constexpr std::size_t MiB = 1024 * 1024;
#if defined(__SANITIZE_ADDRESS__)
#define REDLOCK_HOSTILE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REDLOCK_HOSTILE_ASAN 1
#endif
#endif

/// The most this process may grow while one hostile reply streams in. AddressSanitizer keeps
/// up to 256 MiB of freed memory in quarantine (the buffer's reallocations, here).
#ifdef REDLOCK_HOSTILE_ASAN
constexpr std::size_t rss_limit = 768 * MiB;
#else
constexpr std::size_t rss_limit = 384 * MiB;
#endif

struct stream_state
{
    std::size_t rss_base = resident_bytes();
    std::atomic<bool> over_limit{false};
    std::atomic<std::size_t> peak_growth{0};
};

/// `unit` repeated in 1 MiB writes until the client goes away, `max_bytes` were sent, or this
/// process grew by more than `rss_limit` (then it stops sending, notes it, and keeps the
/// connection open until the client closes it).
asio::awaitable<void> stream_units(fake_session& s, std::string unit, std::size_t max_bytes,
                                   std::shared_ptr<stream_state> st)
{
    std::string chunk;
    while (chunk.size() < MiB) {
        chunk += unit;
    }
    for (std::size_t sent = 0; sent < max_bytes; sent += chunk.size()) {
        const std::size_t rss = resident_bytes();
        const std::size_t growth = rss > st->rss_base ? rss - st->rss_base : 0;
        st->peak_growth = std::max<std::size_t>(st->peak_growth, growth);
        if (growth > rss_limit) {
            st->over_limit = true;
            break;
        }
        if (!co_await s.send(chunk)) {
            co_return;
        }
    }
    co_await s.ignore_all();
}

/// After the first command: `head`, then `unit` repeated (see stream_units).
fake_server::script stream_forever(std::string head, std::string unit, std::size_t max_bytes,
                                   std::shared_ptr<stream_state> st)
{
    return [=](fake_session& s) -> asio::awaitable<void> {
        if (co_await s.read_command() && co_await s.send(head)) {
            co_await stream_units(s, unit, max_bytes, st);
        }
    };
}

struct outcome
{
    boost::system::error_code ec;
    node_outcome node;
    std::chrono::milliseconds took;
    std::size_t peak_growth;
};

/// try_acquire against `fake` alone, with a per-node deadline of 5 s (25 s x 0.2): long
/// enough that a bounded decoder gives up on its own first.
outcome acquire_against(fake_server& fake)
{
    asio::io_context io;
    redlock::client c(io.get_executor(), config_of({fake.node()}));
    auto m = c.make_mutex("flood", {.expiry = 25s, .tries = 1, .timeout_factor = 0.2});
    const std::size_t base = resident_bytes();
    reset_peak_resident();
    const auto start = steady::now();
    auto [ec, g] = run(io, try_get(m, true), 30s);
    outcome o{ec, {}, since(start), 0};
    const std::size_t peak = peak_resident_bytes();
    o.peak_growth = peak > base ? peak - base : 0;
    BOOST_TEST_REQUIRE(g.last_report().nodes.size() == 1u);
    o.node = g.last_report().nodes[0];
    BOOST_TEST_MESSAGE("after " << o.took.count() << " ms, peak RSS +" << o.peak_growth / MiB
                                << " MiB, " << fake.bytes_sent() / MiB
                                << " MiB sent: " << g.last_report().to_string());
    return o;
}

BOOST_AUTO_TEST_SUITE(unbounded_replies)

BOOST_AUTO_TEST_CASE(bulk_length_of_2_to_the_40)
{
    auto st = std::make_shared<stream_state>();
    fake_server fake(stream_forever("$1099511627776\r\n", std::string(4096, 'x'), 1024 * MiB, st));
    outcome o = acquire_against(fake);
    BOOST_TEST(o.ec == redlock::error::failed);
    BOOST_TEST(o.node.status == node_status::error);
    BOOST_TEST(contains(o.node.detail, "protocol error from " + fake.endpoint()), o.node.detail);
    BOOST_TEST(contains(o.node.detail, "larger than"), o.node.detail);
    BOOST_TEST((o.took < 4s), "took " << o.took.count() << " ms");
    BOOST_TEST(!st->over_limit);
    BOOST_TEST(o.peak_growth < rss_limit, "peak RSS growth " << o.peak_growth / MiB << " MiB");
    // The client stopped reading soon after its cap, and closed the connection.
    BOOST_TEST(fake.bytes_sent() < 256 * MiB);
}

// A line that never ends (a reader that searched it from its start after every read would
// take time quadratic in its length): the node fails at the decoder's line limit, in linear
// time.
BOOST_AUTO_TEST_CASE(line_that_never_ends)
{
    auto st = std::make_shared<stream_state>();
    fake_server fake(stream_forever("+", std::string(4096, '\r'), 1024 * MiB, st));
    outcome o = acquire_against(fake);
    BOOST_TEST(o.ec == redlock::error::failed);
    BOOST_TEST(o.node.status == node_status::error, "status " << to_string(o.node.status));
    BOOST_TEST(contains(o.node.detail, "protocol error from " + fake.endpoint()), o.node.detail);
    BOOST_TEST((o.took < 4s), "took " << o.took.count() << " ms");
    BOOST_TEST(!st->over_limit);
}

// An array header of 2^31 - 1 elements, then elements for as long as the client reads: a
// decoded element takes far more memory than its 4 bytes on the wire, so the cap must count
// what the reply takes decoded (and refuses this header at once), not only the bytes
// buffered.
BOOST_AUTO_TEST_CASE(array_of_2_to_the_31_elements)
{
    auto st = std::make_shared<stream_state>();
    fake_server fake(stream_forever("*2147483647\r\n", ":1\r\n", 1024 * MiB, st));
    outcome o = acquire_against(fake);
    BOOST_TEST(o.ec == redlock::error::failed);
    BOOST_TEST(!st->over_limit, "this process grew by more than "
                                    << rss_limit / MiB << " MiB while the reply streamed in ("
                                    << fake.bytes_sent() / MiB << " MiB sent)");
    BOOST_TEST(o.node.status == node_status::error, "status " << to_string(o.node.status));
    BOOST_TEST(contains(o.node.detail, "protocol error from " + fake.endpoint()), o.node.detail);
    BOOST_TEST((o.took < 4s), "took " << o.took.count() << " ms");
}

// 13 bytes, then the connection closes: dropping the unfinished array (decoder::reset, when
// the connection fails) must take no time in proportion to the announced count, or the
// client's strand, and every lock on it, would stall.
BOOST_AUTO_TEST_CASE(array_header_then_close)
{
    fake_server fake([](fake_session& s) -> asio::awaitable<void> {
        if (co_await s.read_command()) {
            co_await s.send("*2147483647\r\n");
        }
        s.close();
    });
    asio::io_context io;
    redlock::client c(io.get_executor(), config_of({fake.node()}));
    auto m = c.make_mutex("freeze", {.expiry = 2s, .tries = 1});
    const auto start = steady::now();
    auto [ec, g] = run(io, try_get(m, true), 60s);
    const auto took = since(start);
    BOOST_TEST_MESSAGE("after " << took.count() << " ms: " << g.last_report().to_string());
    BOOST_TEST(ec == redlock::error::failed);
    expect_clear_failure(g.last_report().nodes.at(0), "acquire");
    // The per-node deadline is 100 ms.
    BOOST_TEST((took < 1s), "took " << took.count() << " ms");
}

// The same array bomb on the pub/sub connection of wake-ups, where no per-request deadline
// stops the reader: only the decoder's cap bounds memory, even after the acquire that
// subscribed has completed.
BOOST_AUTO_TEST_CASE(array_of_2_to_the_31_elements_on_the_pubsub_connection)
{
    auto st = std::make_shared<stream_state>();
    fake_server fake([st](fake_session& s) -> asio::awaitable<void> {
        auto first = co_await s.read_command();
        if (!first) {
            co_return;
        }
        if (first->at(0) == "SUBSCRIBE") {
            if (co_await s.send("*2147483647\r\n")) {
                co_await stream_units(s, ":1\r\n", 1024 * MiB, st);
            }
            co_return;
        }
        // The lock connection: the key is always taken, and a release finds it not ours.
        for (auto cmd = std::move(first); cmd; cmd = co_await s.read_command()) {
            co_await s.send(cmd->at(0) == "SET" ? "$-1\r\n" : ":-1\r\n");
        }
    });
    asio::io_context io;
    redlock::client c(io.get_executor(), config_of({fake.node()}));
    auto m = c.make_mutex("woken", {.expiry = 2s, .tries = 2, .retry_delay = 300ms});
    auto [ec, g] = run(io, try_get(m), 30s);
    BOOST_TEST(ec == redlock::error::taken);
    BOOST_TEST(fake.count("SUBSCRIBE") == 1u);
    // Nobody waits any more; the client has nothing left to do but read.
    run(
        io,
        [&]() -> asio::awaitable<int> {
            asio::steady_timer t(io, 3s);
            co_await t.async_wait(asio::use_awaitable);
            co_return 0;
        }(),
        30s);
    BOOST_TEST_MESSAGE("pub/sub bomb: peak growth " << st->peak_growth / MiB << " MiB, "
                                                    << fake.bytes_sent() / MiB << " MiB sent");
    BOOST_TEST(!st->over_limit, "this process grew by more than "
                                    << rss_limit / MiB << " MiB on the pub/sub connection");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(decoder_bounds)

// The same bounds on the decoder alone, without sockets.
BOOST_AUTO_TEST_CASE(an_unfinished_array_is_bounded_by_the_cap)
{
    constexpr std::size_t cap = MiB;
    resp::decoder d(cap);
    const std::string head = "*2147483647\r\n";
    std::string chunk;
    while (chunk.size() < 16 * 1024) {
        chunk += ":1\r\n";
    }
    const std::size_t base = resident_bytes();
    std::size_t fed = 0;
    bool ok = d.feed(head.data(), head.size());
    while (ok && fed < 8 * MiB) {
        BOOST_TEST_REQUIRE(!d.next().has_value());
        if (!d.error().empty()) {
            break;
        }
        ok = d.feed(chunk.data(), chunk.size());
        fed += chunk.size();
    }
    const std::size_t now = resident_bytes();
    const std::size_t growth = now > base ? now - base : 0;
    BOOST_TEST_MESSAGE("fed " << fed / 1024 << " KiB of elements: RSS +" << growth / MiB
                              << " MiB, error '" << d.error() << "'");
    BOOST_TEST(!d.error().empty(), "8 MiB of one reply fed past a 1 MiB cap without an error");
    BOOST_TEST(fed <= 2 * cap);
    BOOST_TEST(growth < 64 * MiB);
}

BOOST_AUTO_TEST_CASE(an_array_header_reserves_no_gigabytes)
{
    resp::decoder d;
    const std::string head = "*2147483647\r\n";
    const std::size_t before = virtual_bytes();
    d.feed(head.data(), head.size());
    BOOST_TEST(!d.next().has_value());
    const std::size_t after = virtual_bytes();
    const std::size_t growth = after > before ? after - before : 0;
    BOOST_TEST_MESSAGE("address space +" << growth / MiB << " MiB after an array header");
    BOOST_TEST(growth < 1024 * MiB);
}

BOOST_AUTO_TEST_CASE(dropping_an_unfinished_array_is_quick)
{
    const auto start = steady::now();
    {
        resp::decoder d;
        const std::string head = "*2147483647\r\n";
        d.feed(head.data(), head.size());
        BOOST_TEST(!d.next().has_value());
        d.reset();
    }
    const auto took = since(start);
    BOOST_TEST_MESSAGE("an array header, then reset: " << took.count() << " ms");
    BOOST_TEST((took < 100ms), "took " << took.count() << " ms");
}

BOOST_AUTO_TEST_CASE(an_endless_line_is_decoded_in_linear_time)
{
    resp::decoder d;  // default cap: 64 MiB
    const std::string chunk(16 * 1024, '\r');
    const auto start = steady::now();
    bool ok = d.feed("+", 1);
    std::size_t fed = 0;
    while (ok && fed < 16 * MiB) {
        BOOST_TEST_REQUIRE(!d.next().has_value());
        ok = d.feed(chunk.data(), chunk.size());
        fed += chunk.size();
    }
    const auto took = since(start);
    BOOST_TEST_MESSAGE("16 MiB of one unfinished line, fed 16 KiB at a time: " << took.count()
                                                                               << " ms");
    // Linear: a few ms per MiB. Quadratic (rescanning from the start each time): seconds.
    BOOST_TEST((took < 1500ms), "took " << took.count() << " ms");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
