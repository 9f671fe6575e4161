// SPDX-License-Identifier: BSL-1.0
#pragma once

// Scenario (d), the servers' bound: the lock protocol's commands (the library's own SET NX PX
// and compare-and-delete script, from src/protocol/scripts) sent through the library's node layer
// (src/node/connection) with a fixed pipeline depth, and no lock logic at all. Whatever the
// library reaches is then read as a share of what the same servers do for the same commands
// over the same connections in the same run.

#include "util.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

/// One command to the node at `url` (any URL the library accepts), blocking: set-up only.
/// The reply's text ("OK", the bulk string, the integer's digits). Throws std::runtime_error
/// on an error reply, a failed connection or no reply within 5 s.
std::string node_request(const std::string& url, std::initializer_list<std::string_view> args);

struct raw_throughput_figures
{
    int depth = 1;
    int connections_per_node = 1;
    double seconds = 0;
    std::int64_t commands = 0;
    double commands_per_s = 0;
    /// Lock cycles per second. raw_throughput: commands per second / (2 x nodes), SET NX PX +
    /// compare-and-delete on every node. raw_throughput_on_keys: commands per second / 2,
    /// SET NX PX + compare-and-delete on one node (a Redis Cluster's master of the key).
    double cycles_per_s = 0;
    /// Round trip of one pipelined batch (depth commands) on one connection.
    samples batch_latency;
    double client_cores = 0;
    double servers_cores = -1;
    /// The rest of the machine meanwhile (cpu_meter::others_cores).
    double others_cores = -1;
    /// Replies checked: every SET answered OK and every delete 1, no error reply.
    bool replies_as_expected = true;
    /// The first reply (or failure) that was not as expected.
    std::string first_unexpected;
};

/// `connections_per_node` connections to each node, all driven at once; each submits `depth`
/// requests (depth/2 keys, SET then delete each; depth 1 alternates the two), which its
/// connection writes together, waits for all their replies, and repeats.
raw_throughput_figures raw_throughput(const std::vector<std::string>& urls, int depth,
                                      int connections_per_node, clock::duration warmup,
                                      clock::duration measure, const std::string& key_prefix,
                                      const std::vector<int>& server_pids);

/// One connection to each node, all driven at once; the connection to node n submits
/// `depth` requests on the first depth/2 keys of keys[n] (SET then delete each; depth 1
/// alternates the two on its first key), waits for all their replies, and repeats. For a
/// Redis Cluster: its masters' URLs, each with keys whose slots it owns.
raw_throughput_figures raw_throughput_on_keys(const std::vector<std::string>& urls,
                                              const std::vector<std::vector<std::string>>& keys,
                                              int depth, clock::duration warmup,
                                              clock::duration measure,
                                              const std::vector<int>& server_pids);

struct raw_latency_figures
{
    /// One node, one connection, one command at a time.
    samples node_set;
    samples node_delete;
    /// All nodes at once, one connection each: the command submitted to every node, then
    /// the replies awaited. Until the quorum's reply (the least an acquire can take) and
    /// until every reply (the least a release can take).
    samples round_set_quorum;
    samples round_set;
    samples round_delete;
    /// The same SET round to the quorum's reply, each after the machine idled for
    /// `idle_pause`: what a hand-off faces after a hold during which nothing ran (idle CPUs
    /// wake slowly, in a VM especially), unlike rounds sent back to back.
    samples round_set_quorum_after_idle;
};

/// How long the machine idles before each round of `round_set_quorum_after_idle`: the
/// contended scenario's default hold.
constexpr auto idle_pause = std::chrono::milliseconds(1);

/// Round trips without load: a third of `measure` on one node, a third as all-node rounds
/// back to back, a third as all-node rounds after an idle pause. Throws std::runtime_error
/// on an unexpected reply.
raw_latency_figures raw_latency(const std::vector<std::string>& urls, clock::duration warmup,
                                clock::duration measure, const std::string& key_prefix);

}  // namespace bench
