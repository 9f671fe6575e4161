// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// Distributed locks for code without coroutines: a client that runs its own io thread, a
/// mutex that meets the standard Lockable and TimedLockable requirements, so that
/// `std::unique_lock`, `std::scoped_lock` and `std::lock` work with it, a semaphore with
/// the calls of `std::counting_semaphore`, and a read-write lock that meets the
/// SharedTimedLockable requirements too, for `std::shared_lock`.

#include <redlock/client.hpp>
#include <redlock/config.hpp>
#include <redlock/detail/timed_wait.hpp>
#include <redlock/error.hpp>
#include <redlock/observability.hpp>
#include <redlock/options.hpp>
#include <redlock/report.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace redlock::blocking {

namespace detail {
class client_core;
struct mutex_core;
struct semaphore_core;
struct rw_mutex_core;
}  // namespace detail

/// A named distributed lock with the interface of `std::timed_mutex`, made by
/// `blocking::client::make_mutex`.
///
/// Ownership: like a `std::mutex`, a `blocking::mutex` is held by one thread at a time.
/// Threads of the process that share it (the object or copies of it: copies share one lock)
/// take turns in the process first, and only the thread whose turn it is acquires on the
/// nodes, competing there with other processes and with other mutexes of the same name.
/// Locking it again from the thread that holds it throws `boost::system::system_error` with
/// `errc::resource_deadlock_would_occur`, unless it was made with `options::reentrant`: then
/// it counts, as a `std::recursive_mutex` does, and the last `unlock` releases. Unlock from
/// the thread that locked, as for any standard mutex.
///
/// Which calls fail how:
/// - `lock()` waits as `redlock::mutex::acquire` does (`options::tries`, `options::wait`;
///   while another thread of the process holds it, as long as that thread keeps it, bounded
///   by `options::wait` if set) and throws `boost::system::system_error` with the library's
///   error code (`error::taken`, `failed`, `misconfigured`, `shut_down`, ...) when it does
///   not get the lock; `what()` names the lock and what each node answered.
/// - `try_lock()` makes one attempt; `try_lock_for()` and `try_lock_until()` try until the
///   deadline (`options::tries` does not apply; a release wakes them early), make their last
///   attempt at the deadline and so return false no earlier than it, and no later than one
///   attempt (its per-node deadline) after it. All three return false when another owner
///   holds the lock: another thread of the process, or on the nodes (`error::taken`, or a
///   failed attempt in which some node answered that another owner holds it). They throw as
///   `lock()` does when the nodes could not answer at all (`error::failed` with no node
///   saying "taken": unreachable, slow), for misconfiguration and after shutdown, so that a
///   dead or misconfigured Redis is never mistaken for a busy lock.
/// - `unlock()` never throws, since it runs in destructors (`std::unique_lock`'s): it
///   releases and waits for the nodes' answer, bounded by the per-node deadline; whether a
///   quorum still held the lock shows in `last_report()`. Call `release()` instead to have a
///   lock that had expired or been taken over reported as an exception. Calling `unlock()`
///   when the mutex is not locked does nothing.
class mutex
{
  public:
    /// Acquires the lock, waiting as the class comment says. Throws
    /// `boost::system::system_error` when it cannot.
    void lock();
    /// One attempt: true when the lock is now held by the calling thread, false when another
    /// owner holds it. Throws when the nodes could not answer (see the class comment).
    bool try_lock();
    /// As `try_lock`, trying (and waiting for the holder's release) until `timeout` has
    /// passed.
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout)
    {
        return try_lock_within(detail::timed_wait(timeout));
    }
    /// As `try_lock_for(deadline - Clock::now())`: the deadline is read once, on `Clock`, and
    /// followed on `std::chrono::steady_clock` from then on.
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline)
    {
        return try_lock_within(detail::timed_wait_until(deadline));
    }
    /// Releases the lock and waits for the nodes (bounded by the per-node deadline); never
    /// throws. On the client's io thread it starts the release without waiting.
    void unlock() noexcept;

    /// As `unlock`, but throws `boost::system::system_error`: `error::not_held` when the
    /// mutex is not locked, or when fewer than a quorum of nodes still held the lock (it
    /// expired or was taken over: the critical section may not have been exclusive). The
    /// mutex is unlocked afterwards either way.
    void release();
    /// Resets the lock's TTL to `options::expiry` on a quorum and moves `until()` forward.
    /// Throws `boost::system::system_error` (`error::expired`, `extend_failed`, `lost`,
    /// `not_held` when not locked).
    void extend();
    /// Whether a quorum of nodes holds our value right now. Throws `error::not_held` when
    /// the mutex is not locked.
    bool valid();

    /// True while the lock is held through this mutex (by whichever thread locked it).
    bool owns_lock() const noexcept;
    /// The validity deadline of the lock held now (updated by extensions); after `unlock`,
    /// that of the last lock held. The epoch before the first lock.
    std::chrono::steady_clock::time_point until() const noexcept;
    /// With `options::fencing`: the fencing token of the lock held now, or of the last one
    /// held; 0 before the first lock and without fencing. Hand it to the protected resource.
    std::uint64_t fencing_token() const noexcept;
    /// True once the lock held now was found lost (see `guard::lost`).
    bool lost() const noexcept;
    /// What each node did in the last operation through this mutex (an attempt, a release,
    /// an extension, a validity check, or the watchdog's extension).
    report last_report() const;

    /// The lock's name, as `redlock::mutex::name()`.
    const std::string& name() const noexcept;
    /// The Redis keys the lock sets.
    const std::vector<std::string>& keys() const noexcept;
    /// The options the mutex was made with.
    const redlock::options& options() const noexcept;

  private:
    friend class client;
    explicit mutex(std::shared_ptr<detail::mutex_core> core) noexcept : core_(std::move(core)) {}

    /// One attempt when `timeout` is 0, attempts until it has passed otherwise.
    bool try_lock_within(std::chrono::milliseconds timeout);

    std::shared_ptr<detail::mutex_core> core_;
};

/// A distributed counting semaphore with the calls of `std::counting_semaphore`, made by
/// `blocking::client::make_semaphore`: at most `permits()` holders at once, in this process
/// and elsewhere (see `redlock::semaphore`).
///
/// Each call takes or gives back one permit, held by the calling thread: a thread may hold
/// several, and `release` gives back the one it took last. Threads do not wait for each other
/// in the process: each acquires on the nodes at once. Copies share their permits.
///
/// - `acquire()` waits as `redlock::semaphore::acquire` does (`options::tries`,
///   `options::wait`) and throws `boost::system::system_error` with the library's error code
///   (`error::taken`, `failed`, `invalid_argument` when the holders use another number of
///   permits, `misconfigured`, `shut_down`, ...) when it gets no permit; `what()` names the
///   semaphore and what each node answered.
/// - `try_acquire()` makes one attempt; `try_acquire_for()` and `try_acquire_until()` try
///   until the deadline (a release wakes them early; the last attempt starts at the
///   deadline). They return false when the semaphore is full, and throw as `acquire()` does
///   when the nodes could not answer at all, so that a dead Redis is never mistaken for a
///   full semaphore.
/// - `release()` gives the calling thread's last permit back and waits for the nodes
///   (bounded by the per-node deadline). It throws `error::not_held` when the thread holds no
///   permit, or when fewer than a quorum of nodes still held it (it expired: the permit may
///   have been someone else's meanwhile); the permit is given back either way.
class semaphore
{
  public:
    /// Takes a permit, waiting as the class comment says. Throws
    /// `boost::system::system_error` when it cannot.
    void acquire();
    /// One attempt: true when the calling thread now holds one more permit, false when the
    /// semaphore is full. Throws when the nodes could not answer (see the class comment).
    bool try_acquire();
    /// As `try_acquire`, trying (and waiting for releases) until `timeout` has passed.
    template <class Rep, class Period>
    bool try_acquire_for(const std::chrono::duration<Rep, Period>& timeout)
    {
        return try_acquire_within(detail::timed_wait(timeout));
    }
    /// As `try_acquire_for(deadline - Clock::now())`, the deadline read once on `Clock`.
    template <class Clock, class Duration>
    bool try_acquire_until(const std::chrono::time_point<Clock, Duration>& deadline)
    {
        return try_acquire_within(detail::timed_wait_until(deadline));
    }
    /// Gives back the permit the calling thread took last; throws as the class comment says.
    void release();

    /// How many permits the calling thread holds through this semaphore (and its copies).
    std::size_t held() const;
    /// What each node did in the last acquisition or release through this semaphore.
    report last_report() const;
    /// The semaphore's name, as `redlock::semaphore::name()`.
    const std::string& name() const noexcept;
    /// How many holders it admits at once.
    std::ptrdiff_t permits() const noexcept;
    /// The number of nodes a permit needs, as `redlock::semaphore::quorum()`.
    std::size_t quorum() const noexcept;
    /// The options the semaphore was made with.
    const redlock::options& options() const noexcept;

  private:
    friend class client;
    explicit semaphore(std::shared_ptr<detail::semaphore_core> core) noexcept
        : core_(std::move(core))
    {
    }

    /// One attempt when `timeout` is 0, attempts until it has passed otherwise.
    bool try_acquire_within(std::chrono::milliseconds timeout);

    std::shared_ptr<detail::semaphore_core> core_;
};

/// A distributed read-write lock with the calls of `std::shared_timed_mutex`, made by
/// `blocking::client::make_rw_mutex`: `std::unique_lock` takes it exclusively (a writer),
/// `std::shared_lock` shared (a reader), in this process and elsewhere (see
/// `redlock::rw_mutex`).
///
/// Each hold belongs to the calling thread, and, as with `std::shared_mutex`, several threads
/// may hold one object (or its copies) shared at once: each acquires on the nodes at once,
/// with an entry of its own, and the nodes decide (a thread that wants it exclusively waits
/// there until the others have left it, keeping new readers out meanwhile). A thread holds it
/// once, shared or exclusive: asking again from the thread that holds it throws
/// `boost::system::system_error` with `errc::resource_deadlock_would_occur` instead of waiting
/// for itself.
///
/// - `lock()` and `lock_shared()` wait as `redlock::rw_mutex::acquire` does (`options::tries`,
///   `options::wait`) and throw `boost::system::system_error` with the library's error code
///   (`error::taken`, `failed`, `misconfigured`, `shut_down`, ...) when they get no lock;
///   `what()` names the lock and what each node answered.
/// - `try_lock()` and `try_lock_shared()` make one attempt; the `_for` and `_until` forms try
///   until the deadline (a release wakes them early; the last attempt starts at the deadline).
///   They return false when the lock is held in the other mode (or, for a writer, by another
///   writer; for a reader, also while a writer waits for it), and throw as `lock()` does when
///   the nodes could not answer at all.
/// - `unlock()` and `unlock_shared()` give back the calling thread's hold of that mode and wait
///   for the nodes (bounded by the per-node deadline); they never throw and do nothing when
///   the thread holds none. On the client's io thread the release goes on in the background.
class rw_mutex
{
  public:
    /// Takes it exclusively, waiting as the class comment says. Throws
    /// `boost::system::system_error` when it cannot.
    void lock();
    /// One exclusive attempt: true when the calling thread now holds it, false when others do.
    bool try_lock();
    /// As `try_lock`, trying (and waiting for releases) until `timeout` has passed.
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout)
    {
        return try_within(detail::timed_wait(timeout), false);
    }
    /// As `try_lock_for(deadline - Clock::now())`, the deadline read once on `Clock`.
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline)
    {
        return try_within(detail::timed_wait_until(deadline), false);
    }
    /// Gives back the calling thread's exclusive hold.
    void unlock() noexcept;

    /// Takes it shared, waiting as the class comment says. Throws
    /// `boost::system::system_error` when it cannot.
    void lock_shared();
    /// One shared attempt: true when the calling thread now holds it shared, false when a
    /// writer holds it or waits for it.
    bool try_lock_shared();
    /// As `try_lock_shared`, trying (and waiting for releases) until `timeout` has passed.
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout)
    {
        return try_within(detail::timed_wait(timeout), true);
    }
    /// As `try_lock_shared_for(deadline - Clock::now())`, the deadline read once on `Clock`.
    template <class Clock, class Duration>
    bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration>& deadline)
    {
        return try_within(detail::timed_wait_until(deadline), true);
    }
    /// Gives back the calling thread's shared hold.
    void unlock_shared() noexcept;

    /// Whether the calling thread holds it exclusively.
    bool owns_lock() const;
    /// Whether the calling thread holds it shared.
    bool owns_shared() const;
    /// The calling thread's fencing token (with `options::fencing`, while it holds the lock
    /// exclusively), 0 otherwise.
    std::uint64_t fencing_token() const;
    /// What each node did in the last acquisition or release through this lock.
    report last_report() const;
    /// The lock's name, as `redlock::rw_mutex::name()`.
    const std::string& name() const noexcept;
    /// The options the lock was made with.
    const redlock::options& options() const noexcept;

  private:
    friend class client;
    explicit rw_mutex(std::shared_ptr<detail::rw_mutex_core> core) noexcept : core_(std::move(core))
    {
    }

    /// One attempt when `timeout` is 0, attempts until it has passed otherwise.
    bool try_within(std::chrono::milliseconds timeout, bool shared);

    std::shared_ptr<detail::rw_mutex_core> core_;
};

/// A `redlock::client` with an io_context of its own, run by a thread the client owns, for
/// programs that do not run one themselves. Its mutexes block the calling thread until the
/// nodes have answered.
///
/// Destroying the client ends it cleanly: blocking calls still waiting in other threads are
/// cancelled (they throw `error::shut_down`), every lock and permit still held through its
/// mutexes, semaphores and read-write locks is released, the destructor waits for those
/// releases and for the client's other background work (`redlock::client::async_shutdown`),
/// then joins the thread. Mutexes that outlive their client throw `error::shut_down` from then
/// on; their `unlock` does nothing.
///
/// Thread-safe: any thread may make mutexes and use them, except the client's own io thread
/// (completion handlers of `nonblocking()` operations run there), where every blocking call
/// would wait for itself: those throw `boost::system::system_error` with
/// `boost::system::errc::resource_deadlock_would_occur` instead.
class client
{
  public:
    /// Starts the io thread. Throws `boost::system::system_error` with
    /// `error::invalid_argument` and a message naming the field when `cfg` is unusable,
    /// without starting anything. No I/O: connections open on first use.
    explicit client(redlock::config cfg);
    client(const client&) = delete;
    client& operator=(const client&) = delete;
    /// A moved-from client may only be destroyed or assigned to.
    client(client&& other) noexcept;
    /// Shuts down the client assigned over (see `~client`), then takes `other`'s.
    client& operator=(client&& other) noexcept;
    /// See the class comment. On the client's own io thread it cannot wait: it cancels and
    /// releases as usual and lets the thread finish and clean up by itself.
    ~client();

    /// A lock named `name` with `opts`, as `redlock::client::make_mutex`: throws
    /// `boost::system::system_error` with `error::invalid_argument` when the name is empty
    /// or an option is out of range. No I/O.
    mutex make_mutex(std::string name, options opts);
    /// `make_mutex(name, options{})`.
    mutex make_mutex(std::string name);
    /// A multi-resource lock (all of `names` or none on each node), as
    /// `redlock::client::make_multi_mutex`.
    mutex make_multi_mutex(std::vector<std::string> names, options opts = {});

    /// A semaphore named `name` of `permits` permits with `opts`, as
    /// `redlock::client::make_semaphore`: throws `boost::system::system_error` with
    /// `error::invalid_argument` when `permits` is below 1, the name is empty or an option is
    /// out of range or not for semaphores. No I/O.
    semaphore make_semaphore(std::string name, std::ptrdiff_t permits, options opts);
    /// `make_semaphore(name, permits, options{})`.
    semaphore make_semaphore(std::string name, std::ptrdiff_t permits);

    /// A read-write lock named `name` with `opts`, as `redlock::client::make_rw_mutex`: throws
    /// `boost::system::system_error` with `error::invalid_argument` when the name is empty or
    /// an option is out of range or not for read-write locks. No I/O.
    rw_mutex make_rw_mutex(std::string name, options opts);
    /// `make_rw_mutex(name, options{})`.
    rw_mutex make_rw_mutex(std::string name);

    /// The configuration in use.
    const redlock::config& config() const noexcept;
    /// A snapshot of each node's counters, in config order.
    std::vector<redlock::node_counters> node_counters() const;
    /// The asynchronous client underneath, on the io thread's executor: its operations take
    /// any completion token, and share connections with the blocking mutexes. Handlers run
    /// on the io thread, so they must not block, nor call this facade.
    redlock::client& nonblocking() noexcept;

  private:
    std::shared_ptr<detail::client_core> core_;
};

}  // namespace redlock::blocking
