// SPDX-License-Identifier: BSL-1.0
// A node that is a whole Redis Cluster whose servers speak TLS (`rediss-cluster://`): the client
// asks a seed for CLUSTER SLOTS over TLS and locks on the masters it names, over TLS; without
// the CA it is misconfigured. And what CLUSTER SLOTS names depends on `tls-cluster`.

#include "fixture.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace redlock::test {
namespace {

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

// The space-separated words of a reply as redis_command or tls_command render it.
std::set<std::string> words_of(const std::string& text)
{
    std::set<std::string> out;
    std::istringstream in(text);
    for (std::string w; in >> w;) {
        out.insert(w);
    }
    return out;
}

tls_files server_files(const test_certificates& certs)
{
    return {certs.dir + "/server.crt", certs.dir + "/server.key", certs.dir + "/ca.crt"};
}

// The ports CLUSTER SLOTS names, as `reply` renders it: which of each master's two ports.
struct named_ports
{
    std::size_t plain = 0;
    std::size_t tls = 0;
};
named_ports ports_named(const cluster_deployment& d, const std::string& reply)
{
    const auto words = words_of(reply);
    named_ports n;
    for (std::size_t i = 0; i < d.size(); ++i) {
        n.plain += words.count(std::to_string(d[i].port()));
        n.tls += words.count(std::to_string(d[i].tls_port()));
    }
    return n;
}

std::size_t holder_of(const cluster_deployment& d, std::string_view key)
{
    const auto owner = d.owner_of_slot(cluster_deployment::slot_of(key));
    BOOST_TEST_REQUIRE(owner.has_value());
    return *owner;
}

BOOST_AUTO_TEST_SUITE(cluster_tls)

BOOST_AUTO_TEST_CASE(rediss_cluster_locks_on_every_master_over_tls_and_needs_the_ca)
{
    test_certificates certs;
    const auto started = steady::now();
    cluster_deployment d(3, 0, {}, server_files(certs));
    BOOST_TEST_MESSAGE("TLS cluster of 3 masters ready in " << since(started).count() << " ms");

    // What the client relies on: asked over TLS, CLUSTER SLOTS names the TLS ports (asked over
    // the plain port, the plain ones).
    const named_ports over_tls = ports_named(d, d[0].tls_command({"CLUSTER", "SLOTS"}));
    BOOST_TEST(over_tls.tls == 3u);
    BOOST_TEST(over_tls.plain == 0u);
    const named_ports over_plain = ports_named(d, redis_command(d[0].port(), {"CLUSTER", "SLOTS"}));
    BOOST_TEST(over_plain.plain == 3u);
    BOOST_TEST(over_plain.tls == 0u);

    // Two keys of distinct slots per master.
    std::vector<std::string> keys;
    std::map<std::size_t, int> per_master;
    std::set<std::uint16_t> slots;
    for (int i = 0; keys.size() < 6; ++i) {
        std::string key = "tls-lock-" + std::to_string(i);
        const std::size_t owner = holder_of(d, key);
        if (per_master[owner] < 2 && slots.insert(cluster_deployment::slot_of(key)).second) {
            ++per_master[owner];
            keys.push_back(std::move(key));
        }
    }
    BOOST_TEST_REQUIRE(per_master.size() == 3u);

    asio::io_context io;
    {
        auto cfg = config::from_urls({d.tls_url()});
        cfg.tls.ca_file = certs.dir + "/ca.crt";
        redlock::client c(io.get_executor(), cfg);
        BOOST_TEST(c.config().nodes.size() == 1u);  // the whole cluster is one node
        const auto locking = steady::now();
        std::vector<redlock::guard> guards;
        for (const auto& key : keys) {
            auto [ec, g] = run(io, try_get(c.make_mutex(key, {.expiry = 30s})));
            BOOST_TEST_REQUIRE(!ec, key << ": " << g.last_report().to_string());
            guards.push_back(std::move(g));
        }
        BOOST_TEST_MESSAGE(keys.size() << " locks over TLS in " << since(locking).count() << " ms");
        for (std::size_t k = 0; k < keys.size(); ++k) {
            const std::string& key = keys[k];
            const std::size_t owner = holder_of(d, key);
            const std::string slot = std::to_string(cluster_deployment::slot_of(key));
            // On the master of its slot, read over either port; on no other master.
            BOOST_TEST((redis_get(d[owner].port(), key) == guards[k].value()), key);
            BOOST_TEST(d[owner].tls_command({"GET", key}) == guards[k].value(), key);
            BOOST_TEST(redis_command(d[owner].port(), {"CLUSTER", "COUNTKEYSINSLOT", slot}) == "1");
            for (std::size_t other = 0; other < 3; ++other) {
                if (other == owner) {
                    continue;
                }
                // A redirection names the owner's port of the asker's kind.
                BOOST_TEST(
                    d[other].tls_command({"GET", key}) ==
                        "MOVED " + slot + " 127.0.0.1:" + std::to_string(d[owner].tls_port()),
                    key);
                BOOST_TEST(redis_command(d[other].port(), {"GET", key}) ==
                               "MOVED " + slot + " 127.0.0.1:" + std::to_string(d[owner].port()),
                           key);
            }
        }
        // The client's connections arrived on each master's TLS port.
        for (std::size_t i = 0; i < 3; ++i) {
            const std::string clients = redis_command(d[i].port(), {"CLIENT", "LIST"});
            BOOST_TEST(contains(clients, "laddr=127.0.0.1:" + std::to_string(d[i].tls_port())),
                       clients);
        }
        for (std::size_t k = 0; k < keys.size(); ++k) {
            auto [rec] = run(io, guards[k].async_release(asio::as_tuple(asio::use_awaitable)));
            BOOST_TEST(!rec, keys[k] << ": " << guards[k].last_report().to_string());
            BOOST_TEST(!redis_get(d[holder_of(d, keys[k])].port(), keys[k]).has_value(), keys[k]);
        }
        BOOST_TEST(c.node_counters().at(0).errors == 0u);
    }
    {
        // Without our CA the servers' certificate cannot be trusted: no retry can fix that.
        redlock::client c(io.get_executor(), config::from_urls({d.tls_url()}));
        auto [ec, g] = run(io, try_get(c.make_mutex(keys.front(), {.tries = 3})));
        BOOST_TEST(ec == redlock::error::misconfigured);
        const report rep = g.last_report();
        BOOST_TEST_MESSAGE("without the CA: " << rep.to_string());
        BOOST_TEST(rep.attempts == 1);
        const std::string detail = rep.nodes.at(0).detail;
        BOOST_TEST(contains(detail, "TLS handshake failed"), detail);
        BOOST_TEST(contains(detail, "certificate verify failed"), detail);
        BOOST_TEST((rep.nodes.at(0).code == node_errc::tls_failed));
        BOOST_TEST(!redis_get(d[holder_of(d, keys.front())].port(), keys.front()).has_value());
    }
    BOOST_TEST_MESSAGE("whole test case: " << since(started).count() << " ms");
}

BOOST_AUTO_TEST_CASE(without_tls_cluster_cluster_slots_names_plain_ports_and_rediss_is_refused)
{
    // TLS ports, but the cluster (its bus, and what it announces) in plain text: CLUSTER SLOTS
    // names the plain ports even to a TLS client, and TLS to those cannot work.
    test_certificates certs;
    const auto started = steady::now();
    cluster_deployment d(3, 0, {"--tls-cluster", "no"}, server_files(certs));
    BOOST_TEST_MESSAGE("cluster with tls-cluster no ready in " << since(started).count() << " ms");
    const named_ports over_tls = ports_named(d, d[0].tls_command({"CLUSTER", "SLOTS"}));
    BOOST_TEST(over_tls.plain == 3u);
    BOOST_TEST(over_tls.tls == 0u);

    asio::io_context io;
    auto cfg = config::from_urls({d.tls_url()});
    cfg.tls.ca_file = certs.dir + "/ca.crt";
    redlock::client c(io.get_executor(), cfg);
    const auto acquiring = steady::now();
    auto [ec, g] = run(io, try_get(c.make_mutex("plain-announced", {.tries = 3})));
    BOOST_TEST_MESSAGE("acquire refused after " << since(acquiring).count() << " ms");
    BOOST_TEST(ec == redlock::error::misconfigured);
    const report rep = g.last_report();
    BOOST_TEST_MESSAGE("tls-cluster no: " << rep.to_string());
    BOOST_TEST(rep.attempts == 1);
    const std::string detail = rep.nodes.at(0).detail;
    BOOST_TEST(contains(detail, "a TLS URL (rediss://) for a server without TLS?"), detail);
    BOOST_TEST((rep.nodes.at(0).code == node_errc::tls_mismatch));
    const std::size_t owner = holder_of(d, "plain-announced");
    BOOST_TEST(contains(detail, "127.0.0.1:" + std::to_string(d[owner].port())), detail);
    BOOST_TEST_MESSAGE("whole test case: " << since(started).count() << " ms");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace redlock::test
