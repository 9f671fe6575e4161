// SPDX-License-Identifier: BSL-1.0
#include "blocking/blocking_calls.hpp"

#include <redlock/error.hpp>

#include <boost/system/system_error.hpp>

#include <algorithm>
#include <climits>
#include <string_view>

namespace redlock::blocking::detail {

using steady = std::chrono::steady_clock;

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

}  // namespace redlock::blocking::detail
