// SPDX-License-Identifier: BSL-1.0
// The fair lock against real redis-servers: grants in the order waiters joined the queue on
// one server and over three masters, try_acquire refused while someone is queued, a cancelled
// waiter leaving at once, a crashed one (and entries written by hand) no longer in the way
// within the stated bound, fencing tokens, a cluster and a Sentinel node.

#include <redlock/blocking.hpp>

#include "fixture.hpp"
#include "sentinel_deployment.hpp"

#include <algorithm>
#include <memory>
#include <sstream>
#include <thread>

namespace redlock::test {
namespace {

using boost::system::error_code;

std::string queue_of(const std::string& key)
{
    return "redlock:queue:" + key;
}
std::string states_of(const std::string& key)
{
    return "redlock:queue-state:" + key;
}
std::string expiries_of(const std::string& key)
{
    return "redlock:queue-expiry:" + key;
}

// How many entries of `key`'s queue are committed on the server at `port`.
long long committed_on(std::uint16_t port, const std::string& key)
{
    return committed_entries(port, states_of(key));
}

// Whether `entries` entries of `key`'s queue are committed on a majority of `ports`: the
// waiters that made them have joined the queue.
bool joined(const std::vector<std::uint16_t>& ports, const std::string& key, long long entries)
{
    const auto on = std::count_if(ports.begin(), ports.end(),
                                  [&](std::uint16_t p) { return committed_on(p, key) >= entries; });
    return static_cast<std::size_t>(on) >= ports.size() / 2 + 1;
}

// An entry as the join script writes it, by hand: `state` 'c' (committed) or 'p' (pending),
// at `score`, expiring `ttl_ms` from now by the server's clock.
void entry_by_hand(std::uint16_t port, const std::string& key, const std::string& value,
                   long long score, char state, long long ttl_ms)
{
    redis_command(port, {"ZADD", queue_of(key), std::to_string(score), value});
    redis_command(port, {"HSET", states_of(key), value, std::string(1, state)});
    redis_command(port,
                  {"ZADD", expiries_of(key), std::to_string(server_ms(port) + ttl_ms), value});
}

std::vector<std::uint16_t> ports_of(const redis_cluster& nodes)
{
    std::vector<std::uint16_t> ports;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        ports.push_back(nodes[i].port());
    }
    return ports;
}

// Pairs of waiters granted in the opposite order of their joining.
int overtakings(const std::vector<int>& granted)
{
    int n = 0;
    for (std::size_t i = 0; i < granted.size(); ++i) {
        for (std::size_t j = i + 1; j < granted.size(); ++j) {
            n += granted[j] < granted[i] ? 1 : 0;
        }
    }
    return n;
}

// `waiters` clients join the queue of "fifo" one after the other while another client holds
// the lock; then it releases, and each waiter holds it a moment in turn. Returns the waiters
// in the order they were granted, and how long the whole line took from the release.
std::pair<std::vector<int>, std::chrono::milliseconds> grant_order(
    const std::vector<std::string>& urls, const std::vector<std::uint16_t>& ports, int waiters)
{
    asio::io_context io;
    const redlock::options fair{.expiry = 20s, .fair = true};
    redlock::client holder(io.get_executor(), config::from_urls(urls));
    std::vector<std::unique_ptr<redlock::client>> clients;
    std::vector<int> granted;
    int done = 0;
    steady::time_point released{};
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard held = co_await holder.make_mutex("fifo", fair).acquire();
        for (int i = 0; i < waiters; ++i) {
            clients.push_back(
                std::make_unique<redlock::client>(io.get_executor(), config::from_urls(urls)));
            asio::co_spawn(
                io,
                [&, i,
                 m = clients.back()->make_mutex("fifo", fair)]() mutable -> asio::awaitable<void> {
                    redlock::guard g = co_await m.acquire();
                    granted.push_back(i);
                    asio::steady_timer hold(co_await asio::this_coro::executor, 5ms);
                    co_await hold.async_wait(asio::use_awaitable);
                    co_await g.release();
                    ++done;
                },
                asio::detached);
            // The holder's entry and those of the waiters so far.
            BOOST_TEST_REQUIRE(co_await settles([&] { return joined(ports, "fifo", i + 2); }));
        }
        released = steady::now();
        co_await held.release();
        BOOST_TEST(co_await settles([&] { return done == waiters; }, 20s));
        co_return 0;
    }());
    return {granted, since(released)};
}

asio::awaitable<redlock::guard> take(redlock::mutex m)
{
    co_return co_await m.acquire();
}

asio::awaitable<int> give_back(redlock::guard& g)
{
    co_await g.release();
    co_return 0;
}

asio::awaitable<std::tuple<error_code, redlock::guard>> try_fair(redlock::mutex m)
{
    co_return co_await m.async_try_acquire(asio::as_tuple(asio::use_awaitable));
}

// While `held` is held, an acquire of `next` joins the queue (`queued` says when it has);
// `meanwhile` runs; then `held` is released, and `next`'s guard is returned once granted.
asio::awaitable<redlock::guard> next_in_line(redlock::guard& held, redlock::mutex next,
                                             std::function<bool()> queued,
                                             std::function<asio::awaitable<void>()> meanwhile = {})
{
    // No co_await in the statement that makes the lambda: with one there, GCC 12 destroyed
    // the lambda's captures twice (the shared_ptr's count went wrong).
    auto granted = std::make_shared<redlock::guard>();
    const auto executor = co_await asio::this_coro::executor;
    asio::co_spawn(
        executor,
        [granted, next]() mutable -> asio::awaitable<void> { *granted = co_await next.acquire(); },
        asio::detached);
    BOOST_TEST_REQUIRE(co_await settles(std::move(queued)));
    if (meanwhile) {
        co_await meanwhile();
    }
    co_await held.release();
    BOOST_TEST(co_await settles([&granted] { return granted->owns_lock(); }));
    co_return std::move(*granted);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fair)

BOOST_AUTO_TEST_CASE(waiters_are_granted_in_the_order_they_joined_on_one_server_and_three_masters)
{
    for (std::size_t n : {1u, 3u}) {
        BOOST_TEST_CONTEXT(n << " node(s)")
        {
            redis_cluster nodes(n);
            const auto [granted, took] = grant_order(nodes.urls(), ports_of(nodes), 6);
            BOOST_TEST(granted == (std::vector<int>{0, 1, 2, 3, 4, 5}));
            BOOST_TEST(overtakings(granted) == 0);
            // Each was told of its turn: none waited for its refresh period (5 s).
            BOOST_TEST((took < 4s), took.count() << " ms");
            // The last release took the last entry with it.
            for (std::uint16_t p : ports_of(nodes)) {
                BOOST_TEST(redis_command(p, {"EXISTS", "fifo", queue_of("fifo")}) == "0");
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(clients_that_come_back_at_once_are_served_in_turn)
{
    redis_cluster nodes(3);
    asio::io_context io;
    const redlock::options fair{.expiry = 20s, .fair = true};
    constexpr int clients = 4;
    constexpr int rounds = 5;
    std::vector<std::unique_ptr<redlock::client>> owners;
    std::vector<int> granted;
    int done = 0;
    const auto start = steady::now();
    for (int c = 0; c < clients; ++c) {
        owners.push_back(
            std::make_unique<redlock::client>(io.get_executor(), config::from_urls(nodes.urls())));
        asio::co_spawn(
            io,
            [&, c,
             m = owners.back()->make_mutex("turns", fair)]() mutable -> asio::awaitable<void> {
                asio::steady_timer hold(co_await asio::this_coro::executor);
                for (int r = 0; r < rounds; ++r) {
                    redlock::guard g = co_await m.acquire();
                    granted.push_back(c);
                    hold.expires_after(30ms);  // the others come back to the queue meanwhile
                    co_await hold.async_wait(asio::use_awaitable);
                    co_await g.release();
                }
                ++done;
            },
            asio::detached);
    }
    run(io, [&]() -> asio::awaitable<int> {
        BOOST_TEST(co_await settles([&] { return done == clients; }, 20s));
        co_return 0;
    }());
    // Between two grants of one client, every client still coming back got one: a client that
    // releases joins the queue behind those that wait.
    std::string order;
    for (int c : granted) {
        order += static_cast<char>('a' + c);
    }
    for (std::size_t i = 0; i + clients <= granted.size(); ++i) {
        std::vector<int> window(granted.begin() + static_cast<std::ptrdiff_t>(i),
                                granted.begin() + static_cast<std::ptrdiff_t>(i + clients));
        std::sort(window.begin(), window.end());
        BOOST_TEST((std::unique(window.begin(), window.end()) == window.end()), order);
    }
    // Nobody waited for a refresh period (5 s): each was told of its turn.
    BOOST_TEST((since(start) < 4s), since(start).count() << " ms");
}

BOOST_AUTO_TEST_CASE(the_order_holds_with_a_node_stopped)
{
    redis_cluster nodes(3);
    nodes[2].pause();
    // The two that answer: joining is seen on both, a majority of three.
    const std::vector<std::uint16_t> running{nodes[0].port(), nodes[1].port()};
    const auto [granted, took] = grant_order(nodes.urls(), running, 4);
    BOOST_TEST(granted == (std::vector<int>{0, 1, 2, 3}));
    BOOST_TEST(overtakings(granted) == 0);
    // The stopped node costs each client one per-node deadline (1 s) at most, not a refresh
    // period each time.
    BOOST_TEST((took < 4s), took.count() << " ms");
    nodes[2].resume();
}

BOOST_AUTO_TEST_CASE(a_release_wakes_the_head_alone)
{
    redis_cluster nodes(1);
    const std::uint16_t port = nodes[0].port();
    asio::io_context io;
    const redlock::options fair{.expiry = 20s, .fair = true};
    redlock::client holder(io.get_executor(), config::from_urls(nodes.urls()));
    std::vector<std::unique_ptr<redlock::client>> clients;
    std::vector<redlock::guard> guards(4);
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard held = co_await holder.make_mutex("bell", fair).acquire();
        for (std::size_t i = 0; i < guards.size(); ++i) {
            clients.push_back(std::make_unique<redlock::client>(io.get_executor(),
                                                                config::from_urls(nodes.urls())));
            asio::co_spawn(
                io,
                [&, i, m = clients.back()->make_mutex("bell", fair)]() mutable
                -> asio::awaitable<void> { guards[i] = co_await m.acquire(); },
                asio::detached);
            BOOST_TEST_REQUIRE(co_await settles([&] { return joined({port}, "bell", i + 2); }));
        }
        // Past their first wait (the retry delay, at most 250 ms): each waits for its turn now,
        // up to its refresh period of 5 s.
        asio::steady_timer settle(io, 400ms);
        co_await settle.async_wait(asio::use_awaitable);
        // Each waiting client listens on a channel of its own, not on the lock's: a release's
        // message reaches the one client it is for.
        BOOST_TEST(redis_command(port, {"PUBSUB", "NUMSUB", "redlock:released:bell"}) ==
                   "redlock:released:bell 0");
        const std::string own =
            redis_command(port, {"PUBSUB", "CHANNELS", "redlock:released:bell/*"});
        BOOST_TEST(std::count(own.begin(), own.end(), '/') == 4);
        const long scripts_before = command_calls(port, "evalsha") + command_calls(port, "eval");
        const auto released_at = std::chrono::steady_clock::now();
        co_await held.release();
        BOOST_TEST(co_await settles([&] { return guards[0].owns_lock(); }));
        // Quiet a moment: another waiter woken would attempt now.
        settle.expires_after(100ms);
        co_await settle.async_wait(asio::use_awaitable);
        // The release alone: it handed the key to the head, which made no attempt, and no other
        // waiter tried.
        const long scripts = command_calls(port, "evalsha") + command_calls(port, "eval");
        BOOST_TEST(scripts - scripts_before == 1);
        // Handed over for what was left of the head's entry (15 s at most, from its last
        // clean-up, before the release): the validity counts from that clean-up.
        BOOST_TEST((guards[0].until() < released_at + 15s));
        BOOST_TEST(std::stoll(redis_command(port, {"PTTL", "bell"})) <= 15'000);
        for (std::size_t i = 1; i < guards.size(); ++i) {
            BOOST_TEST(!guards[i].owns_lock());
        }
        co_await guards[0].release();
        BOOST_TEST(co_await settles([&] { return guards[1].owns_lock(); }));
        co_await guards[1].release();
        BOOST_TEST(co_await settles([&] { return guards[2].owns_lock(); }));
        co_await guards[2].release();
        BOOST_TEST(co_await settles([&] { return guards[3].owns_lock(); }));
        co_await guards[3].release();
        co_return 0;
    }());
}

// A fenced waiter needs a token, which only its own attempt gets: a release names it, and it
// attempts.
BOOST_AUTO_TEST_CASE(a_fenced_head_is_named_and_attempts)
{
    redis_cluster nodes(1);
    const std::uint16_t port = nodes[0].port();
    asio::io_context io;
    const redlock::options fenced{.expiry = 20s, .fencing = true, .fair = true};
    redlock::client holder(io.get_executor(), config::from_urls(nodes.urls()));
    redlock::client waiter(io.get_executor(), config::from_urls(nodes.urls()));
    redlock::guard next;
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard held = co_await holder.make_mutex("till", fenced).acquire();
        asio::co_spawn(
            io,
            [&, m = waiter.make_mutex("till", fenced)]() mutable -> asio::awaitable<void> {
                next = co_await m.acquire();
            },
            asio::detached);
        BOOST_TEST_REQUIRE(co_await settles([&] { return joined({port}, "till", 2); }));
        asio::steady_timer settle(io, 400ms);  // past its first wait
        co_await settle.async_wait(asio::use_awaitable);
        const long before = command_calls(port, "evalsha") + command_calls(port, "eval");
        co_await held.release();
        BOOST_TEST(co_await settles([&] { return next.owns_lock(); }));
        const long scripts = command_calls(port, "evalsha") + command_calls(port, "eval");
        // The release, then the head's attempt and the write-back of its token.
        BOOST_TEST(scripts - before == 3);
        BOOST_TEST(next.fencing_token() > held.fencing_token());
        co_await next.release();
        co_return 0;
    }());
}

// Three masters and three clients of them; entries live 15 s unrefreshed.
struct three_clients
{
    redis_cluster nodes{3};
    asio::io_context io;
    redlock::client a{io.get_executor(), config::from_urls(nodes.urls())};
    redlock::client b{io.get_executor(), config::from_urls(nodes.urls())};
    redlock::client c{io.get_executor(), config::from_urls(nodes.urls())};
    const redlock::options fair{.expiry = 20s, .fair = true};
    const std::vector<std::uint16_t> ports = ports_of(nodes);
};

BOOST_FIXTURE_TEST_CASE(try_acquire_succeeds_only_when_the_lock_is_free_and_nobody_is_queued,
                        three_clients)
{
    auto ma = a.make_mutex("desk", fair);
    auto mb = b.make_mutex("desk", fair);
    auto mc = c.make_mutex("desk", fair);
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard held = co_await ma.acquire();
        redlock::guard next = co_await next_in_line(
            held, mb, [&] { return joined(ports, "desk", 2); },
            [&]() -> asio::awaitable<void> {
                auto [held_and_queued, none] = co_await try_fair(mc);
                BOOST_TEST(held_and_queued == redlock::error::taken);
            });
        co_await next.release();
        // Free, and an entry still queued (written by hand, committed): refused.
        for (std::uint16_t p : ports) {
            entry_by_hand(p, "desk", "someone", 1, 'c', 60000);
        }
        auto [queued, none2] = co_await try_fair(mc);
        BOOST_TEST(queued == redlock::error::taken);
        BOOST_TEST(mc.last_report().nodes.at(0).status == node_status::taken);
        for (std::uint16_t p : ports) {
            redis_command(p, {"DEL", queue_of("desk"), states_of("desk"), expiries_of("desk")});
        }
        // Free, nobody queued: granted, without joining.
        auto [ec, g] = co_await try_fair(mc);
        BOOST_TEST(!ec);
        BOOST_TEST(g.owns_lock());
        BOOST_TEST(redis_command(ports[0], {"EXISTS", queue_of("desk")}) == "0");
        co_await g.release();
        co_return 0;
    }());
}

// Entries live 15 s unrefreshed: only leaving lets the next waiter in sooner.
BOOST_FIXTURE_TEST_CASE(a_cancelled_waiter_leaves_the_queue_at_once, three_clients)
{
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard held = co_await a.make_mutex("till", fair).acquire();
        asio::cancellation_signal cancel;
        std::optional<error_code> cancelled;
        b.make_mutex("till", fair)
            .async_acquire(asio::bind_cancellation_slot(
                cancel.slot(), [&](error_code ec, redlock::guard) { cancelled = ec; }));
        BOOST_TEST_REQUIRE(co_await settles([&] { return joined(ports, "till", 2); }));
        redlock::guard third;
        asio::co_spawn(
            io,
            [&, m = c.make_mutex("till", fair)]() mutable -> asio::awaitable<void> {
                third = co_await m.acquire();
            },
            asio::detached);
        BOOST_TEST_REQUIRE(co_await settles([&] { return joined(ports, "till", 3); }));
        cancel.emit(asio::cancellation_type::terminal);
        BOOST_TEST(co_await settles([&] { return cancelled.has_value(); }));
        BOOST_TEST((cancelled == asio::error::operation_aborted));
        // Its entry is gone from every node.
        BOOST_TEST(co_await settles([&] {
            return std::all_of(ports.begin(), ports.end(),
                               [](std::uint16_t p) { return committed_on(p, "till") == 2; });
        }));
        const auto released = steady::now();
        co_await held.release();
        BOOST_TEST(co_await settles([&] { return third.owns_lock(); }, 5s));
        BOOST_TEST((since(released) < 2s));
        co_await third.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(a_crashed_waiter_stops_holding_up_the_queue_within_one_expiry)
{
    redis_cluster nodes(3);
    const auto ports = ports_of(nodes);
    asio::io_context io;
    asio::io_context frozen;  // the crashed process: never run again once it has joined
    redlock::client a(io.get_executor(), config::from_urls(nodes.urls()));
    redlock::client b(io.get_executor(), config::from_urls(nodes.urls()));
    redlock::client x(frozen.get_executor(), config::from_urls(nodes.urls()));
    // Refresh every 300 ms, entries live 900 ms unrefreshed: the bound is 1200 ms.
    const redlock::options fair{.expiry = 1200ms, .fair = true};
    redlock::guard held = run(io, take(a.make_mutex("oven", {.expiry = 20s, .fair = true})));
    x.make_mutex("oven", fair).async_acquire([](error_code, redlock::guard) {});
    const auto deadline = steady::now() + 5s;
    while (!joined(ports, "oven", 2) && steady::now() < deadline) {
        frozen.run_one_for(10ms);
    }
    BOOST_TEST_REQUIRE(joined(ports, "oven", 2));
    const auto crashed = steady::now();
    run(io, [&]() -> asio::awaitable<int> {
        redlock::guard g;
        asio::co_spawn(
            io,
            [&, m = b.make_mutex("oven", fair)]() mutable -> asio::awaitable<void> {
                g = co_await m.acquire();
            },
            asio::detached);
        BOOST_TEST_REQUIRE(co_await settles([&] { return joined(ports, "oven", 3); }));
        co_await held.release();
        // The crashed waiter is the head now, and says nothing: the next one gets the lock
        // once its entry expired, by its own refresh.
        BOOST_TEST(co_await settles([&] { return g.owns_lock(); }, 5s));
        BOOST_TEST((since(crashed) < 1200ms + 400ms), since(crashed).count() << " ms");
        co_await g.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(entries_written_by_hand_hold_up_the_head_until_they_expire)
{
    redis_cluster nodes(1);
    const std::uint16_t port = nodes[0].port();
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls(nodes.urls()));
    // Refresh every 250 ms.
    auto m = c.make_mutex("kiln", {.expiry = 1s, .fair = true});
    for (char state : {'p', 'c'}) {
        BOOST_TEST_CONTEXT((state == 'p' ? "a pending entry" : "a committed entry"))
        {
            // Ahead of any ticket the server hands out: a pending one, which could still be
            // committed below the waiter's ticket, or a committed one.
            entry_by_hand(port, "kiln", "gone", 5, state, 400);
            const auto start = steady::now();
            redlock::guard g = run(io, take(m));
            BOOST_TEST(g.owns_lock());
            BOOST_TEST((since(start) >= 350ms), since(start).count() << " ms");
            BOOST_TEST((since(start) < 400ms + 250ms + 400ms), since(start).count() << " ms");
            run(io, give_back(g));
        }
    }
}

BOOST_AUTO_TEST_CASE(fencing_tokens_grow_in_the_queues_order)
{
    redis_cluster nodes(3);
    asio::io_context io;
    redlock::client a(io.get_executor(), config::from_urls(nodes.urls()));
    redlock::client b(io.get_executor(), config::from_urls(nodes.urls()));
    const redlock::options fenced{.expiry = 20s, .fencing = true, .fair = true};
    const auto ports = ports_of(nodes);
    run(io, [&]() -> asio::awaitable<int> {
        redlock::mutex waiter = b.make_mutex("ledger", fenced);
        redlock::guard first = co_await a.make_mutex("ledger", fenced).acquire();
        BOOST_TEST(first.fencing_token() > 0u);
        redlock::guard second =
            co_await next_in_line(first, waiter, [&] { return joined(ports, "ledger", 2); });
        BOOST_TEST(second.fencing_token() > first.fencing_token());
        co_await second.release();
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(a_blocking_mutex_queues_its_thread)
{
    redis_cluster nodes(3);
    const auto ports = ports_of(nodes);
    const auto cfg = config::from_urls(nodes.urls());
    const redlock::options fair{.expiry = 20s, .fair = true};
    blocking::client holder(cfg);
    blocking::client waiter(cfg);
    blocking::client other(cfg);
    blocking::mutex held = holder.make_mutex("bench", fair);
    blocking::mutex queued = waiter.make_mutex("bench", fair);
    blocking::mutex late = other.make_mutex("bench", fair);
    held.lock();
    std::atomic<bool> got{false};
    std::thread t([&] {
        std::unique_lock lock(queued, std::defer_lock);
        got = lock.try_lock_for(10s);  // bounded, in case the queue fails it
    });
    BOOST_TEST(eventually([&] { return joined(ports, "bench", 2); }));
    // Free or not, a place in the queue is taken: try_lock is refused.
    BOOST_TEST(!late.try_lock());
    held.unlock();
    t.join();
    BOOST_TEST(got.load());
    BOOST_TEST(late.try_lock());
    late.unlock();
}

BOOST_AUTO_TEST_CASE(options_a_fair_lock_cannot_have_are_refused)
{
    asio::io_context io;
    redlock::client c(io.get_executor(), config::from_urls({"redis://127.0.0.1:1"}));
    BOOST_CHECK_THROW(c.make_multi_mutex({"a", "b"}, {.fair = true}), boost::system::system_error);
    BOOST_CHECK_THROW(c.make_mutex("a", {.reentrant = true, .fair = true}),
                      boost::system::system_error);
    // Two waiters with one fixed value would both hold a key handed to it.
    BOOST_CHECK_THROW(c.make_mutex("a", {.value = "mine", .fair = true}),
                      boost::system::system_error);
    BOOST_CHECK_THROW(c.make_semaphore("a", 2, {.fair = true}), boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(a_cluster_node_keeps_the_queue_in_the_names_slot)
{
    cluster_deployment d(3);
    asio::io_context io;
    redlock::client a(io.get_executor(), config::from_urls({d.url()}));
    redlock::client b(io.get_executor(), config::from_urls({d.url()}));
    const redlock::options fair{.expiry = 20s, .fair = true};
    const auto master = d.owner_of_slot(cluster_deployment::slot_of("press"));
    BOOST_TEST_REQUIRE(master.has_value());
    const std::vector<std::uint16_t> port{d[*master].port()};
    run(io, [&]() -> asio::awaitable<int> {
        redlock::mutex waiter = b.make_mutex("press", fair);
        redlock::guard held = co_await a.make_mutex("press", fair).acquire();
        // Named after the lock, in its slot (the queue's names hold it as a hash tag).
        const std::string states = "redlock:queue-state:{press}";
        BOOST_TEST(cluster_deployment::slot_of(states) == cluster_deployment::slot_of("press"));
        redlock::guard next = co_await next_in_line(
            held, waiter, [&] { return committed_entries(port[0], states) == 2; },
            [&]() -> asio::awaitable<void> {
                auto [ec, none] = co_await try_fair(waiter);
                BOOST_TEST(ec == redlock::error::taken);
            });
        co_await next.release();
        BOOST_TEST(redis_command(port[0], {"EXISTS", "press", states}) == "0");
        co_return 0;
    }());
}

BOOST_AUTO_TEST_CASE(a_sentinel_node_queues_on_its_master)
{
    sentinel_deployment d;
    asio::io_context io;
    redlock::client a(io.get_executor(), config::from_urls({d.url()}));
    redlock::client b(io.get_executor(), config::from_urls({d.url()}));
    // Granted only once the replica acknowledged the key.
    const redlock::options fair{.expiry = 20s, .wait_for_replicas = 1, .fair = true};
    const std::vector<std::uint16_t> port{d.master.port()};
    run(io, [&]() -> asio::awaitable<int> {
        redlock::mutex waiter = b.make_mutex("mill", fair);
        redlock::guard held = co_await a.make_mutex("mill", fair).acquire();
        redlock::guard next =
            co_await next_in_line(held, waiter, [&] { return joined(port, "mill", 2); });
        BOOST_TEST(next.owns_lock());
        co_await next.release();
        co_return 0;
    }());
    // Each grant waited for the replica: the holder's, and the waiter's at least once.
    BOOST_TEST(command_calls(d.master.port(), "wait") >= 2);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace redlock::test
