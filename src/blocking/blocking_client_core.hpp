// SPDX-License-Identifier: BSL-1.0
#pragma once

// The state behind a blocking::client: the thread that runs its io_context, the asynchronous
// operations blocking calls wait for (each through a promise), the calls in progress and the
// mutexes made, so that a shutdown can cancel, wake and release them all.

#include <redlock/client.hpp>
#include <redlock/config.hpp>
#include <redlock/error.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/errc.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <atomic>
#include <condition_variable>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace redlock::blocking::detail {

namespace asio = boost::asio;
using boost::system::error_code;

/// A lock object of the facade (a mutex's or a semaphore's state) as a shutdown sees it.
class facade_lock
{
  public:
    /// Wakes the threads of the process that wait for their turn at it (they then throw
    /// `error::shut_down`).
    virtual void wake_waiters() = 0;
    /// Drops the locks it holds: their guards release them in the background, which
    /// `client::async_shutdown` waits for.
    virtual void drop_held() = 0;

  protected:
    ~facade_lock() = default;
};

using facade_locks = std::list<std::weak_ptr<facade_lock>>;

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

    /// Registers a mutex or a semaphore, so that a shutdown can wake its waiting threads and
    /// release its locks. Returns the handle for `forget`.
    facade_locks::iterator remember(const std::shared_ptr<facade_lock>& m)
    {
        std::lock_guard lock(mutex_);
        return mutexes_.insert(mutexes_.end(), m);
    }
    void forget(facade_locks::iterator it)
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
    std::vector<std::shared_ptr<facade_lock>> live_mutexes();
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
    facade_locks mutexes_;                                                      // guarded by mutex_
};

}  // namespace redlock::blocking::detail
