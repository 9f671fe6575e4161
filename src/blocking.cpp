// SPDX-License-Identifier: BSL-1.0
// The blocking facade: a thread that runs the client's io_context, and Lockable mutexes whose
// calls start an asynchronous operation and wait for its handler (a promise each).

#include <redlock/blocking.hpp>
#include <redlock/error.hpp>
#include <redlock/guard.hpp>
#include <redlock/mutex.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/errc.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <future>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

namespace redlock::blocking {
namespace detail {

namespace asio = boost::asio;
using boost::system::error_code;
using steady = std::chrono::steady_clock;

// One asynchronous operation that a blocking call waits for, cancelled if the client shuts
// down meanwhile. Its completion handler owns it: co_spawn keeps its cancellation handler
// inside `signal`, so the signal must live until the io thread is done with the operation,
// and the handler is destroyed there, last. (A shutdown that cancels it holds it too, on the
// io thread, while it emits.)
struct pending_op
{
    asio::cancellation_signal signal;
    /// An acquisition, which may wait long; releases, extensions and checks are bounded by
    /// the per-node deadline and left to finish.
    bool cancel_on_shutdown = false;
};

class client_core
{
  public:
    explicit client_core(redlock::config cfg)
        : work_(asio::make_work_guard(io_)),
          async_(std::in_place, io_.get_executor(), std::move(cfg))
    {
    }
    client_core(const client_core&) = delete;
    client_core& operator=(const client_core&) = delete;
    ~client_core() = default;

    void start(const std::shared_ptr<client_core>& self)
    {
        // The thread keeps the core alive: after a detach (a destructor on the io thread) it
        // is the last owner, and destroys the core once run() has returned.
        thread_ = std::thread([self] { self->run(); });
        io_thread_ = thread_.get_id();
    }

    bool on_io_thread() const noexcept { return std::this_thread::get_id() == io_thread_.load(); }
    bool closed() const noexcept { return closed_.load(); }
    redlock::client& async() noexcept { return *async_; }

    /// Starts an operation: `initiate(token)` with a handler that fulfils the returned
    /// future. After shutdown nothing is started, and the future holds `error::shut_down`.
    template <class... Ts, class Initiate>
    std::future<std::tuple<error_code, Ts...>> start_op(Initiate initiate,
                                                        bool cancel_on_shutdown = false)
    {
        using result = std::tuple<error_code, Ts...>;
        std::promise<result> promise;
        std::future<result> done = promise.get_future();
        std::lock_guard lock(mutex_);
        if (closed_) {
            promise.set_value(result{make_error_code(error::shut_down), Ts{}...});
            return done;
        }
        auto op = std::make_shared<pending_op>();
        op->cancel_on_shutdown = cancel_on_shutdown;
        pending_op* raw = op.get();
        in_flight_.emplace_back(raw, op);
        const auto slot = raw->signal.slot();
        try {
            // Under the lock, so that a shutdown either cancels this operation or sees the
            // client closed before it begins.
            initiate(asio::bind_cancellation_slot(
                slot, [this, raw, op = std::move(op), promise = std::move(promise)](
                          error_code ec, Ts... values) mutable {
                    forget_op(raw);
                    promise.set_value(result{ec, std::move(values)...});
                }));
        } catch (...) {
            std::erase_if(in_flight_, [raw](const auto& entry) { return entry.first == raw; });
            throw;
        }
        return done;
    }

    /// Waits for an operation started by `start_op`. A handler destroyed unrun (the io thread
    /// ended after a shutdown from its own thread) reads as `error::shut_down`.
    template <class... Ts>
    static std::tuple<error_code, Ts...> wait(std::future<std::tuple<error_code, Ts...>> done)
    {
        try {
            return done.get();
        } catch (const std::future_error&) {
            return {make_error_code(error::shut_down), Ts{}...};
        }
    }

    /// A blocking call in progress; shutdown waits until none is. Throws on the io thread
    /// and after shutdown.
    class call
    {
      public:
        call(client_core& c, const std::string& what) : c_(c)
        {
            if (c.on_io_thread()) {
                throw boost::system::system_error(
                    make_error_code(boost::system::errc::resource_deadlock_would_occur),
                    what +
                        " on the client's own io thread (in a handler of client::nonblocking()): "
                        "it would wait for the thread it blocks; use the asynchronous API there");
            }
            std::lock_guard lock(c.mutex_);
            if (c.closed_) {
                throw boost::system::system_error(make_error_code(error::shut_down),
                                                  what + ": its blocking::client was destroyed");
            }
            ++c.active_;
        }
        call(const call&) = delete;
        call& operator=(const call&) = delete;
        ~call()
        {
            std::lock_guard lock(c_.mutex_);
            if (--c_.active_ == 0) {
                c_.idle_.notify_all();
            }
        }

      private:
        client_core& c_;
    };

    /// Registers a mutex, so that a shutdown can wake its waiting threads and release its
    /// lock. Returns the handle for `forget`.
    std::list<std::weak_ptr<mutex_core>>::iterator remember(const std::shared_ptr<mutex_core>& m)
    {
        std::lock_guard lock(mutex_);
        return mutexes_.insert(mutexes_.end(), m);
    }
    void forget(std::list<std::weak_ptr<mutex_core>>::iterator it)
    {
        std::lock_guard lock(mutex_);
        mutexes_.erase(it);
    }

    void shutdown() noexcept;

  private:
    void forget_op(pending_op* op)
    {
        std::lock_guard lock(mutex_);
        std::erase_if(in_flight_, [op](const auto& entry) { return entry.first == op; });
    }
    void run() noexcept;
    std::vector<std::shared_ptr<mutex_core>> live_mutexes();
    void cancel_in_flight();
    void log(const std::string& message) noexcept;

    asio::io_context io_{1};
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    std::optional<redlock::client> async_;
    std::thread thread_;
    std::atomic<std::thread::id> io_thread_{};
    std::atomic<bool> closed_{false};

    std::mutex mutex_;
    std::condition_variable idle_;
    int active_ = 0;  // guarded by mutex_
    /// Operations started and not yet completed.
    std::vector<std::pair<pending_op*, std::weak_ptr<pending_op>>> in_flight_;  // guarded by mutex_
    std::list<std::weak_ptr<mutex_core>> mutexes_;                              // guarded by mutex_
};

struct mutex_core
{
    mutex_core(std::shared_ptr<client_core> c, std::vector<std::string> n, redlock::mutex b)
        : client(std::move(c)), names(std::move(n)), base(std::move(b))
    {
    }
    mutex_core(const mutex_core&) = delete;
    mutex_core& operator=(const mutex_core&) = delete;
    ~mutex_core()
    {
        if (registration) {
            client->forget(*registration);
        }
        // `current`, if it still owns its lock (a mutex dropped while locked), releases it in
        // the background as any guard does.
    }

    const std::shared_ptr<client_core> client;
    /// The names given to make_mutex (the keys without the prefix), for the mutexes a timed
    /// attempt makes with its own `wait`.
    const std::vector<std::string> names;
    /// The asynchronous mutex with the user's options.
    const redlock::mutex base;
    std::optional<std::list<std::weak_ptr<mutex_core>>::iterator> registration;

    std::mutex m;
    /// Signalled when the turn passes, and when the client shuts down.
    std::condition_variable turn;
    // Guarded by m:
    /// A thread has its turn: it is acquiring or holds the lock.
    bool busy = false;
    std::thread::id owner;
    /// Holds of `owner` (more than 1 only for a reentrant mutex); 0 while acquiring.
    int holds = 0;
    /// The lock held, or the last one held (its until, token and report stay readable).
    redlock::guard current;
    /// The last failed acquisition, which carries the report of its last attempt.
    redlock::guard failed_attempt;
    bool last_was_failure = false;

    /// Gives the turn back (after a failure, or when the last hold is released).
    void pass_turn()
    {
        busy = false;
        owner = {};
        holds = 0;
        turn.notify_all();
    }
};

void client_core::run() noexcept
{
    for (;;) {
        try {
            io_.run();
            return;
        } catch (const std::exception& e) {
            // A handler of the user's (on nonblocking()) threw: the thread must go on, or
            // every blocking call would hang.
            log(std::string("an exception escaped a handler on redlock::blocking::client's io "
                            "thread: ") +
                e.what());
        } catch (...) {
            log("an exception escaped a handler on redlock::blocking::client's io thread");
        }
    }
}

void client_core::log(const std::string& message) noexcept
{
    try {
        if (const log_hook& hook = async_->config().logger) {
            hook(log_level::error, message);
        }
    } catch (...) {
        // Nowhere left to report it.
    }
}

std::vector<std::shared_ptr<mutex_core>> client_core::live_mutexes()
{
    std::vector<std::shared_ptr<mutex_core>> all;
    std::lock_guard lock(mutex_);
    // Reserved first: the last owner of a mutex must not be dropped under the lock, which
    // its destructor takes.
    all.reserve(mutexes_.size());
    for (const auto& weak : mutexes_) {
        if (auto m = weak.lock()) {
            all.push_back(std::move(m));
        }
    }
    return all;
}

// On the io thread, where the operations' cancellation slots are used. Emitted without the
// lock, which an operation completing meanwhile takes; holding them keeps them alive.
void client_core::cancel_in_flight()
{
    std::vector<std::shared_ptr<pending_op>> ops;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [raw, weak] : in_flight_) {
            if (auto op = weak.lock(); op && op->cancel_on_shutdown) {
                ops.push_back(std::move(op));
            }
        }
    }
    for (const auto& op : ops) {
        op->signal.emit(asio::cancellation_type::terminal);
    }
}

void client_core::shutdown() noexcept
{
    {
        std::lock_guard lock(mutex_);
        if (closed_) {
            return;
        }
        closed_ = true;
    }
    const bool own_thread = on_io_thread();
    try {
        if (own_thread) {
            cancel_in_flight();
        } else {
            asio::post(io_, [this] { cancel_in_flight(); });
        }
        // Threads waiting for their turn on a mutex leave (they throw shut_down).
        for (const auto& m : live_mutexes()) {
            std::lock_guard lock(m->m);
            m->turn.notify_all();
        }
        if (!own_thread) {
            // Acquisitions that were under way have finished (cancelled) and stored their
            // guards; nothing starts any more.
            std::unique_lock lock(mutex_);
            idle_.wait(lock, [this] { return active_ == 0; });
        }
        // Every lock still held through a mutex is released, in the background, which
        // async_shutdown then waits for.
        for (const auto& m : live_mutexes()) {
            redlock::guard held;
            {
                std::lock_guard lock(m->m);
                held = std::move(m->current);
                m->holds = 0;
            }
        }
        if (own_thread) {
            // Calls of other threads still waiting get their answers (cancelled) before the
            // thread, which owns the core now, runs out of work and ends.
            async_->async_shutdown([this](error_code) { work_.reset(); });
            thread_.detach();
            return;
        }
        std::promise<void> drained;
        async_->async_shutdown([&drained](error_code) { drained.set_value(); });
        drained.get_future().wait();
    } catch (...) {
        // Out of memory on the way: stop without waiting; keys left behind expire by TTL.
        if (own_thread) {
            work_.reset();
            thread_.detach();
            return;
        }
    }
    work_.reset();
    io_.stop();
    thread_.join();
}

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

// ---- client ----

client::client(redlock::config cfg) : core_(std::make_shared<detail::client_core>(std::move(cfg)))
{
    core_->start(core_);
}

client::client(client&& other) noexcept = default;

client& client::operator=(client&& other) noexcept
{
    if (this != &other) {
        if (core_) {
            core_->shutdown();
        }
        core_ = std::move(other.core_);
    }
    return *this;
}

client::~client()
{
    if (core_) {
        core_->shutdown();
    }
}

mutex client::make_mutex(std::string name, options opts)
{
    std::vector<std::string> names;
    names.push_back(std::move(name));
    return make_multi_mutex(std::move(names), std::move(opts));
}

mutex client::make_mutex(std::string name)
{
    return make_mutex(std::move(name), options{});
}

mutex client::make_multi_mutex(std::vector<std::string> names, options opts)
{
    redlock::mutex base = core_->async().make_multi_mutex(names, std::move(opts));
    auto m = std::make_shared<detail::mutex_core>(core_, std::move(names), std::move(base));
    m->registration = core_->remember(m);
    return mutex(std::move(m));
}

const redlock::config& client::config() const noexcept
{
    return core_->async().config();
}

std::vector<redlock::node_counters> client::node_counters() const
{
    return core_->async().node_counters();
}

redlock::client& client::nonblocking() noexcept
{
    return core_->async();
}

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
