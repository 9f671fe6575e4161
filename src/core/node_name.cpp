// SPDX-License-Identifier: BSL-1.0
#include "core/node_name.hpp"

#include <vector>

namespace redlock {
namespace detail {

std::string address_name(const server_address& a)
{
    std::string out;
    const bool ipv6 = a.host.find(':') != std::string::npos;
    if (ipv6) {
        out += '[';
    }
    out += a.host;
    if (ipv6) {
        out += ']';
    }
    out += ':';
    out += std::to_string(a.port);
    return out;
}

namespace {

void append_host_list(std::string& out, const std::vector<server_address>& list)
{
    for (std::size_t i = 0; i < list.size(); ++i) {
        if (i > 0) {
            out += ',';
        }
        out += address_name(list[i]);
    }
}

}  // namespace
}  // namespace detail

// The public member is defined here, not with the rest of node's code in src/api/, because
// the layers below the public types name nodes with it.
std::string node::endpoint() const
{
    // Appended piece by piece: g++ 12 at -O3 warns falsely (-Wrestrict) about
    // `const char* + std::string` here.
    if (!cluster_seeds.empty()) {
        std::string name = tls ? "rediss-cluster://" : "redis-cluster://";
        detail::append_host_list(name, cluster_seeds);
        return name;
    }
    if (!sentinels.empty()) {
        std::string name = tls ? "rediss-sentinel://" : "redis-sentinel://";
        detail::append_host_list(name, sentinels);
        name += '/';
        name += master_name;
        return name;
    }
    if (!unix_path.empty()) {
        return "unix:" + unix_path;
    }
    return detail::address_name(server_address{host, port});
}

}  // namespace redlock
