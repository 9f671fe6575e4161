// SPDX-License-Identifier: BSL-1.0
// The blocking mutex: Lockable calls that take the thread's turn in the process, start an
// asynchronous operation on the client's io thread and wait for its handler.

#include <redlock/blocking.hpp>
#include <redlock/error.hpp>
#include <redlock/guard.hpp>
#include <redlock/mutex.hpp>

#include "blocking/blocking_client_core.hpp"
#include "blocking/blocking_mutex_core.hpp"

#include <boost/system/errc.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>

namespace redlock::blocking {
namespace detail {

using steady = std::chrono::steady_clock;

namespace {

std::string call_name(const char* function, const mutex_core& m)
{
    return "redlock::blocking::mutex::" + std::string(function) + "('" + m.base.name() + "')";
}

// "..." after N attempts (node: status; node: status (detail); ...)
std::string with_report(std::string what, const report& r)
{
    if (r.attempts > 0) {
        what +=
            " after " + std::to_string(r.attempts) + (r.attempts == 1 ? " attempt" : " attempts");
    }
    const std::string lines = r.to_string();
    if (!lines.empty()) {
        std::string joined;
        for (char ch : std::string_view(lines).substr(0, lines.size() - 1)) {
            joined += ch == '\n' ? std::string("; ") : std::string(1, ch);
        }
        what += " [" + joined + "]";
    }
    return what;
}

[[noreturn]] void fail(error_code ec, const std::string& what)
{
    throw boost::system::system_error(ec, what);
}

// Another owner was seen holding the lock: a conflict, which try_lock reports as false. An
// attempt that no node could answer is not one: the nodes may be down.
bool conflict(error_code ec, const report& r)
{
    return ec == error::taken || (ec == error::failed && r.count(node_status::taken) > 0);
}

enum class kind { lock, once, timed };

// Options for try_lock_for/until: attempts until `deadline`, the last of them starting at it,
// so that a false never comes before the deadline (as TimedLockable requires) and a release
// seen meanwhile still wakes the wait. `wait` is only a backstop: the delay after the
// deadline ends the attempts.
options until_deadline(const options& o, steady::time_point deadline)
{
    options timed = o;
    timed.tries = INT_MAX;
    const auto longest = std::chrono::hours(24 * 365);
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
    timed.wait = std::min<std::chrono::milliseconds>(left + std::chrono::seconds(1), longest);
    timed.retry_delay = [delay = o.retry_delay, deadline](int attempt) {
        const auto now = steady::now();
        if (now >= deadline) {
            return std::chrono::milliseconds(std::chrono::hours(1));  // past the backstop
        }
        const auto to_deadline = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
        return std::min(delay(attempt), to_deadline);
    };
    return timed;
}

// The calling thread's attempt to lock `m`: true once it holds it; false for a conflict when
// `k` is once or timed. `deadline` is the timed attempt's.
bool acquire(mutex_core& m, kind k, steady::time_point deadline)
{
    const char* function = k == kind::lock ? "lock" : k == kind::once ? "try_lock" : "try_lock_for";
    client_core& c = *m.client;
    client_core::call in_progress(c, call_name(function, m));
    const options& o = m.base.options();
    const auto started = steady::now();
    std::optional<steady::time_point> turn_until;
    if (k == kind::timed) {
        turn_until = deadline;
    } else if (k == kind::lock && o.wait) {
        turn_until = started + *o.wait;
    }
    bool waited = false;
    {
        std::unique_lock lock(m.m);
        if (m.busy && m.owner == std::this_thread::get_id()) {
            if (o.reentrant && m.holds > 0) {
                ++m.holds;
                return true;
            }
            fail(make_error_code(boost::system::errc::resource_deadlock_would_occur),
                 call_name(function, m) +
                     ": this thread holds the lock already (the mutex is not reentrant; "
                     "options::reentrant makes it count holds)");
        }
        if (m.busy) {
            if (k == kind::once) {
                return false;
            }
            waited = true;
            const auto free = [&] { return !m.busy || c.closed(); };
            if (!turn_until) {
                m.turn.wait(lock, free);
            } else if (!m.turn.wait_until(lock, *turn_until, free)) {
                if (k == kind::timed) {
                    return false;
                }
                fail(make_error_code(error::taken),
                     call_name(function, m) +
                         ": another thread of this process held it for all of options::wait");
            }
        }
        if (c.closed()) {
            fail(make_error_code(error::shut_down),
                 call_name(function, m) + ": its blocking::client was destroyed");
        }
        m.busy = true;
        m.owner = std::this_thread::get_id();
        m.holds = 0;
    }

    // The thread's turn: one acquisition on the nodes, with the time that is left. Any way
    // out without the lock gives the turn back.
    struct turn_guard
    {
        mutex_core& m;
        bool kept = false;
        ~turn_guard()
        {
            if (!kept) {
                std::lock_guard lock(m.m);
                m.pass_turn();
            }
        }
    } turn{m};
    redlock::mutex target = m.base;
    bool single = k == kind::once;
    {
        const auto left = turn_until ? *turn_until - steady::now() : steady::duration::zero();
        if ((k == kind::timed || (waited && turn_until)) && left <= steady::duration::zero()) {
            single = true;
        } else if (k == kind::timed) {
            target = c.async().make_multi_mutex(m.names, until_deadline(o, deadline));
        } else if (waited && turn_until) {
            // lock() with options::wait, part of it spent waiting for the turn.
            options rest = o;
            rest.wait = std::chrono::ceil<std::chrono::milliseconds>(left);
            target = c.async().make_multi_mutex(m.names, std::move(rest));
        }
    }
    auto [ec, g] = client_core::wait(c.start_op<guard>(
        [&](auto token) {
            if (single) {
                target.async_try_acquire(std::move(token));
            } else {
                target.async_acquire(std::move(token));
            }
        },
        true));

    if (!ec) {
        redlock::guard too_late;
        {
            std::lock_guard lock(m.m);
            if (!c.closed()) {
                m.current = std::move(g);
                m.holds = 1;
                m.last_was_failure = false;
                turn.kept = true;
                return true;
            }
            // The client shut down meanwhile: not kept, released in the background.
            too_late = std::move(g);
        }
        fail(make_error_code(error::shut_down),
             call_name(function, m) + ": its blocking::client was destroyed meanwhile");
    }
    const report r = g.last_report();
    {
        std::lock_guard lock(m.m);
        m.failed_attempt = std::move(g);
        m.last_was_failure = true;
    }
    if (c.closed() || ec == asio::error::operation_aborted) {
        fail(make_error_code(error::shut_down),
             call_name(function, m) + ": its blocking::client was destroyed meanwhile");
    }
    if (k != kind::lock && conflict(ec, r)) {
        return false;
    }
    fail(ec, with_report(call_name(function, m), r));
}

// Releases the last hold of the lock; nullopt when the mutex is not locked. `unlock` on the
// io thread cannot wait: the release goes on in the background; `release` throws there.
std::optional<error_code> release(mutex_core& m, const char* function, bool may_throw)
{
    client_core& c = *m.client;
    if (may_throw && c.on_io_thread()) {
        client_core::call refused(c, call_name(function, m));  // throws
    }
    if (c.on_io_thread()) {
        // Cannot wait here: the guard's destructor releases in the background.
        redlock::guard dropped;
        std::lock_guard lock(m.m);
        if (m.holds == 0) {
            return std::nullopt;
        }
        if (--m.holds > 0) {
            return error_code{};
        }
        dropped = std::move(m.current);
        m.pass_turn();
        return error_code{};
    }
    std::optional<client_core::call> in_progress;
    try {
        in_progress.emplace(c, call_name(function, m));
    } catch (const boost::system::system_error&) {
        // Shut down: the lock was released then; only the turn is left to give back.
        std::lock_guard lock(m.m);
        if (m.holds == 0) {
            return std::nullopt;
        }
        m.pass_turn();
        return make_error_code(error::shut_down);
    }
    redlock::guard g;
    {
        std::lock_guard lock(m.m);
        if (m.holds == 0) {
            return std::nullopt;
        }
        if (--m.holds > 0) {
            return error_code{};
        }
        g = std::move(m.current);
    }
    auto [ec] =
        client_core::wait(c.start_op<>([&](auto token) { g.async_release(std::move(token)); }));
    std::lock_guard lock(m.m);
    // Released (or, if the client shut down first, still owning: shutdown releases it).
    m.current = std::move(g);
    m.last_was_failure = false;
    m.pass_turn();
    return ec;
}

}  // namespace
}  // namespace detail

// ---- mutex ----

void mutex::lock()
{
    detail::acquire(*core_, detail::kind::lock, {});
}

bool mutex::try_lock()
{
    return detail::acquire(*core_, detail::kind::once, {});
}

bool mutex::try_lock_within(std::chrono::milliseconds timeout)
{
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
        if (m.holds == 0) {
            detail::fail(make_error_code(error::not_held),
                         detail::call_name("extend", m) + ": the mutex is not locked");
        }
        done = m.client->start_op<>([&](auto token) { m.current.async_extend(std::move(token)); });
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
        if (m.holds == 0) {
            detail::fail(make_error_code(error::not_held),
                         detail::call_name("valid", m) + ": the mutex is not locked");
        }
        done =
            m.client->start_op<bool>([&](auto token) { m.current.async_valid(std::move(token)); });
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
    return core_->holds > 0 && core_->current.owns_lock();
}

std::chrono::steady_clock::time_point mutex::until() const noexcept
{
    std::lock_guard lock(core_->m);
    return core_->current.until();
}

std::uint64_t mutex::fencing_token() const noexcept
{
    std::lock_guard lock(core_->m);
    return core_->current.fencing_token();
}

bool mutex::lost() const noexcept
{
    std::lock_guard lock(core_->m);
    return core_->holds > 0 && core_->current.lost();
}

report mutex::last_report() const
{
    std::lock_guard lock(core_->m);
    return core_->last_was_failure ? core_->failed_attempt.last_report()
                                   : core_->current.last_report();
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
