// SPDX-License-Identifier: BSL-1.0
// The blocking mutex: Lockable calls that take the thread's turn in the process, start an
// asynchronous operation on the client's io thread and wait for its handler.

#include <redlock/blocking.hpp>
#include <redlock/error.hpp>
#include <redlock/guard.hpp>
#include <redlock/mutex.hpp>

#include "blocking/blocking_calls.hpp"
#include "blocking/blocking_client_core.hpp"
#include "blocking/blocking_mutex_core.hpp"

#include <boost/system/errc.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

namespace redlock::blocking {
namespace detail {

namespace {

std::string call_name(const char* function, const mutex_core& m)
{
    return "redlock::blocking::mutex::" + std::string(function) + "('" + m.base.name() + "')";
}

// One call of lock, try_lock or try_lock_for on a mutex.
struct request
{
    mutex_core& m;
    kind k;
    /// The timed call's deadline.
    steady::time_point deadline;
    /// When waiting for the thread's turn and for the lock ends: the timed call's deadline, or
    /// lock()'s options::wait; none for a lock() that waits for as long as it takes.
    std::optional<steady::time_point> until;

    std::string name() const
    {
        return call_name(k == kind::wait   ? "lock"
                         : k == kind::once ? "try_lock"
                                           : "try_lock_for",
                         m);
    }
};

request make_request(mutex_core& m, kind k, steady::time_point deadline)
{
    request r{m, k, deadline, std::nullopt};
    if (k == kind::timed) {
        r.until = deadline;
    } else if (k == kind::wait && m.base.options().wait) {
        r.until = steady::now() + *m.base.options().wait;
    }
    return r;
}

enum class turn { held_again, not_free, taken, taken_after_waiting };

// The calling thread already has the mutex's turn (its entry `h`): one more hold for a
// reentrant mutex, a deadlock otherwise.
turn hold_again(const request& r, thread_hold& h)
{
    if (r.m.base.options().reentrant && h.count > 0) {
        ++h.count;
        return turn::held_again;
    }
    fail(make_error_code(boost::system::errc::resource_deadlock_would_occur),
         r.name() +
             ": this thread holds the lock already (the mutex is not reentrant; "
             "options::reentrant makes it count holds)");
}

// Waits until no other thread of the process has the turn, or the client shuts down. False
// when a timed call's deadline passes first; throws when lock()'s options::wait does.
bool wait_for_turn(const request& r, std::unique_lock<std::mutex>& lock)
{
    const auto free = [&] { return r.m.held.empty() || r.m.client->closed(); };
    if (!r.until) {
        r.m.freed.wait(lock, free);
        return true;
    }
    if (r.m.freed.wait_until(lock, *r.until, free)) {
        return true;
    }
    if (r.k == kind::timed) {
        return false;
    }
    fail(make_error_code(error::taken),
         r.name() + ": another thread of this process held it for all of options::wait");
}

// Takes the thread's turn at the mutex: one thread of the process at a time acquires or holds
// it.
turn take_turn(const request& r)
{
    mutex_core& m = r.m;
    std::unique_lock lock(m.m);
    if (const auto own = m.own_hold(); own != m.held.end()) {
        return hold_again(r, *own);
    }
    const bool waited = !m.held.empty();
    if (waited && (r.k == kind::once || !wait_for_turn(r, lock))) {
        return turn::not_free;
    }
    if (m.client->closed()) {
        fail(make_error_code(error::shut_down), r.name() + ": its blocking::client was destroyed");
    }
    m.held.push_back(thread_hold{std::this_thread::get_id(), {}, 0});
    return waited ? turn::taken_after_waiting : turn::taken;
}

// Gives the turn back on any way out of an acquisition that does not keep the lock.
struct turn_guard
{
    mutex_core& m;
    bool kept = false;

    explicit turn_guard(mutex_core& core) : m(core) {}
    turn_guard(const turn_guard&) = delete;
    turn_guard& operator=(const turn_guard&) = delete;
    ~turn_guard()
    {
        if (!kept) {
            std::lock_guard lock(m.m);
            (void)m.pass_turn();  // an empty guard: the acquisition kept nothing
        }
    }
};

// What to run on the nodes with the time that is left: one try, or attempts until the
// deadline or for the rest of options::wait.
struct attempt
{
    redlock::mutex target;
    bool single;
};

attempt plan_attempt(const request& r, bool waited)
{
    const options& o = r.m.base.options();
    const auto left = r.until ? *r.until - steady::now() : steady::duration::zero();
    const bool bounded = r.k == kind::timed || (waited && r.until);
    if (r.k == kind::once || (bounded && left <= steady::duration::zero())) {
        return {r.m.base, true};
    }
    if (r.k == kind::timed) {
        return {r.m.client->async().make_multi_mutex(r.m.names, until_deadline(o, r.deadline)),
                false};
    }
    if (!bounded) {
        return {r.m.base, false};
    }
    // lock() with options::wait, part of it spent waiting for the turn.
    options rest = o;
    rest.wait = std::chrono::ceil<std::chrono::milliseconds>(left);
    return {r.m.client->async().make_multi_mutex(r.m.names, std::move(rest)), false};
}

std::tuple<error_code, guard> run_attempt(client_core& c, attempt& a)
{
    return client_core::wait(c.start_op<guard>(
        [&](auto token) {
            if (a.single) {
                a.target.async_try_acquire(std::move(token));
            } else {
                a.target.async_acquire(std::move(token));
            }
        },
        true));
}

// The lock was acquired: the thread keeps it, unless the client shut down meanwhile.
void keep(const request& r, guard g, turn_guard& t)
{
    redlock::guard too_late;
    {
        std::lock_guard lock(r.m.m);
        if (!r.m.client->closed() && !r.m.held.empty()) {
            r.m.held.front().guard = std::move(g);
            r.m.held.front().count = 1;
            r.m.last_was_failure = false;
            t.kept = true;
            return;
        }
        // Not kept: released in the background once the mutex's lock is let go.
        too_late = std::move(g);
    }
    fail(make_error_code(error::shut_down),
         r.name() + ": its blocking::client was destroyed meanwhile");
}

// The attempt failed: false for a conflict in try_lock and try_lock_for; throws otherwise.
bool refuse(const request& r, error_code ec, guard g)
{
    const report rep = g.last_report();
    {
        std::lock_guard lock(r.m.m);
        r.m.failed_attempt = std::move(g);
        r.m.last_was_failure = true;
    }
    if (r.m.client->closed() || ec == asio::error::operation_aborted) {
        fail(make_error_code(error::shut_down),
             r.name() + ": its blocking::client was destroyed meanwhile");
    }
    if (r.k != kind::wait && conflict(ec, rep)) {
        return false;
    }
    fail(ec, with_report(r.name(), rep));
}

// The calling thread's attempt to lock `m`: true once it holds it; false for a conflict when
// `k` is once or timed. `deadline` is the timed attempt's.
bool acquire(mutex_core& m, kind k, steady::time_point deadline)
{
    const request r = make_request(m, k, deadline);
    client_core::call in_progress(*m.client, r.name());
    const turn t = take_turn(r);
    if (t == turn::held_again || t == turn::not_free) {
        return t == turn::held_again;
    }
    // The thread's turn: one acquisition on the nodes, with the time that is left.
    turn_guard held{m};
    attempt a = plan_attempt(r, t == turn::taken_after_waiting);
    auto [ec, g] = run_attempt(*m.client, a);
    if (ec) {
        return refuse(r, ec, std::move(g));
    }
    keep(r, std::move(g), held);
    return true;
}

// One hold less, under m.m: nullopt when the mutex is not locked, else whether it was the last.
std::optional<bool> drop_hold(mutex_core& m)
{
    thread_hold* h = m.holder();
    if (!h) {
        return std::nullopt;
    }
    return --h->count == 0;
}

// `unlock` on the io thread, which cannot wait: the guard's destructor releases the lock in the
// background.
std::optional<error_code> release_in_background(mutex_core& m)
{
    redlock::guard dropped;
    redlock::guard previous;  // both destroyed once `m.m` is let go
    std::lock_guard lock(m.m);
    const auto last = drop_hold(m);
    if (!last) {
        return std::nullopt;
    }
    if (*last) {
        // The lock is not kept as the last held: it is still being released.
        dropped = m.pass_turn();
        previous = std::move(m.last_held);
    }
    return error_code{};
}

// Releases the last hold of the lock; nullopt when the mutex is not locked. `unlock` on the
// io thread cannot wait: the release goes on in the background; `release` throws there.
std::optional<error_code> release(mutex_core& m, const char* function, bool may_throw)
{
    client_core& c = *m.client;
    if (c.on_io_thread()) {
        if (may_throw) {
            client_core::call refused(c, call_name(function, m));  // throws
        }
        return release_in_background(m);
    }
    std::optional<client_core::call> in_progress;
    try {
        in_progress.emplace(c, call_name(function, m));
    } catch (const boost::system::system_error&) {
        // Shut down: the lock was released then (or is, in the background, once its guard
        // goes); only the turn is left to give back.
        redlock::guard dropped;
        std::lock_guard lock(m.m);
        if (!m.holder()) {
            return std::nullopt;
        }
        dropped = m.pass_turn();
        return make_error_code(error::shut_down);
    }
    redlock::guard g;
    {
        std::lock_guard lock(m.m);
        const auto last = drop_hold(m);
        if (!last) {
            return std::nullopt;
        }
        if (!*last) {
            return error_code{};
        }
        g = std::move(m.held.front().guard);
    }
    auto [ec] =
        client_core::wait(c.start_op<>([&](auto token) { g.async_release(std::move(token)); }));
    redlock::guard previous;  // destroyed once `m.m` is let go
    std::lock_guard lock(m.m);
    // Released (or, if the client shut down first, still owning: shutdown releases it).
    previous = std::exchange(m.last_held, std::move(g));
    m.last_was_failure = false;
    (void)m.pass_turn();  // its guard was moved out above
    return ec;
}

}  // namespace
}  // namespace detail

// ---- mutex ----

void mutex::lock()
{
    detail::acquire(*core_, detail::kind::wait, {});
}

bool mutex::try_lock()
{
    return detail::acquire(*core_, detail::kind::once, {});
}

bool mutex::try_lock_within(std::chrono::milliseconds timeout)
{
    if (timeout.count() == 0) {
        return try_lock();
    }
    return detail::acquire(*core_, detail::kind::timed, detail::steady::now() + timeout);
}

void mutex::unlock() noexcept
{
    try {
        (void)detail::release(*core_, "unlock", false);
    } catch (...) {
        // Out of memory: the key expires by its TTL.
    }
}

void mutex::release()
{
    const auto ec = detail::release(*core_, "release", true);
    if (!ec) {
        detail::fail(make_error_code(error::not_held),
                     detail::call_name("release", *core_) + ": the mutex is not locked");
    }
    if (*ec) {
        detail::fail(*ec, detail::with_report(detail::call_name("release", *core_), last_report()));
    }
}

void mutex::extend()
{
    detail::mutex_core& m = *core_;
    detail::client_core::call in_progress(*m.client, detail::call_name("extend", m));
    std::future<std::tuple<boost::system::error_code>> done;
    {
        std::lock_guard lock(m.m);
        detail::thread_hold* h = m.holder();
        if (!h) {
            detail::fail(make_error_code(error::not_held),
                         detail::call_name("extend", m) + ": the mutex is not locked");
        }
        done = m.client->start_op<>([&](auto token) { h->guard.async_extend(std::move(token)); });
    }
    auto [ec] = detail::client_core::wait(std::move(done));
    if (ec) {
        detail::fail(ec, detail::with_report(detail::call_name("extend", m), last_report()));
    }
}

bool mutex::valid()
{
    detail::mutex_core& m = *core_;
    detail::client_core::call in_progress(*m.client, detail::call_name("valid", m));
    std::future<std::tuple<boost::system::error_code, bool>> done;
    {
        std::lock_guard lock(m.m);
        detail::thread_hold* h = m.holder();
        if (!h) {
            detail::fail(make_error_code(error::not_held),
                         detail::call_name("valid", m) + ": the mutex is not locked");
        }
        done =
            m.client->start_op<bool>([&](auto token) { h->guard.async_valid(std::move(token)); });
    }
    auto [ec, held] = detail::client_core::wait(std::move(done));
    if (ec) {
        detail::fail(ec, detail::call_name("valid", m));
    }
    return held;
}

bool mutex::owns_lock() const noexcept
{
    std::lock_guard lock(core_->m);
    const detail::thread_hold* h = core_->holder();
    return h && h->guard.owns_lock();
}

std::chrono::steady_clock::time_point mutex::until() const noexcept
{
    std::lock_guard lock(core_->m);
    return core_->latest().until();
}

std::uint64_t mutex::fencing_token() const noexcept
{
    std::lock_guard lock(core_->m);
    return core_->latest().fencing_token();
}

bool mutex::lost() const noexcept
{
    std::lock_guard lock(core_->m);
    const detail::thread_hold* h = core_->holder();
    return h && h->guard.lost();
}

report mutex::last_report() const
{
    std::lock_guard lock(core_->m);
    return core_->last_was_failure ? core_->failed_attempt.last_report()
                                   : core_->latest().last_report();
}

const std::string& mutex::name() const noexcept
{
    return core_->base.name();
}

const std::vector<std::string>& mutex::keys() const noexcept
{
    return core_->base.keys();
}

const options& mutex::options() const noexcept
{
    return core_->base.options();
}

}  // namespace redlock::blocking
