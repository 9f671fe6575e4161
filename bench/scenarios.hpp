// SPDX-License-Identifier: BSL-1.0
#pragma once

// The benchmark's scenarios. Each prints one line for people and one `RESULT {json}` line
// per parameter set.

#include "util.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

/// What every scenario needs to know about the run.
struct run_settings
{
    std::vector<std::string> urls;
    /// The redis-server processes when this program started them (for their CPU time);
    /// empty with --nodes.
    std::vector<int> server_pids;
    clock::duration duration = std::chrono::seconds(5);
    clock::duration warmup = std::chrono::milliseconds(500);
    /// Keys of this run start with it, so that runs never meet each other's keys.
    std::string key_prefix;
    /// Threads of the uncontended scenarios, each with an io_context and a client of its own.
    int threads = 1;
    /// The uncontended scenarios' clients count their lock events (`config::observer`), to
    /// measure what an observer costs.
    bool count_events = false;
};

/// The servers' figures measured by scenario `server` in this run; zero when it did not run.
struct server_bound
{
    double pipelined_cycles_per_s = 0;
    double unpipelined_cycles_per_s = 0;
    /// One node, SET NX PX, one at a time.
    double node_set_p50_us = 0;
    /// SET NX PX on every node at once, until the quorum's reply.
    double round_set_quorum_p50_us = 0;
    /// Compare-and-delete on every node at once, until every reply.
    double round_delete_p50_us = 0;
    /// The SET round to the quorum's reply after the machine idled for a 1 ms hold.
    double round_set_quorum_after_idle_p50_us = 0;
};

/// (d) The command mix sent raw: round trips without load, then the throughput at each
/// pipeline depth with each number of connections per node. The bounds are the best seen.
server_bound run_server(const run_settings& rs, const std::vector<int>& depths,
                        const std::vector<int>& connections);

/// (a) `concurrency` coroutines, each acquiring and releasing its own key in a loop.
void run_uncontended(const run_settings& rs, int concurrency, const server_bound& bound);

/// (e) The uncontended loop of (a) twice: with every node up, then with one node silenced
/// (SIGSTOP) for the whole measurement and continued (SIGCONT) afterwards. Reports the
/// throughput and the acquire and release latencies of the second run as ratios to the
/// first. Needs the servers this program started (their pids); `stopped_node` indexes them.
void run_degraded(const run_settings& rs, int concurrency, std::size_t stopped_node);

enum class retry_kind {
    /// The library's default: uniformly random 50 to 250 ms.
    library_default,
    /// Uniformly random 1 to 5 ms.
    fast,
};

/// Who competes in (b).
enum class contenders {
    /// Coroutines of one client.
    shared_client,
    /// Coroutines of this process, a client each.
    separate_clients,
    /// A process each (forked), as separate services are.
    processes,
};
std::string_view to_string(contenders c);

struct contended_outcome
{
    /// Mutual-exclusion violations seen (must be 0).
    std::int64_t violations = 0;
    double acquisitions_per_s = 0;
};

/// (b) `workers` workers competing for one key, each holding it for `hold`, as `who` says;
/// with `stopped_node`, that server is stopped (SIGSTOP) for the run; with `fair`, on a fair
/// mutex (options::fair).
contended_outcome run_contended(const run_settings& rs, int workers, std::chrono::milliseconds hold,
                                retry_kind retry, contenders who, const server_bound& bound,
                                std::optional<std::size_t> stopped_node = {}, bool fair = false);

/// (g) (b) with a process per worker and the library's retry delay, twice: with every node up,
/// then with `stopped_node` stopped. A stopped node of five leaves a quorum; how much of its
/// all-up rate contention keeps is the figure.
void run_degraded_contended(const run_settings& rs, int workers, std::chrono::milliseconds hold,
                            std::size_t stopped_node, const server_bound& bound);

/// (c) `k` guards on distinct keys held at once with `expiry`, extended every expiry / 3 by
/// this program (or by the library's watchdog with `watchdog`, where the library has one).
void run_held(const run_settings& rs, int k, std::chrono::milliseconds expiry, bool watchdog);

/// (f) A Redis Cluster as the one node: for each count in `masters`, a cluster of that many
/// masters started for it (without replicas), measured two ways. The uncontended loop of (a)
/// with `concurrency` coroutines against the single node `redis-cluster://...`, and the raw
/// bound of the same cluster: SET NX PX and compare-and-delete sent straight to each master
/// on one connection per master, in pipelines of each of `depths` (the best counts), on keys
/// whose slots that master owns, summed over the masters, in lock cycles/s (a cycle is one
/// SET and one delete, both on the key's master). The servers' CPU is that of the cluster.
void run_cluster(const run_settings& rs, const std::vector<int>& masters, int concurrency,
                 const std::vector<int>& depths);

/// (h) A read-write lock on one key: `readers` readers and `writers` writers of one client,
/// each holding it for `hold` in a loop as (b)'s workers do. Acquisitions/s of reads and
/// writes, against the plain mutex's ceiling of the same run (1 / mean hold: exclusive
/// holds one after the other).
void run_rw(const run_settings& rs, int readers, int writers, std::chrono::milliseconds hold);

/// (i) A semaphore of `permits` permits on one key: `workers` workers of one client, each
/// holding a permit for `hold` in a loop. Acquisitions/s, and the permits in use on average
/// (the time-weighted count of holders).
void run_semaphore(const run_settings& rs, int permits, int workers,
                   std::chrono::milliseconds hold);

/// (j) The fair lock (options::fair) with `workers` workers, a client each, holding it for
/// `hold` in a loop, and the unfair lock the same way in the same run: the fair lock's
/// acquisitions/s as a ratio to the unfair one's, the least served worker's share of the mean,
/// and overtakings (an acquire that began while another worker's was waiting, and got the
/// lock first).
void run_fair(const run_settings& rs, int workers, std::chrono::milliseconds hold);

/// (election) How long leadership stays vacant, the median of `rounds`: from a leader's
/// resignation to its queued successor's grant, and from a leader's crash (its process stops
/// running) to a successor's grant, with locks of `expiry`.
void run_election(const run_settings& rs, int rounds, std::chrono::milliseconds expiry);

/// What scenario scaling runs.
struct scaling_settings
{
    /// Of plain, fair, semaphore, rw.
    std::vector<std::string> kinds = {"plain", "fair", "semaphore", "rw"};
    std::vector<int> processes = {2, 8, 32};
    std::chrono::milliseconds hold{1};
    /// The semaphore's.
    int permits = 4;
    /// After each plain row, the same measurement by this program's peer, run by `peer_script`
    /// (bench/peer/run.sh): empty for none, or "node-redlock".
    std::string peer;
    std::string peer_script;
};

/// The most worker processes of one scaling row.
constexpr int scaling_max_processes = 128;

/// (scaling) How the servers' cost per grant grows with the number of contending processes:
/// for each kind and each count, that many processes (forked, each with an io_context and a
/// client) loop acquire, hold, release on one lock, and every server's counters (INFO: its
/// commands, its CPU time, its commandstats) are read before and after the window; a row per
/// kind and count, after a baseline row of one process cycling on a key of its own.
void run_scaling(const run_settings& rs, const scaling_settings& s);

/// Whether the library has a watchdog (options::auto_extend).
bool library_has_watchdog();

}  // namespace bench
