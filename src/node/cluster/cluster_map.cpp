// SPDX-License-Identifier: BSL-1.0
#include "node/cluster/cluster_map.hpp"

#include "core/error_reply.hpp"
#include "protocol/key_slot.hpp"

#include <charconv>

namespace redlock::detail {
namespace {

template <typename Number>
std::optional<Number> number_in(std::string_view text, Number low, Number high)
{
    Number value{};
    const char* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc{} || p != end || value < low || value > high) {
        return std::nullopt;
    }
    return value;
}

bool is_slot(const resp::reply& r)
{
    return r.type == resp::kind::integer && r.integer >= 0 && r.integer < cluster_slots;
}

// A master's entry: [host, port, id, ...]. An empty host, or "?" (a master whose address its
// peers do not know yet), stands for the server that answered.
std::optional<server_address> read_server(const resp::reply& r, const server_address& asked)
{
    if (r.type != resp::kind::array || r.elements.size() < 2 ||
        r.elements[0].type != resp::kind::bulk_string ||
        r.elements[1].type != resp::kind::integer || r.elements[1].integer <= 0 ||
        r.elements[1].integer > 65535) {
        return std::nullopt;
    }
    server_address a;
    a.host = r.elements[0].text == "?" ? std::string() : r.elements[0].text;
    if (a.host.empty()) {
        a.host = asked.host;
    }
    a.port = static_cast<std::uint16_t>(r.elements[1].integer);
    return a;
}

node_failure unexpected(std::string_view what)
{
    return node_failure{node_errc::unexpected_reply,
                        "unexpected reply to CLUSTER SLOTS (" + std::string(what) + ")"};
}

}  // namespace

std::optional<std::vector<slot_range>> read_slot_map(const resp::reply& r,
                                                     const server_address& asked, node_failure& why)
{
    if (r.is_error()) {
        why = node_failure{
            classify_error_reply(r.text),
            r.text.empty() ? "an empty error reply to CLUSTER SLOTS" : with_hint(r.text)};
        return std::nullopt;
    }
    if (r.type != resp::kind::array) {
        why = unexpected("not an array");
        return std::nullopt;
    }
    std::vector<slot_range> map;
    for (const resp::reply& entry : r.elements) {
        if (entry.type != resp::kind::array || entry.elements.size() < 3 ||
            !is_slot(entry.elements[0]) || !is_slot(entry.elements[1]) ||
            entry.elements[1].integer < entry.elements[0].integer) {
            why = unexpected("a malformed slot range");
            return std::nullopt;
        }
        auto master = read_server(entry.elements[2], asked);
        if (!master) {
            why = unexpected("a malformed master address");
            return std::nullopt;
        }
        map.push_back(slot_range{static_cast<std::uint16_t>(entry.elements[0].integer),
                                 static_cast<std::uint16_t>(entry.elements[1].integer),
                                 std::move(*master)});
    }
    if (map.empty()) {
        why = node_failure{node_errc::cluster_down,
                           "CLUSTER SLOTS named no master: no slot is assigned yet"};
        return std::nullopt;
    }
    return map;
}

std::optional<redirection> read_redirection(std::string_view error, const server_address& from)
{
    redirection r;
    if (error.starts_with("MOVED ")) {
        error.remove_prefix(6);
    } else if (error.starts_with("ASK ")) {
        error.remove_prefix(4);
        r.ask = true;
    } else {
        return std::nullopt;
    }
    const auto space = error.find(' ');
    const auto colon = error.rfind(':');
    if (space == std::string_view::npos || colon == std::string_view::npos || colon < space) {
        return std::nullopt;
    }
    const auto slot = number_in<unsigned>(error.substr(0, space), 0, cluster_slots - 1);
    const auto port = number_in<unsigned>(error.substr(colon + 1), 1, 65535);
    if (!slot || !port) {
        return std::nullopt;
    }
    r.slot = static_cast<std::uint16_t>(*slot);
    std::string_view host = error.substr(space + 1, colon - space - 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    r.to.host = host.empty() ? from.host : std::string(host);
    r.to.port = static_cast<std::uint16_t>(*port);
    return r;
}

}  // namespace redlock::detail
