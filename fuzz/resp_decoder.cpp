// SPDX-License-Identifier: BSL-1.0
// libFuzzer target: resp::decoder fed arbitrary bytes in arbitrary chunkings.
//
// Input: byte 0 seeds the chunk sizes, the rest is the wire. Invariants, for RESP2 and RESP3:
// - no crash, no sanitizer report, no unbounded allocation (libFuzzer's malloc limit);
// - the replies and the error do not depend on how the bytes were split;
// - after an error, next() returns nullopt and feed() returns false, for good;
// - a decoder with a small cap returns a prefix of the same replies, and all of them
//   when it reports no error;
// - reset() makes a used decoder good as new;
// - RESP2 replies are a prefix of the RESP3 replies of the same bytes, and all of them, with
//   the same outcome, when RESP2 reports no error (RESP3 only adds types).

#include "resp/resp.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace resp = redlock::detail::resp;

namespace {

[[noreturn]] void fail(const char* what)
{
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
}

void check(bool ok, const char* what)
{
    if (!ok) {
        fail(what);
    }
}

// A canonical rendering of a reply, so that whole trees compare as one string.
void show(const resp::reply& r, std::string& out)
{
    switch (r.type) {
        case resp::kind::nil:
            out += "nil";
            return;
        case resp::kind::integer:
            out += "i" + std::to_string(r.integer);
            return;
        case resp::kind::simple_string:
            out += "s" + std::to_string(r.text.size()) + ":" + r.text;
            return;
        case resp::kind::bulk_string:
            out += "b" + std::to_string(r.text.size()) + ":" + r.text;
            return;
        case resp::kind::error:
            out += "e" + std::to_string(r.text.size()) + ":" + r.text;
            return;
        case resp::kind::array:
            out += "[" + std::to_string(r.elements.size());
            for (const resp::reply& e : r.elements) {
                out += ",";
                show(e, out);
            }
            out += "]";
            return;
    }
    fail("unknown reply kind");
}

struct outcome
{
    std::vector<std::string> replies;
    bool error = false;
};

// Takes every complete reply out; checks the error contract when one shows up.
void drain(resp::decoder& d, outcome& o)
{
    while (auto r = d.next()) {
        check(d.error().empty(), "next() returned a reply and set an error");
        o.replies.emplace_back();
        show(*r, o.replies.back());
    }
    if (!d.error().empty()) {
        o.error = true;
    }
}

void check_dead(resp::decoder& d)
{
    const std::string before = d.error();
    check(!before.empty(), "expected an error");
    check(!d.next().has_value(), "next() returned a reply after an error");
    check(!d.feed("+OK\r\n", 5), "feed() accepted bytes after an error");
    check(!d.next().has_value(), "next() returned a reply after an error and a feed");
    check(d.error() == before, "the error changed");
}

// Feeds `wire` in pieces whose sizes come from a tiny generator seeded by `seed`.
outcome feed_chunked(resp::decoder& d, std::string_view wire, std::uint8_t seed)
{
    outcome o;
    std::uint32_t state = seed * 2654435761u + 1;
    std::size_t pos = 0;
    while (pos < wire.size()) {
        state = state * 1103515245u + 12345u;
        // Mostly small pieces (1 to 8 bytes), sometimes large ones.
        std::size_t n = (state >> 16) % 8 == 0 ? 1 + (state >> 8) % 512 : 1 + (state >> 12) % 8;
        n = std::min(n, wire.size() - pos);
        if (!d.feed(wire.data() + pos, n)) {
            check(!d.error().empty(), "feed() failed without an error");
            o.error = true;
            check_dead(d);
            return o;
        }
        pos += n;
        drain(d, o);
        if (o.error) {
            check_dead(d);
            return o;
        }
    }
    return o;
}

bool is_prefix(const std::vector<std::string>& a, const std::vector<std::string>& b)
{
    return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// Checks the invariants of one protocol; returns what the whole input decodes to.
outcome check_protocol(std::string_view wire, std::uint8_t seed, resp::protocol p)
{
    // All at once.
    resp::decoder whole(resp::decoder::default_max_buffer, p);
    outcome all;
    if (!whole.feed(wire.data(), wire.size())) {
        fail("a whole input below the cap was refused");
    }
    drain(whole, all);
    if (all.error) {
        check_dead(whole);
    }

    // In pieces.
    resp::decoder pieces(resp::decoder::default_max_buffer, p);
    outcome split = feed_chunked(pieces, wire, seed);
    check(split.replies == all.replies, "replies depend on the chunking");
    check(split.error == all.error, "the error depends on the chunking");

    // With a cap smaller than most inputs.
    resp::decoder small(64, p);
    outcome capped = feed_chunked(small, wire, seed);
    check(is_prefix(capped.replies, split.replies), "a capped decoder returned other replies");
    if (!capped.error) {
        check(capped.replies == split.replies, "a capped decoder lost replies without an error");
    }

    // Reset makes it usable again.
    pieces.reset();
    check(pieces.error().empty(), "reset() kept the error");
    check(pieces.feed("+OK\r\n", 5), "feed() after reset() failed");
    auto r = pieces.next();
    check(r.has_value() && r->type == resp::kind::simple_string && r->text == "OK",
          "reset() left old bytes behind");
    check(!pieces.next().has_value(), "a reply out of nothing after reset()");
    return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size < 1) {
        return 0;
    }
    const std::uint8_t seed = data[0];
    const std::string_view wire(reinterpret_cast<const char*>(data + 1), size - 1);
    const outcome resp2 = check_protocol(wire, seed, resp::protocol::resp2);
    const outcome resp3 = check_protocol(wire, seed, resp::protocol::resp3);
    check(is_prefix(resp2.replies, resp3.replies), "RESP3 read RESP2 replies otherwise");
    if (!resp2.error) {
        check(resp2.replies == resp3.replies && !resp3.error,
              "RESP3 read an input of RESP2 types otherwise");
    }
    return 0;
}
