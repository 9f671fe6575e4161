// SPDX-License-Identifier: BSL-1.0
// The blocking facade against real servers, from the test's own thread: the standard lock
// types, what returns false and what throws, the accessors, and the client's destructor. The
// tests with several threads are in tests/threaded (run under ThreadSanitizer too).

#include <redlock/blocking.hpp>

#include "fixture.hpp"

#include <boost/asio/post.hpp>

#include <future>
#include <mutex>

namespace redlock::test {
namespace {

using boost::system::error_code;
namespace errc = boost::system::errc;

static_assert(!std::is_copy_constructible_v<blocking::client>);
static_assert(std::is_copy_constructible_v<blocking::mutex>);

// Runs `f` and returns the code of the boost::system::system_error it throws (and its
// message in `what`); fails the test when it throws nothing.
template <class F>
error_code thrown_by(F f, std::string* what = nullptr)
{
    try {
        f();
    } catch (const boost::system::system_error& e) {
        if (what != nullptr) {
            *what = e.what();
        }
        return e.code();
    }
    BOOST_ERROR("no boost::system::system_error was thrown");
    return {};
}

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

std::string port_url(std::uint16_t port, const std::string& password = {})
{
    return "redis://" + (password.empty() ? "" : ":" + password + "@") +
           "127.0.0.1:" + std::to_string(port);
}

BOOST_AUTO_TEST_SUITE(blocking_facade)

BOOST_FIXTURE_TEST_CASE(unique_lock_holds_the_key_and_its_end_deletes_it, five_nodes)
{
    blocking::client c(config());
    blocking::mutex m = c.make_mutex("blocking:order", {.expiry = 10s});
    {
        std::unique_lock held(m);
        BOOST_TEST(held.owns_lock());
        BOOST_TEST(m.owns_lock());
        BOOST_TEST_REQUIRE(eventually([&] { return value_on(0, "blocking:order").has_value(); }));
        BOOST_TEST(holding("blocking:order", *value_on(0, "blocking:order")) >= 3u);
        BOOST_TEST((m.until() > steady::now() + 9s));
        BOOST_TEST((m.until() <= steady::now() + 10s));
        BOOST_TEST(m.last_report().nodes.size() == 5u);
        BOOST_TEST(m.last_report().count(node_status::ok) >= 3u);
    }
    BOOST_TEST(!m.owns_lock());
    // unlock() returned once a quorum confirmed the delete; the others follow.
    std::size_t gone = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        gone += value_on(i, "blocking:order").has_value() ? 0 : 1;
    }
    BOOST_TEST(gone >= 3u);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(eventually([&] { return !value_on(i, "blocking:order").has_value(); }));
    }
}

BOOST_FIXTURE_TEST_CASE(scoped_lock_takes_two_mutexes, five_nodes)
{
    blocking::client c(config());
    blocking::mutex a = c.make_mutex("blocking:a", {.expiry = 10s});
    blocking::mutex b = c.make_mutex("blocking:b", {.expiry = 10s});
    {
        std::scoped_lock both(a, b);
        BOOST_TEST(a.owns_lock());
        BOOST_TEST(b.owns_lock());
    }
    BOOST_TEST(!a.owns_lock());
    BOOST_TEST(!b.owns_lock());
}

BOOST_FIXTURE_TEST_CASE(try_lock_is_false_while_another_owner_holds_it, five_nodes)
{
    blocking::client holder(config());
    blocking::client other(config());
    blocking::mutex held = holder.make_mutex("blocking:busy", {.expiry = 10s});
    blocking::mutex m = other.make_mutex("blocking:busy", {.expiry = 10s});
    held.lock();

    auto start = steady::now();
    BOOST_TEST(!m.try_lock());
    BOOST_TEST(!m.owns_lock());
    BOOST_TEST(m.last_report().count(node_status::taken) == 5u);
    BOOST_TEST(m.last_report().attempts == 1);

    // try_lock_for waits out its timeout, and not much longer (one attempt's per-node
    // deadline, 500 ms here, plus scheduling).
    start = steady::now();
    BOOST_TEST(!m.try_lock_for(400ms));
    const auto waited = since(start);
    BOOST_TEST(waited.count() >= 400);
    BOOST_TEST(waited.count() < 400 + 500 + 1000);

    start = steady::now();
    BOOST_TEST(!m.try_lock_until(std::chrono::system_clock::now() + 300ms));
    BOOST_TEST(since(start).count() >= 250);
    // A deadline in the past is one attempt.
    BOOST_TEST(!m.try_lock_until(steady::now() - 1s));

    // The same with the standard lock types.
    std::unique_lock<blocking::mutex> none(m, std::try_to_lock);
    BOOST_TEST(!none.owns_lock());
    std::unique_lock<blocking::mutex> timed(m, 50ms);
    BOOST_TEST(!timed.owns_lock());

    held.unlock();
    BOOST_TEST(m.try_lock());
    BOOST_TEST(m.owns_lock());
    m.unlock();
}

BOOST_FIXTURE_TEST_CASE(try_lock_for_gets_the_lock_when_the_holder_releases, five_nodes)
{
    // One node: there a release's delete and its message are one script, so the attempt the
    // message wakes never comes before the delete.
    const redlock::config one_node = config::from_urls({nodes[0].url()});
    blocking::client holder(one_node);
    blocking::client other(one_node);
    blocking::mutex held = holder.make_mutex("blocking:handover", {.expiry = 10s});
    // A 10 s retry delay: only the release message can wake the waiter in time.
    blocking::mutex m = other.make_mutex("blocking:handover", {.expiry = 10s, .retry_delay = 10s});
    held.lock();
    auto waiter = std::async(std::launch::async, [&] {
        const auto start = steady::now();
        const bool got = m.try_lock_for(8s);
        return std::pair(got, since(start));
    });
    // Released once the waiter listens for the release (it subscribed after its attempt).
    const std::string channel = "redlock:released:blocking:handover";
    BOOST_TEST_REQUIRE(eventually([&] {
        return redis_command(nodes[0].port(), {"PUBSUB", "NUMSUB", channel}) == channel + " 1";
    }));
    held.unlock();
    BOOST_TEST_REQUIRE((waiter.wait_for(9s) == std::future_status::ready));
    const auto [got, took] = waiter.get();
    BOOST_TEST(got);
    BOOST_TEST(took.count() < 5000);
    BOOST_TEST(m.owns_lock());
    m.unlock();
}

BOOST_FIXTURE_TEST_CASE(lock_throws_taken_with_the_report_when_tries_run_out, five_nodes)
{
    blocking::client holder(config());
    blocking::client other(config());
    blocking::mutex held = holder.make_mutex("blocking:taken", {.expiry = 10s});
    blocking::mutex m =
        other.make_mutex("blocking:taken", {.expiry = 10s, .tries = 2, .retry_delay = 10ms});
    held.lock();
    std::string what;
    BOOST_TEST(thrown_by([&] { m.lock(); }, &what) == error::taken);
    BOOST_TEST(contains(what, "redlock::blocking::mutex::lock('blocking:taken') after 2 attempts"),
               what);
    BOOST_TEST(contains(what, "127.0.0.1:" + std::to_string(nodes[0].port()) + " taken"), what);
    BOOST_TEST(contains(what, make_error_code(error::taken).message()), what);
    BOOST_TEST(!m.owns_lock());
    BOOST_TEST(m.last_report().attempts == 2);
}

BOOST_AUTO_TEST_CASE(a_wrong_password_throws_misconfigured_from_every_call)
{
    redis_cluster nodes(3);
    std::vector<std::string> urls;
    for (std::size_t i = 0; i < 3; ++i) {
        BOOST_REQUIRE(redis_command(nodes[i].port(), {"CONFIG", "SET", "requirepass", "right"}) ==
                      "OK");
        urls.push_back(port_url(nodes[i].port(), "wrong"));
    }
    blocking::client c(config::from_urls(urls));
    blocking::mutex m = c.make_mutex("blocking:misconfigured");
    std::string what;
    const auto start = steady::now();
    BOOST_TEST(thrown_by([&] { m.lock(); }, &what) == error::misconfigured);
    BOOST_TEST(since(start).count() < 3000);  // one attempt, not 32
    BOOST_TEST(contains(what, "WRONGPASS"), what);
    BOOST_TEST(!contains(what, "wrong@"), what);
    // A misconfiguration is not a busy lock: the try_ calls throw too.
    BOOST_TEST(thrown_by([&] { (void)m.try_lock(); }) == error::misconfigured);
    BOOST_TEST(thrown_by([&] { (void)m.try_lock_for(2s); }) == error::misconfigured);
    BOOST_TEST(!m.owns_lock());
}

BOOST_AUTO_TEST_CASE(unreachable_nodes_throw_failed_from_try_lock)
{
    redlock::config cfg =
        config::from_urls({port_url(unused_loopback_port()), port_url(unused_loopback_port()),
                           port_url(unused_loopback_port())});
    blocking::client c(std::move(cfg));
    blocking::mutex m = c.make_mutex("blocking:nowhere", {.expiry = 2s, .tries = 3});
    std::string what;
    BOOST_TEST(thrown_by([&] { (void)m.try_lock(); }, &what) == error::failed);
    BOOST_TEST(contains(what, "connect"), what);
    BOOST_TEST(thrown_by([&] { m.lock(); }) == error::failed);
}

BOOST_FIXTURE_TEST_CASE(the_holding_thread_cannot_lock_again_unless_reentrant, five_nodes)
{
    blocking::client c(config());
    blocking::mutex m = c.make_mutex("blocking:again", {.expiry = 10s});
    m.lock();
    std::string what;
    BOOST_TEST(thrown_by([&] { m.lock(); }, &what) == errc::resource_deadlock_would_occur);
    BOOST_TEST(contains(what, "this thread holds the lock already"), what);
    BOOST_TEST(thrown_by([&] { (void)m.try_lock(); }) == errc::resource_deadlock_would_occur);
    BOOST_TEST(m.owns_lock());  // still held once
    m.unlock();
    BOOST_TEST(!m.owns_lock());

    blocking::mutex r = c.make_mutex("blocking:nested", {.expiry = 10s, .reentrant = true});
    r.lock();
    BOOST_TEST(r.try_lock());
    r.lock();
    r.unlock();
    r.unlock();
    BOOST_TEST(r.owns_lock());
    BOOST_TEST(redis_command(nodes[0].port(), {"TYPE", "blocking:nested"}) == "hash");
    r.unlock();
    BOOST_TEST(!r.owns_lock());
    BOOST_TEST(eventually([&] {
        return redis_command(nodes[0].port(), {"EXISTS", "blocking:nested"}) == "0";
    }));
}

BOOST_FIXTURE_TEST_CASE(calls_on_the_io_thread_throw_instead_of_hanging, five_nodes)
{
    blocking::client c(config());
    blocking::mutex m = c.make_mutex("blocking:io", {.expiry = 10s});
    auto on_io_thread = [&](auto f) {
        std::promise<error_code> result;
        asio::post(c.nonblocking().get_executor(), [&] {
            try {
                f();
                result.set_value({});
            } catch (const boost::system::system_error& e) {
                result.set_value(e.code());
            }
        });
        auto done = result.get_future();
        BOOST_TEST_REQUIRE((done.wait_for(10s) == std::future_status::ready));
        return done.get();
    };
    BOOST_TEST(on_io_thread([&] { m.lock(); }) == errc::resource_deadlock_would_occur);
    BOOST_TEST(on_io_thread([&] { (void)m.try_lock_for(1s); }) ==
               errc::resource_deadlock_would_occur);
    BOOST_TEST(!m.owns_lock());

    // unlock() cannot throw: there it starts the release without waiting for it.
    m.lock();
    BOOST_TEST(on_io_thread([&] { m.unlock(); }) == error_code{});
    BOOST_TEST(!m.owns_lock());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(eventually([&] { return !value_on(i, "blocking:io").has_value(); }));
    }
}

BOOST_FIXTURE_TEST_CASE(extend_valid_release_and_the_fencing_token, five_nodes)
{
    blocking::client c(config());
    blocking::mutex m = c.make_mutex("blocking:fenced", {.expiry = 2s, .fencing = true});
    m.lock();
    const std::uint64_t token = m.fencing_token();
    BOOST_TEST(token > 0u);
    const auto first_until = m.until();
    BOOST_TEST(m.valid());
    m.extend();
    BOOST_TEST((m.until() > first_until));
    m.release();
    BOOST_TEST(!m.owns_lock());
    BOOST_TEST(m.fencing_token() == token);  // kept for logs

    m.lock();
    BOOST_TEST(m.fencing_token() > token);
    // Deleted behind the lock's back: release() says so, unlock() would not.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        redis_command(nodes[i].port(), {"DEL", "blocking:fenced"});
    }
    BOOST_TEST(!m.valid());
    BOOST_TEST(thrown_by([&] { m.extend(); }) == error::extend_failed);
    BOOST_TEST(thrown_by([&] { m.release(); }) == error::not_held);
    BOOST_TEST(!m.owns_lock());
    std::string what;
    BOOST_TEST(thrown_by([&] { m.release(); }, &what) == error::not_held);
    BOOST_TEST(contains(what, "the mutex is not locked"), what);
    BOOST_TEST(thrown_by([&] { (void)m.valid(); }) == error::not_held);
    m.unlock();  // not locked: nothing happens
}

BOOST_FIXTURE_TEST_CASE(destroying_the_client_releases_a_held_lock, five_nodes)
{
    std::optional<blocking::mutex> survivor;
    {
        blocking::client c(config());
        blocking::mutex m = c.make_mutex("blocking:left", {.expiry = 30s});
        m.lock();
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            BOOST_TEST(eventually([&] { return value_on(i, "blocking:left").has_value(); }));
        }
        survivor.emplace(m);
    }
    // The destructor waited for the deletes on every node.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(!value_on(i, "blocking:left").has_value());
    }
    // The mutex outlives its client: its calls say so, its unlock does nothing.
    BOOST_TEST(!survivor->owns_lock());
    BOOST_TEST(thrown_by([&] { survivor->lock(); }) == error::shut_down);
    BOOST_TEST(thrown_by([&] { (void)survivor->try_lock(); }) == error::shut_down);
    survivor->unlock();
}

BOOST_FIXTURE_TEST_CASE(a_mutex_dropped_while_locked_is_released, five_nodes)
{
    blocking::client c(config());
    {
        blocking::mutex m = c.make_mutex("blocking:dropped", {.expiry = 30s});
        m.lock();
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        BOOST_TEST(eventually([&] { return !value_on(i, "blocking:dropped").has_value(); }));
    }
}

BOOST_FIXTURE_TEST_CASE(the_key_prefix_applies, five_nodes)
{
    redlock::config cfg = config();
    cfg.key_prefix = "svc:";
    blocking::client c(std::move(cfg));
    blocking::mutex m = c.make_mutex("job", {.expiry = 10s});
    std::lock_guard held(m);
    BOOST_TEST(m.name() == "job");
    BOOST_TEST(m.keys().front() == "svc:job");
    BOOST_TEST(eventually([&] { return value_on(0, "svc:job").has_value(); }));
    BOOST_TEST(!value_on(0, "job").has_value());
}

BOOST_AUTO_TEST_CASE(a_bad_config_or_name_throws_invalid_argument)
{
    BOOST_TEST(thrown_by([] { blocking::client c(redlock::config{}); }) == error::invalid_argument);
    blocking::client c(config::from_urls({port_url(unused_loopback_port())}));
    BOOST_TEST(thrown_by([&] { (void)c.make_mutex(""); }) == error::invalid_argument);
    BOOST_TEST(thrown_by([&] { (void)c.make_mutex("x", {.tries = 0}); }) ==
               error::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
