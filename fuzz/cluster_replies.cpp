// SPDX-License-Identifier: BSL-1.0
// libFuzzer target: what a Redis Cluster node may answer about slots, read by the cluster
// link (cluster_map.hpp): replies to CLUSTER SLOTS and the text of MOVED/ASK errors.
//
// Input: the wire bytes of replies (RESP), decoded one by one; each reply is read as a slot
// map, and its text (for errors and strings) as a redirection. Invariants:
// - no crash, no sanitizer report;
// - a slot map that is read has at least one range, each within 0..16383, first <= last,
//   with a host and a port that is not 0; a reply that is not read says why, with a code;
// - a redirection that is read has a slot below 16384, a host and a port that is not 0, and
//   reads back the same from "MOVED|ASK slot host:port" built from it.

#include "node/cluster/cluster_map.hpp"
#include "protocol/key_slot.hpp"
#include "resp/resp.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace rd = redlock::detail;

namespace {

void check(bool ok, const char* what)
{
    if (!ok) {
        std::fprintf(stderr, "invariant violated: %s\n", what);
        std::abort();
    }
}

const redlock::server_address asked{"10.0.0.1", 7000};

void read_as_map(const rd::resp::reply& r)
{
    rd::node_failure why;
    const auto map = rd::read_slot_map(r, asked, why);
    if (!map) {
        check(why && !why.detail.empty(), "a slot map that is not read says why, with a code");
        return;
    }
    check(!map->empty(), "a slot map has a range");
    for (const rd::slot_range& range : *map) {
        check(range.first <= range.last, "a range runs forwards");
        check(range.last < rd::cluster_slots, "a range is within the slots");
        check(!range.master.host.empty(), "a master has a host");
        check(range.master.port != 0, "a master has a port");
    }
}

void read_as_redirection(const std::string& text)
{
    const auto r = rd::read_redirection(text, asked);
    if (!r) {
        return;
    }
    check(r->slot < rd::cluster_slots, "a redirection names a slot");
    check(!r->to.host.empty(), "a redirection names a host");
    check(r->to.port != 0, "a redirection names a port");
    const std::string again = std::string(r->ask ? "ASK " : "MOVED ") + std::to_string(r->slot) +
                              " " + rd::address_name(r->to);
    const auto back = rd::read_redirection(again, asked);
    check(back.has_value(), "a redirection's own rendering reads");
    check(back->ask == r->ask && back->slot == r->slot && back->to.host == r->to.host &&
              back->to.port == r->to.port,
          "a redirection reads back the same");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    rd::resp::decoder decoder;
    if (!decoder.feed(reinterpret_cast<const char*>(data), size)) {
        return 0;
    }
    while (auto reply = decoder.next()) {
        read_as_map(*reply);
        if (!reply->text.empty()) {
            read_as_redirection(reply->text);
        }
        (void)rd::key_slot(reply->text);
    }
    return 0;
}
