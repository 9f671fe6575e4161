// SPDX-License-Identifier: BSL-1.0
#pragma once

// Shared pieces of the hostile-server tests: client configs around a fake node, and checks
// on the per-node report.

#include "fake_server.hpp"
#include "integration/fixture.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::test {

/// A config for `nodes`, with short connect timeouts and reconnect pauses so that cases stay
/// quick.
inline redlock::config config_of(std::vector<redlock::node> nodes)
{
    redlock::config c;
    c.nodes = std::move(nodes);
    c.connect_timeout = 500ms;
    c.reconnect_backoff_min = 10ms;
    c.reconnect_backoff_max = 40ms;
    return c;
}

/// Two real redis-servers and the fake node, in that order: a quorum (2 of 3) still forms.
inline redlock::config two_real_and(const redis_cluster& real, const fake_server& fake)
{
    std::vector<redlock::node> nodes;
    for (const std::string& url : real.urls()) {
        nodes.push_back(redlock::node::from_url(url));
    }
    nodes.push_back(fake.node());
    return config_of(std::move(nodes));
}

inline bool contains(std::string_view text, std::string_view part)
{
    return text.find(part) != std::string_view::npos;
}

/// The outcome of the node named `endpoint` in `r`.
inline node_outcome outcome_of(const report& r, const std::string& endpoint)
{
    auto it = std::find_if(r.nodes.begin(), r.nodes.end(),
                           [&](const node_outcome& o) { return o.endpoint == endpoint; });
    BOOST_TEST_REQUIRE((it != r.nodes.end()), "no outcome for " << endpoint);
    return *it;
}

/// A node-level failure that explains itself: error or timed out, with a detail.
inline void expect_clear_failure(const node_outcome& o, std::string_view what)
{
    BOOST_TEST_MESSAGE(what << ": " << o.endpoint << " " << to_string(o.status) << " (" << o.detail
                            << ")");
    BOOST_TEST((o.status == node_status::error || o.status == node_status::timed_out),
               what << ": status " << to_string(o.status));
    BOOST_TEST(!o.detail.empty(), what << ": no detail");
}

inline asio::awaitable<std::tuple<boost::system::error_code>> release_of(redlock::guard& g)
{
    co_return co_await g.async_release(asio::as_tuple(asio::use_awaitable));
}

inline asio::awaitable<std::tuple<boost::system::error_code>> extend_of(redlock::guard& g)
{
    co_return co_await g.async_extend(asio::as_tuple(asio::use_awaitable));
}

inline asio::awaitable<std::tuple<boost::system::error_code, bool>> valid_of(redlock::guard& g)
{
    co_return co_await g.async_valid(asio::as_tuple(asio::use_awaitable));
}

}  // namespace redlock::test
