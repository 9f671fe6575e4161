// SPDX-License-Identifier: BSL-1.0
#include "resp/resp.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace std::string_literals;
namespace resp = redlock::detail::resp;

namespace {

std::string encode(std::initializer_list<std::string_view> args)
{
    std::string out;
    resp::append_command(out, args);
    return out;
}

// A canonical rendering of a reply, so that whole trees compare as one string.
std::string show(const resp::reply& r)
{
    switch (r.type) {
        case resp::kind::nil:
            return "nil";
        case resp::kind::integer:
            return "int(" + std::to_string(r.integer) + ")";
        case resp::kind::simple_string:
            return "simple(" + r.text + ")";
        case resp::kind::bulk_string:
            return "bulk(" + r.text + ")";
        case resp::kind::error:
            return "error(" + r.text + ")";
        case resp::kind::array: {
            std::string out = "[";
            for (const auto& e : r.elements) {
                out += (out.size() > 1 ? "," : "") + show(e);
            }
            return out + "]";
        }
    }
    return "?";
}

// Feeds `wire` in pieces of `chunk` bytes, taking replies out after each piece.
std::vector<std::string> decode(std::string_view wire, std::size_t chunk = SIZE_MAX)
{
    resp::decoder d;
    std::vector<std::string> out;
    for (std::size_t i = 0; i < wire.size(); i += chunk) {
        auto piece = wire.substr(i, chunk);
        BOOST_TEST_REQUIRE(d.feed(piece.data(), piece.size()));
        while (auto r = d.next()) {
            out.push_back(show(*r));
        }
        BOOST_TEST_REQUIRE(d.error().empty(), "protocol error: " << d.error());
    }
    return out;
}

std::string decode_one(std::string_view wire)
{
    auto replies = decode(wire);
    BOOST_TEST_REQUIRE(replies.size() == 1u);
    return replies.front();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(resp_encoding)

BOOST_AUTO_TEST_CASE(command_is_an_array_of_bulk_strings)
{
    BOOST_TEST(encode({"SET", "k", "value"}) == "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n");
}

BOOST_AUTO_TEST_CASE(arguments_are_binary_safe)
{
    std::string arg = "a\r\nb\0c"s;
    BOOST_TEST(encode({"ECHO", arg}) == "*2\r\n$4\r\nECHO\r\n$6\r\na\r\nb\0c\r\n"s);
    // A binary command reads back, as a RESP value, to the same arguments.
    BOOST_TEST(decode_one(encode({"ECHO", arg})) == "[bulk(ECHO),bulk(" + arg + ")]");
}

BOOST_AUTO_TEST_CASE(empty_argument_has_zero_length)
{
    BOOST_TEST(encode({"GET", ""}) == "*2\r\n$3\r\nGET\r\n$0\r\n\r\n");
}

BOOST_AUTO_TEST_CASE(long_argument_has_multi_digit_length)
{
    std::string arg(1234, 'x');
    BOOST_TEST(encode({arg}) == "*1\r\n$1234\r\n" + arg + "\r\n");
}

BOOST_AUTO_TEST_CASE(appends_after_existing_bytes)
{
    std::string out = "prefix";
    resp::append_command(out, {"PING"});
    resp::append_command(out, {"GET", "k"});
    BOOST_TEST(out == "prefix*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(resp_decoding)

BOOST_AUTO_TEST_CASE(scalar_replies)
{
    BOOST_TEST(decode_one("+OK\r\n") == "simple(OK)");
    BOOST_TEST(decode_one("-ERR wrong type\r\n") == "error(ERR wrong type)");
    BOOST_TEST(decode_one(":42\r\n") == "int(42)");
    BOOST_TEST(decode_one(":-1\r\n") == "int(-1)");
    BOOST_TEST(decode_one(":1099511627776\r\n") == "int(1099511627776)");
    BOOST_TEST(decode_one("$5\r\nhello\r\n") == "bulk(hello)");
    BOOST_TEST(decode_one("$0\r\n\r\n") == "bulk()");
    BOOST_TEST(decode_one("$-1\r\n") == "nil");
    BOOST_TEST(decode_one("*-1\r\n") == "nil");
    BOOST_TEST(decode_one("*0\r\n") == "[]");
}

BOOST_AUTO_TEST_CASE(error_reply_is_flagged)
{
    resp::decoder d;
    std::string wire = "-NOSCRIPT No matching script\r\n";
    d.feed(wire.data(), wire.size());
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(r->is_error());
    BOOST_TEST(r->text == "NOSCRIPT No matching script");
    BOOST_TEST(d.error().empty());  // an error reply is not a protocol error
}

BOOST_AUTO_TEST_CASE(bulk_string_is_binary_safe)
{
    BOOST_TEST(decode_one("$6\r\na\r\n\0b\n\r\n"s) == "bulk(a\r\n\0b\n)"s);
}

BOOST_AUTO_TEST_CASE(nested_arrays)
{
    BOOST_TEST(decode_one("*3\r\n:1\r\n*2\r\n+a\r\n$-1\r\n$1\r\nx\r\n") ==
               "[int(1),[simple(a),nil],bulk(x)]");
    BOOST_TEST(decode_one("*1\r\n*1\r\n*1\r\n*0\r\n") == "[[[[]]]]");
}

const std::string pipeline =
    "+OK\r\n:-7\r\n$3\r\nabc\r\n$-1\r\n*2\r\n$0\r\n\r\n*1\r\n-ERR x\r\n*-1\r\n$2\r\n\r\n\r\n";
const std::vector<std::string> pipeline_replies = {
    "simple(OK)", "int(-7)", "bulk(abc)", "nil", "[bulk(),[error(ERR x)]]", "nil", "bulk(\r\n)"};

BOOST_AUTO_TEST_CASE(several_replies_in_one_feed)
{
    BOOST_TEST(decode(pipeline) == pipeline_replies, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(replies_split_at_every_byte)
{
    BOOST_TEST(decode(pipeline, 1) == pipeline_replies, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(replies_split_at_every_position)
{
    for (std::size_t cut = 1; cut < pipeline.size(); ++cut) {
        BOOST_TEST_CONTEXT("cut at byte " << cut)
        {
            resp::decoder d;
            std::vector<std::string> got;
            for (std::string_view piece : {std::string_view(pipeline).substr(0, cut),
                                           std::string_view(pipeline).substr(cut)}) {
                d.feed(piece.data(), piece.size());
                while (auto r = d.next()) {
                    got.push_back(show(*r));
                }
            }
            BOOST_TEST(d.error().empty());
            BOOST_TEST(got == pipeline_replies, boost::test_tools::per_element());
        }
    }
}

BOOST_AUTO_TEST_CASE(incomplete_reply_is_not_returned)
{
    resp::decoder d;
    std::string wire = "$5\r\nhel";
    BOOST_TEST(d.feed(wire.data(), wire.size()));
    BOOST_TEST(!d.next().has_value());
    BOOST_TEST(d.error().empty());
    d.feed("lo\r\n", 4);
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(show(*r) == "bulk(hello)");
}

BOOST_AUTO_TEST_CASE(protocol_garbage_is_an_error)
{
    resp::decoder d;
    d.feed("?xyz\r\n", 6);
    BOOST_TEST(!d.next().has_value());
    BOOST_TEST(!d.error().empty());
    // The error sticks: nothing more is accepted until reset().
    BOOST_TEST(!d.feed("+OK\r\n", 5));
    BOOST_TEST(!d.next().has_value());
}

BOOST_AUTO_TEST_CASE(malformed_lengths_are_errors)
{
    for (std::string_view wire : {":1x\r\n", "$abc\r\n", "*2x\r\n:1\r\n:2\r\n"}) {
        BOOST_TEST_CONTEXT(wire)
        {
            resp::decoder d;
            d.feed(wire.data(), wire.size());
            BOOST_TEST(!d.next().has_value());
            BOOST_TEST(!d.error().empty());
        }
    }
}

BOOST_AUTO_TEST_CASE(garbage_after_a_good_reply)
{
    resp::decoder d;
    d.feed("+OK\r\n?\r\n", 8);
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(show(*r) == "simple(OK)");
    BOOST_TEST(!d.next().has_value());
    BOOST_TEST(!d.error().empty());
}

BOOST_AUTO_TEST_CASE(huge_bulk_length_hits_max_buffer)
{
    resp::decoder d(64);
    std::string header = "$1099511627776\r\n";
    BOOST_TEST(d.feed(header.data(), header.size()));
    // Refused as soon as the length is read, before any of its bytes.
    BOOST_TEST(!d.next().has_value());
    BOOST_TEST(d.error().find("larger than 64 bytes") != std::string::npos, d.error());
    std::string body(100, 'x');
    BOOST_TEST(!d.feed(body.data(), body.size()));
    BOOST_TEST(!d.next().has_value());
}

BOOST_AUTO_TEST_CASE(a_bulk_longer_than_the_cap_is_refused_once_its_length_is_known)
{
    resp::decoder d(1024);
    const std::string head = "*2\r\n:1\r\n$1099511627776\r\nxy";
    BOOST_TEST_REQUIRE(d.feed(head.data(), head.size()));
    BOOST_TEST(!d.next().has_value());  // hiredis reads up to the bulk
    BOOST_TEST(!d.next().has_value());  // and then its length
    BOOST_TEST(d.error().find("larger than 1024") != std::string::npos, d.error());
    BOOST_TEST(d.error().find("1099511627776") != std::string::npos, d.error());

    resp::decoder fine(1024);
    const std::string ok = "$1000\r\n" + std::string(1000, 'a') + "\r\n";
    fine.feed(ok.data(), ok.size());
    auto r = fine.next();
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(r->text.size() == 1000u);
}

BOOST_AUTO_TEST_CASE(max_buffer_reached_by_small_feeds)
{
    resp::decoder d(64);
    std::string header = "+";  // a line that does not end, shorter than max_line
    d.feed(header.data(), header.size());
    std::size_t buffered = header.size();
    // hiredis takes the type byte out of its buffer at once; the cap counts what it holds.
    while (d.feed("xxxxxxxx", 8)) {
        BOOST_TEST(!d.next().has_value());
        buffered += 8;
        BOOST_TEST_REQUIRE(buffered <= 64u + 1);
    }
    BOOST_TEST(buffered + 8 > 64u + 1);
    BOOST_TEST(!d.error().empty());
}

BOOST_AUTO_TEST_CASE(consumed_replies_do_not_count_towards_max_buffer)
{
    resp::decoder d(16);
    for (int i = 0; i < 100; ++i) {
        BOOST_TEST_REQUIRE(d.feed("+OK\r\n", 5));
        BOOST_TEST_REQUIRE(d.next().has_value());
    }
    BOOST_TEST(d.error().empty());
}

BOOST_AUTO_TEST_CASE(reset_clears_error_and_buffered_bytes)
{
    resp::decoder d;
    d.feed("?xyz\r\n", 6);
    d.next();
    BOOST_TEST_REQUIRE(!d.error().empty());
    d.reset();
    BOOST_TEST(d.error().empty());
    BOOST_TEST(d.feed("$5\r\nhel", 7));
    d.reset();  // a partial reply from the old connection is dropped
    BOOST_TEST(d.feed("+OK\r\n", 5));
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(show(*r) == "simple(OK)");
}

BOOST_AUTO_TEST_CASE(reset_clears_max_buffer_error)
{
    resp::decoder d(8);
    BOOST_TEST(!d.feed("$100\r\n0123456789", 16));
    d.reset();
    BOOST_TEST(d.error().empty());
    BOOST_TEST(d.feed(":1\r\n", 4));
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(show(*r) == "int(1)");
}

BOOST_AUTO_TEST_CASE(consumed_counts_the_bytes_of_replies_taken_out)
{
    resp::decoder d;
    const std::string wire = "+OK\r\n$3\r\nabc\r\n:12";
    d.feed(wire.data(), wire.size());
    BOOST_TEST(d.consumed() == 0u);
    BOOST_TEST_REQUIRE(d.next().has_value());
    BOOST_TEST(d.consumed() == 5u);
    BOOST_TEST_REQUIRE(d.next().has_value());
    BOOST_TEST(d.consumed() == 14u);
    BOOST_TEST(!d.next().has_value());  // ":12" is unfinished
    BOOST_TEST(d.consumed() == 14u);
    BOOST_TEST(d.has_buffered());
    d.feed("\r\n", 2);
    BOOST_TEST_REQUIRE(d.next().has_value());
    BOOST_TEST(d.consumed() == wire.size() + 2);
    BOOST_TEST(!d.has_buffered());
}

BOOST_AUTO_TEST_CASE(a_line_without_end_is_refused_past_max_line)
{
    resp::decoder d;
    const std::string chunk(4096, 'x');
    d.feed("-", 1);
    std::size_t fed = 1;
    while (d.feed(chunk.data(), chunk.size())) {
        fed += chunk.size();
        if (d.next().has_value() || !d.error().empty()) {
            break;
        }
        BOOST_TEST_REQUIRE(fed < 2 * resp::decoder::max_line);
    }
    BOOST_TEST(d.error().find("line longer than") != std::string::npos, d.error());
}

BOOST_AUTO_TEST_CASE(a_long_bulk_without_newlines_is_not_a_long_line)
{
    resp::decoder d;
    const std::string payload(3 * resp::decoder::max_line, 'y');
    const std::string head = "$" + std::to_string(payload.size()) + "\r\n";
    d.feed(head.data(), head.size());
    for (std::size_t i = 0; i < payload.size(); i += 1000) {
        const std::size_t n = std::min<std::size_t>(1000, payload.size() - i);
        BOOST_TEST_REQUIRE(d.feed(payload.data() + i, n));
        BOOST_TEST_REQUIRE(!d.next().has_value());
        BOOST_TEST_REQUIRE(d.error().empty());
    }
    d.feed("\r\n", 2);
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(r->text.size() == payload.size());
}

BOOST_AUTO_TEST_CASE(a_line_end_split_across_feeds_counts)
{
    resp::decoder d;
    const std::string line = "+" + std::string(resp::decoder::max_line - 10, 'z');
    d.feed(line.data(), line.size());
    BOOST_TEST(!d.next().has_value());
    d.feed("\r", 1);
    BOOST_TEST(!d.next().has_value());
    d.feed("\n", 1);
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(r->text.size() == line.size() - 1);
    BOOST_TEST(d.error().empty());
}

BOOST_AUTO_TEST_SUITE_END()
