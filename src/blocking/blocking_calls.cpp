// SPDX-License-Identifier: BSL-1.0
#include "blocking/blocking_calls.hpp"

#include "blocking/thread_holds.hpp"

#include <redlock/error.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <climits>
#include <string_view>

namespace redlock::blocking::detail {

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

void fail(boost::system::error_code ec, const std::string& what)
{
    throw boost::system::system_error(ec, what);
}

bool conflict(boost::system::error_code ec, const report& r)
{
    return ec == error::taken || (ec == error::failed && r.count(node_status::taken) > 0);
}

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

bool settle_acquisition(const client_core& c, std::mutex& m, thread_holds& held, report& last,
                        std::tuple<boost::system::error_code, redlock::guard> acquired,
                        const std::string& name, bool conflict_is_false)
{
    auto& [ec, g] = acquired;
    const report rep = g.last_report();
    redlock::guard too_late;  // a hold that came after the shutdown, released unlocked
    {
        std::lock_guard lock(m);
        last = rep;
        if (!ec && !c.closed()) {
            held.push_back(thread_hold{std::this_thread::get_id(), std::move(g), 1});
            return true;
        }
        too_late = std::move(g);
    }
    if (c.closed() || ec == boost::asio::error::operation_aborted) {
        fail(make_error_code(error::shut_down), name + ": its blocking::client was destroyed");
    }
    if (conflict_is_false && conflict(ec, rep)) {
        return false;
    }
    fail(ec, with_report(name, rep));
}

}  // namespace redlock::blocking::detail
