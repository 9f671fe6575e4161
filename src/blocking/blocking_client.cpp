// SPDX-License-Identifier: BSL-1.0
// The blocking client: a thread that runs the client's io_context, and the shutdown that
// cancels the acquisitions still waiting, releases the locks still held and joins the thread.

#include <redlock/blocking.hpp>

#include "blocking/blocking_client_core.hpp"
#include "blocking/blocking_mutex_core.hpp"
#include "blocking/blocking_rw_mutex_core.hpp"
#include "blocking/blocking_semaphore_core.hpp"

#include <boost/asio/post.hpp>

#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace redlock::blocking {
namespace detail {

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

std::vector<std::shared_ptr<facade_lock>> client_core::live_mutexes()
{
    std::vector<std::shared_ptr<facade_lock>> all;
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
            m->wake_waiters();
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
            m->drop_held();
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

semaphore client::make_semaphore(std::string name, std::ptrdiff_t permits, options opts)
{
    redlock::semaphore base =
        core_->async().make_semaphore(std::move(name), permits, std::move(opts));
    auto s = std::make_shared<detail::semaphore_core>(core_, std::move(base));
    s->registration = core_->remember(s);
    return semaphore(std::move(s));
}

semaphore client::make_semaphore(std::string name, std::ptrdiff_t permits)
{
    return make_semaphore(std::move(name), permits, options{});
}

rw_mutex client::make_rw_mutex(std::string name, options opts)
{
    redlock::rw_mutex base = core_->async().make_rw_mutex(std::move(name), std::move(opts));
    auto r = std::make_shared<detail::rw_mutex_core>(core_, std::move(base));
    r->registration = core_->remember(r);
    return rw_mutex(std::move(r));
}

rw_mutex client::make_rw_mutex(std::string name)
{
    return make_rw_mutex(std::move(name), options{});
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

}  // namespace redlock::blocking
