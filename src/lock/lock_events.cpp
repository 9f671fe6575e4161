// SPDX-License-Identifier: BSL-1.0
#include "lock/lock_events.hpp"

#include "lock/client_impl.hpp"
#include "lock/lock_state.hpp"

#include <utility>

namespace redlock::detail {

namespace {

// Calls the observer; what it throws is dropped, since it would otherwise end the lock
// operation (or, from a destructor's release, the program) that told it.
void notify(const client_impl& c, const lock_event& e) noexcept
{
    try {
        c.cfg.observer(e);
    } catch (...) {
        // The observer's own failure is not the lock's.
    }
}

}  // namespace

bool observed(const client_impl& c) noexcept
{
    return static_cast<bool>(c.cfg.observer);
}

clock::time_point event_time(const client_impl& c) noexcept
{
    return observed(c) ? clock::now() : clock::time_point{};
}

void emit(const mutex_state& m, lock_event_kind kind, clock::time_point since, int attempts,
          boost::system::error_code ec)
{
    if (!observed(*m.client)) {
        return;
    }
    notify(*m.client, {.kind = kind,
                       .type = m.rules->name,
                       .name = m.display_name(),
                       .elapsed = clock::now() - since,
                       .attempts = attempts,
                       .error = ec});
}

void emit_acquired(lock_state& l, clock::time_point since, int attempts)
{
    const mutex_state& m = *l.mutex;
    if (!observed(*m.client)) {
        return;
    }
    l.granted_at = clock::now();
    notify(*m.client, {.kind = lock_event_kind::acquired,
                       .type = m.rules->name,
                       .name = m.display_name(),
                       .elapsed = l.granted_at - since,
                       .attempts = attempts});
}

void emit_hold_end(lock_state& l, lock_event_kind kind)
{
    if (observed(*l.mutex->client) && !std::exchange(l.hold_ended, true)) {
        emit(*l.mutex, kind, l.granted_at, 0);
    }
}

void emit_extension(const lock_state& l, clock::time_point since, boost::system::error_code ec)
{
    if (!l.hold_ended) {
        emit(*l.mutex, ec ? lock_event_kind::extend_failed : lock_event_kind::extended, since, 1,
             ec);
    }
}

}  // namespace redlock::detail
