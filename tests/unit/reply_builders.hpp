// SPDX-License-Identifier: BSL-1.0
#pragma once

// Replies as a server would send them, for the state machines' tests: each fsm is fed what its
// I/O code would have read.

#include "resp/resp.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace redlock::test {

inline detail::resp::reply reply_of(detail::resp::kind type, std::string text = {})
{
    detail::resp::reply r;
    r.type = type;
    r.text = std::move(text);
    return r;
}

inline detail::resp::reply integer(std::int64_t n)
{
    detail::resp::reply r = reply_of(detail::resp::kind::integer);
    r.integer = n;
    return r;
}

inline detail::resp::reply bulk(std::string text)
{
    return reply_of(detail::resp::kind::bulk_string, std::move(text));
}

inline detail::resp::reply status(std::string text)
{
    return reply_of(detail::resp::kind::simple_string, std::move(text));
}

inline detail::resp::reply error(std::string text)
{
    return reply_of(detail::resp::kind::error, std::move(text));
}

inline detail::resp::reply array(std::vector<detail::resp::reply> elements)
{
    detail::resp::reply r = reply_of(detail::resp::kind::array);
    r.elements = std::move(elements);
    return r;
}

}  // namespace redlock::test
