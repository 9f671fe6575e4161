// SPDX-License-Identifier: BSL-1.0
#pragma once

// The acquires of one client that wait to retry a lock another owner holds, per key, in the
// order they began to wait. A release wakes those of them that it may let in
// (`release_effects`): for a lock of one owner one of them, not all (the client sends one
// contender per key at a time, and its waiters take the lock in turn); for readers all of
// them; for a semaphore one per permit released.

#include "lock/hand_off_tally.hpp"
#include "lock/waiter_state.hpp"
#include "lock/wake_rule.hpp"
#include "protocol/fair_message.hpp"
#include "quorum/write_hold.hpp"

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// One waiting acquire, owned by its coroutine, and registered under each of its keys. Its
/// state changes only by events (`waiter_state.hpp`): the coroutine reports its pauses and
/// attempts, the line reports releases.
class waiter
{
  public:
    /// `rule`: what a release may let in of the lock it wants (`release_effects`).
    explicit waiter(boost::asio::steady_timer& pause, wake_rule rule = wake_rule::one_owner)
        : pause_(&pause), rule_(rule)
    {
    }

    waiter_state state() const noexcept { return state_; }
    wake_rule rule() const noexcept { return rule_; }
    /// Moves on by `e`, which must be possible in its state.
    void on(waiter_event e);

    /// Its retry pause: a wake-up cancels the wait, a yield moves its end.
    boost::asio::steady_timer& pause() const noexcept { return *pause_; }

    /// Its attempt begins: a wake-up that led here is used, and a hold on the nodes' writes
    /// that came with it passes to the attempt's round, which ends it once queued.
    write_hold attempt_begins();

    /// Only while `woken_by_hand_off`, when the hand-off holds the nodes' writes for it: the
    /// hold, which ends once this waiter's attempt is queued (or passes to whoever takes its
    /// turn), and the owner value of the release handed to it, which was sent without its
    /// message.
    write_hold held_writes;
    std::string handed_value;
    /// Woken by a release that named its client alone (a registered waiter's message, see
    /// `waiters_part`): no other client races it for the key, so its attempt need not wait
    /// the random moment of `release_wake_spread`. Until its attempt begins.
    bool woken_alone = false;
    /// A fair waiter's: the nodes that handed it the lock since its last clean-up.
    hand_off_tally hand_offs;

  private:
    boost::asio::steady_timer* pause_;
    wake_rule rule_;
    waiter_state state_ = waiter_state::attempting;
};

/// How long a client may keep a contended lock through consecutive hand-offs between its own
/// acquires: a quarter of the expiry, so that waiters of other clients (which only hear of
/// the lock when it is released for real) wait for about that long at most, while a client
/// alone loses a message round trip once per run.
inline std::chrono::steady_clock::duration longest_run(std::chrono::milliseconds expiry)
{
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(expiry) / 4;
}

/// How long a yielding client (see `waiter_queue::hand_off`) leaves the lock to other
/// clients' waiters before its own try again: a few loopback round trips, enough for a
/// woken waiter elsewhere to have its attempt answered; a client alone loses this once per
/// run.
inline constexpr std::chrono::milliseconds yield_courtesy{10};

/// A release's message reaches the clients that wait for the key in the same order every
/// time (Redis writes a channel's messages in subscription order), so the clients woken
/// together would race for the key with the same one always ahead: with a client that hands
/// the key between its own acquires, two clients could share the key while others starve.
/// Like a retry after a failed attempt (Redlock's random delay, which desynchronises
/// contenders), an attempt prompted by a release first waits a random moment up to this
/// long: longer than the spread of the message's arrival on loopback, and short beside a
/// retry delay. Several woken clients pay only the smallest of their waits, about this
/// divided by their number plus one.
inline constexpr std::chrono::microseconds release_wake_spread{1000};

/// A random moment in [0, release_wake_spread], for the wait above.
std::chrono::microseconds random_release_wake_delay();

/// Now, in microseconds of the system clock: since when a client registers as waiting
/// (`waiter_queue::since`). The system clock, so that clients on several machines compare.
std::uint64_t waiting_since_now();

/// The client's lines of waiters, one per key, and what the client knows of each key's
/// holder. It decides whom a release wakes from the waiters' states and rules alone, and does
/// the wake-up's I/O on the waiters' pause timers. A release message wakes whom
/// `release_effects` says; a hand-off of the client's own release (locks of one owner only)
/// wakes the longest-waiting pausing waiter (`next_in_line`). On the client's strand.
class waiter_queue
{
  public:
    /// `w` begins to wait for `key`. With `turn_value`, it is a fair waiter of that owner
    /// value: the nodes' queue decides its turn, and only a message naming that value wakes
    /// it (`released`); the client's hand-offs and other messages pass it by.
    void enter(const std::string& key, waiter& w, std::string_view turn_value = {});
    /// Takes `w` out of the line of `key`. If it is woken (`is_woken`), the next pausing
    /// waiter is woken the same way in its place and takes over its hold on the writes.
    /// True when `w` still has the hold because nobody took its turn: the caller then
    /// announces the release (`w.handed_value`) that went out without its message, and ends
    /// the hold.
    bool leave(std::string_view key, waiter& w);

    /// This client is releasing `key`, held as `value`: wakes the longest-waiting waiter
    /// that is pausing, so that its attempt is written right behind the release on every
    /// connection. Returns it. With `hold_writes_of`, it holds those nodes' writes for that
    /// waiter (see `waiter::held_writes`).
    ///
    /// Unless the client has held the key through consecutive acquisitions for `max_run`
    /// or longer (by `now`): a hand-off keeps the key from ever being free, so other
    /// clients' waiters would never get it. The client then yields: it wakes nobody
    /// (returns null), the release goes out for real, with its message, and its own
    /// waiters ignore that message: other clients' waiters get a head start. Its
    /// longest-waiting pausing waiter tries again after `yield_courtesy` if no other
    /// owner's release wakes it first, and new acquires join the line meanwhile (`ours`).
    waiter* hand_off(
        std::string_view key, std::string_view value,
        const std::vector<std::shared_ptr<node_link>>* hold_writes_of,
        std::chrono::steady_clock::time_point now = {},
        std::chrono::steady_clock::duration max_run = std::chrono::steady_clock::duration::max());
    /// Node `node` (its index in the client's nodes, if known) said that `key`, held as
    /// `value`, was released; or, for a fair lock, a message for one of the client's fair
    /// waiters (`fair_message`): that it is the head of the queue with the key free, which
    /// wakes it (`waiter_event::named_head`) and nobody else; or that the key was handed to
    /// it, which wakes it the same way once a quorum of nodes did so with the stamp of its
    /// last clean-up (`hand_off_tally`). Each node of the lock sends such a message, some of
    /// them late: only the first for a given release wakes waiters, and those of a release
    /// this client handed off (or yielded) do not count at all. The key's waiters that are
    /// not pausing are the client's contenders, which only see the release
    /// (`waiter_event::release_seen`); of the pausing ones, those that `release_effects`
    /// says are woken. Returns the longest-waiting of them. A later node's message of the
    /// same release is seen by the contenders, and wakes again the waiter the first one woke
    /// if its attempt has failed meanwhile: that attempt may have reached this node before
    /// the release did.
    ///
    /// `named`: the message came on the client's own channel, naming it alone among the
    /// waiting clients (`waiter::woken_alone`).
    waiter* released(std::string_view key, std::string_view value,
                     std::size_t node = static_cast<std::size_t>(-1), bool named = false);

    /// Since when, in microseconds of the system clock, the client waits for `key`, as its
    /// waiters register it on the nodes (`attempt_args::waiting_since`): from the first of
    /// them, and again from each release of the key this client sends out for real (which
    /// takes it out of the registry: its waiters that remain register again, behind the
    /// clients that waited meanwhile). 0 when none of its acquires waits for `key`.
    std::uint64_t since(std::string_view key) const;

    /// An acquire of this client got `keys` at `now`.
    void granted(const std::vector<std::string>& keys,
                 std::chrono::steady_clock::time_point now = {});
    /// An attempt of this client on `keys` failed.
    void attempt_failed(const std::vector<std::string>& keys);
    /// Whether one of `keys` is held by an acquire of this client, or being handed to one,
    /// while others of its acquires wait for it, or the client yields it (see `hand_off`):
    /// a new acquire then joins the line instead of making an attempt that would fail (or
    /// that would win by being written right behind the release). Only as good as what the
    /// client has seen: a lock of this client that expired unreleased still looks held until
    /// a failed attempt or another owner's release says otherwise, which costs a new acquire
    /// one retry delay.
    bool ours(const std::vector<std::string>& keys) const;

    /// Whether a waiter of one of `keys` was woken by a release message and has not begun
    /// its attempt: what the release freed is on its way to this client's waiters, whose
    /// attempts first wait a random moment (`release_wake_spread`). A new acquire of the
    /// client then joins the line instead of attempting at once, which would take what the
    /// release freed from the waiters it woke and send them back to their retry delays.
    bool taking_a_release(const std::vector<std::string>& keys) const;

    std::size_t waiting(std::string_view key) const;

  private:
    /// Who holds a key, as far as the client has seen.
    enum class holder {
        /// Another owner, or nobody.
        not_this_client,
        /// An acquire of this client, or one it is handing the key to, while others of its
        /// acquires wait for the key.
        this_client,
        /// The client released the key for real after a long run (see `hand_off`), and no
        /// release has been seen since.
        yielded,
    };

    /// A fair waiter and the owner value that names it.
    struct turn
    {
        std::string value;
        waiter* w = nullptr;
    };

    /// A release this client has acted on: its owner value, whether it was the client's own
    /// (handed off or yielded), and the waiter it woke, if any (compared, never followed: it
    /// may have left since).
    struct answered_release
    {
        std::string value;
        bool ours = false;
        const waiter* woken = nullptr;
    };

    struct line
    {
        /// In the order they began to wait.
        std::vector<waiter*> waiters;
        /// The fair waiters, whose order is the nodes' queue's.
        std::vector<turn> turns;
        /// The last releases this client has sent a waiter for (or that a contender saw),
        /// newest last: a node that falls behind may report a release after several newer
        /// ones. Owner values are fresh for each acquisition unless the options fix one; with
        /// a fixed one, a waiter may miss a wake-up and retry after its delay instead.
        std::vector<answered_release> answered;
        holder held_by = holder::not_this_client;
        /// Since when the client has held the key through consecutive acquisitions (while
        /// `this_client`), for the bound on hand-offs.
        std::chrono::steady_clock::time_point run_started{};
        /// See `waiter_queue::since`.
        std::uint64_t since = 0;

        void answer(std::string_view value, bool ours, const waiter* woken = nullptr);
        /// The release of `value` if this client has acted on it.
        const answered_release* answered_as(std::string_view value) const;
        bool was_answered(std::string_view value) const { return answered_as(value) != nullptr; }
        /// `w`, if it is still in the line.
        waiter* still_waiting(const waiter* w) const;
        /// Whom a hand-off wakes: the longest-waiting pausing waiter, if any.
        waiter* next_in_line() const;
    };

    /// Wakes `w` (`hand_off` or `release_message`) and ends the wait of its pause.
    static void wake(waiter& w, waiter_event how);
    /// What its waiters' states and rules are, in order, for `release_effects`.
    static std::vector<line_member> members_of(const line& l);
    /// Another node's message of the release `earlier` (see `released`).
    static waiter* repeated(line& l, const answered_release& earlier, bool named);
    /// A fair lock's message `m` for the fair waiter `w`, from node `node` (see `released`).
    static waiter* tell_turn(waiter& w, const fair_message& m, std::size_t node);
    /// The client yields `l`'s key, released as `value`, at `now` (see `hand_off`).
    static void yield(line& l, std::string_view value, std::chrono::steady_clock::time_point now);

    std::map<std::string, line, std::less<>> lines_;
};

}  // namespace redlock::detail
