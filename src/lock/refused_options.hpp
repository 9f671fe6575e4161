// SPDX-License-Identifier: BSL-1.0
#pragma once

// The options a kind of lock cannot take, each with the reason a user is told.

#include <redlock/options.hpp>

#include <initializer_list>
#include <string>
#include <string_view>

namespace redlock::detail {

/// An option of `redlock::options` that a kind of lock refuses when it is set.
struct refused_option
{
    bool options::*flag;
    std::string_view why;
};

/// The reason of the first option in `refused` that `opts` sets; empty when it sets none.
inline std::string first_refused(const options& opts, std::initializer_list<refused_option> refused)
{
    for (const refused_option& r : refused) {
        if (opts.*(r.flag)) {
            return std::string(r.why);
        }
    }
    return {};
}

/// options.reentrant and options.set_nx_on_extend, which a lock whose holders are entries of
/// their own (a `kind` such as "semaphore" or "read-write lock") refuses: each acquisition is
/// one entry, and an entry that expired may be another holder's place by now.
inline std::string entry_lock_refusal(const options& opts, std::string_view kind)
{
    const std::string on = " cannot be used on a " + std::string(kind) + ": ";
    if (opts.reentrant) {
        return "options.reentrant" + on + "each acquisition is an entry of its own";
    }
    if (opts.set_nx_on_extend) {
        return "options.set_nx_on_extend" + on +
               "an entry that expired may be another holder's place by now";
    }
    return {};
}

}  // namespace redlock::detail
