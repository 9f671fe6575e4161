// SPDX-License-Identifier: BSL-1.0
#pragma once

// How messages and reports name a server and a node. Here, below every layer that names one
// (net's connect, the engine's handshake, the node links), so that none of them calls up
// into the public types' code; `node::endpoint()` is defined beside it. Pure: no I/O.

#include <redlock/node.hpp>

#include <string>

namespace redlock::detail {

/// "host:port" ("[host]:port" for IPv6): how a cluster's servers are named in reports.
std::string address_name(const server_address& a);

}  // namespace redlock::detail
