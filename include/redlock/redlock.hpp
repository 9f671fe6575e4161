// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// Umbrella header: everything a user of redlock names.

#include <redlock/client.hpp>
#include <redlock/config.hpp>
#include <redlock/election.hpp>
#include <redlock/error.hpp>
#include <redlock/fence.hpp>
#include <redlock/fenced_store.hpp>
#include <redlock/guard.hpp>
#include <redlock/inspect.hpp>
#include <redlock/leader.hpp>
#include <redlock/lock_event.hpp>
#include <redlock/mutex.hpp>
#include <redlock/node.hpp>
#include <redlock/node_error.hpp>
#include <redlock/observability.hpp>
#include <redlock/options.hpp>
#include <redlock/report.hpp>
#include <redlock/rw_mutex.hpp>
#include <redlock/semaphore.hpp>
#include <redlock/with_lock.hpp>
