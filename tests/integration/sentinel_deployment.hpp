// SPDX-License-Identifier: BSL-1.0
#pragma once

// A Sentinel node for the integration tests: a master, its replica and three Sentinels.

#include "fixture.hpp"

#include <memory>
#include <string>
#include <vector>

namespace redlock::test {

// A master, its replica in sync, and three Sentinels that know both.
struct sentinel_deployment
{
    redis_server master{{"--repl-diskless-sync-delay", "0"}};
    redis_server replica{{"--replicaof", "127.0.0.1", std::to_string(master.port()),
                          "--repl-diskless-sync-delay", "0"}};
    std::vector<std::unique_ptr<redis_server>> sentinels;

    sentinel_deployment()
    {
        BOOST_TEST_REQUIRE(eventually([&] { return replica_streams(master.port()); }, 10s));
        // Started after the replica is in sync: a Sentinel learns of replicas from the
        // master's INFO, which it reads at once and then every 10 s. Down after 30 s: only a
        // forced failover happens during a test, not one of a loaded machine's stalls.
        for (int i = 0; i < 3; ++i) {
            sentinels.push_back(redis_server::sentinel("locks", master.port(), 2, 30s));
        }
        // A Sentinel promotes only a replica it is connected to and has heard from (flags
        // exactly "slave", its link to the master up).
        for (const auto& s : sentinels) {
            BOOST_TEST_REQUIRE(eventually(
                [&] {
                    const std::string replicas =
                        redis_command(s->port(), {"SENTINEL", "replicas", "locks"});
                    return replicas.find(std::to_string(replica.port())) != std::string::npos &&
                           replicas.find("flags slave ") != std::string::npos &&
                           replicas.find("master-link-status ok") != std::string::npos;
                },
                15s));
        }
    }

    std::string url() const
    {
        std::string u = "redis-sentinel://";
        for (std::size_t i = 0; i < sentinels.size(); ++i) {
            u += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(sentinels[i]->port());
        }
        return u + "/locks";
    }
};

}  // namespace redlock::test
