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
std::vector<std::string> decode(std::string_view wire, std::size_t chunk = SIZE_MAX,
                                resp::protocol p = resp::protocol::resp2)
{
    resp::decoder d(resp::decoder::default_max_buffer, p);
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

std::string decode_one(std::string_view wire, resp::protocol p = resp::protocol::resp2)
{
    auto replies = decode(wire, SIZE_MAX, p);
    BOOST_TEST_REQUIRE(replies.size() == 1u);
    return replies.front();
}

// Feeds `wire` in two pieces cut at `cut`; the replies, and the protocol error if any.
std::vector<std::string> decode_in_two(std::string_view wire, std::size_t cut, std::string& error,
                                       resp::protocol p = resp::protocol::resp2)
{
    resp::decoder d(resp::decoder::default_max_buffer, p);
    std::vector<std::string> out;
    for (std::string_view piece : {wire.substr(0, cut), wire.substr(cut)}) {
        d.feed(piece.data(), piece.size());
        while (auto r = d.next()) {
            out.push_back(show(*r));
        }
    }
    error = d.error();
    return out;
}

// The protocol error `wire` ends in, fed whole; fed a byte at a time, it must be the same.
std::string error_of(std::string_view wire, resp::protocol p = resp::protocol::resp2)
{
    std::string errors[2];
    for (const std::size_t chunk : {wire.size(), std::size_t{1}}) {
        resp::decoder d(resp::decoder::default_max_buffer, p);
        for (std::size_t i = 0; i < wire.size() && d.error().empty(); i += chunk) {
            if (d.feed(wire.data() + i, std::min(chunk, wire.size() - i))) {
                while (d.next()) {
                }
            }
        }
        errors[chunk == 1 ? 1 : 0] = d.error();
    }
    BOOST_TEST(errors[0] == errors[1]);
    return errors[0];
}

std::string nested_arrays(std::size_t depth)
{
    std::string wire;
    for (std::size_t i = 0; i < depth; ++i) {
        wire += "*1\r\n";
    }
    return wire + ":1\r\n";
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
            std::string error;
            BOOST_TEST(decode_in_two(pipeline, cut, error) == pipeline_replies,
                       boost::test_tools::per_element());
            BOOST_TEST(error.empty());
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
    BOOST_TEST(!d.next().has_value());
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
    // The cap counts every byte that no reply taken out has consumed.
    while (d.feed("xxxxxxxx", 8)) {
        BOOST_TEST(!d.next().has_value());
        buffered += 8;
        BOOST_TEST_REQUIRE(buffered <= 64u);
    }
    BOOST_TEST(buffered + 8 > 64u);
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

BOOST_AUTO_TEST_SUITE(resp3_decoding)

constexpr auto resp3 = resp::protocol::resp3;

BOOST_AUTO_TEST_CASE(resp3_types_are_errors_on_a_resp2_connection)
{
    for (std::string_view wire :
         {"_\r\n", "#t\r\n", ",1.5\r\n", "(1\r\n", "!1\r\nE\r\n", "=5\r\ntxt:a\r\n", "%0\r\n",
          "~0\r\n", ">0\r\n", "|0\r\n:1\r\n"}) {
        BOOST_TEST_CONTEXT(wire)
        {
            BOOST_TEST(error_of(wire) ==
                       "unexpected byte \"" + std::string(1, wire[0]) + "\" where a reply begins");
            BOOST_TEST(error_of(wire, resp3).empty());
        }
    }
}

// RESP3 values read as RESP2 would carry them.
BOOST_AUTO_TEST_CASE(scalar_values)
{
    BOOST_TEST(decode_one("_\r\n", resp3) == "nil");
    BOOST_TEST(decode_one("#t\r\n", resp3) == "int(1)");
    BOOST_TEST(decode_one("#f\r\n", resp3) == "int(0)");
    BOOST_TEST(decode_one(",3.14\r\n", resp3) == "bulk(3.14)");
    BOOST_TEST(decode_one(",-1e-3\r\n", resp3) == "bulk(-1e-3)");
    BOOST_TEST(decode_one(",+2\r\n", resp3) == "bulk(+2)");
    BOOST_TEST(decode_one(",inf\r\n", resp3) == "bulk(inf)");
    BOOST_TEST(decode_one(",-inf\r\n", resp3) == "bulk(-inf)");
    BOOST_TEST(decode_one(",nan\r\n", resp3) == "bulk(nan)");
    BOOST_TEST(decode_one("(3492890328409238509324850943850943825024385\r\n", resp3) ==
               "bulk(3492890328409238509324850943850943825024385)");
    BOOST_TEST(decode_one("(-12\r\n", resp3) == "bulk(-12)");
    BOOST_TEST(decode_one("!21\r\nSYNTAX invalid syntax\r\n", resp3) ==
               "error(SYNTAX invalid syntax)");
    BOOST_TEST(decode_one("=15\r\ntxt:Some string\r\n", resp3) == "bulk(Some string)");
    BOOST_TEST(decode_one("=4\r\nmkd:\r\n", resp3) == "bulk()");
}

BOOST_AUTO_TEST_CASE(maps_sets_and_pushes_are_arrays)
{
    BOOST_TEST(decode_one("%2\r\n+first\r\n:1\r\n+second\r\n#f\r\n", resp3) ==
               "[simple(first),int(1),simple(second),int(0)]");
    BOOST_TEST(decode_one("%0\r\n", resp3) == "[]");
    BOOST_TEST(decode_one("~3\r\n:1\r\n_\r\n$1\r\nx\r\n", resp3) == "[int(1),nil,bulk(x)]");
    BOOST_TEST(decode_one(">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nx\r\n", resp3) ==
               "[bulk(message),bulk(ch),bulk(x)]");
    BOOST_TEST(decode_one("%1\r\n$1\r\nk\r\n~1\r\n%1\r\n:1\r\n:2\r\n", resp3) ==
               "[bulk(k),[[int(1),int(2)]]]");
}

BOOST_AUTO_TEST_CASE(attributes_are_dropped)
{
    // Attributes before a reply, inside an array, and empty.
    BOOST_TEST(decode_one("|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.19\r\n$1\r\nb\r\n,0.01\r\n"
                          "*2\r\n:2039123\r\n:9543892\r\n",
                          resp3) == "[int(2039123),int(9543892)]");
    BOOST_TEST(decode_one("*2\r\n:1\r\n|1\r\n+a\r\n*1\r\n+b\r\n:2\r\n", resp3) ==
               "[int(1),int(2)]");
    BOOST_TEST(decode_one("|0\r\n:5\r\n", resp3) == "int(5)");
    // Alone, an attribute is no reply.
    resp::decoder d(resp::decoder::default_max_buffer, resp3);
    d.feed("|1\r\n+a\r\n+b\r\n", 12);
    BOOST_TEST(!d.next().has_value());
    BOOST_TEST(d.error().empty());
    BOOST_TEST(d.consumed() == 0u);
    d.feed(":7\r\n", 4);
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(show(*r) == "int(7)");
    BOOST_TEST(d.consumed() == 16u);  // the attribute belongs to the reply after it
}

const std::string every_type =
    "+OK\r\n-ERR e\r\n:-7\r\n$3\r\na\r\n\r\n$-1\r\n*-1\r\n*0\r\n_\r\n#t\r\n,1.5\r\n(123\r\n"
    "!3\r\nE x\r\n=7\r\ntxt:a\r\n\r\n%1\r\n+k\r\n*1\r\n:1\r\n~1\r\n#f\r\n>2\r\n+m\r\n$0\r\n\r\n"
    "|1\r\n+a\r\n+b\r\n:9\r\n";
const std::vector<std::string> every_type_replies = {"simple(OK)",  "error(ERR e)",
                                                     "int(-7)",     "bulk(a\r\n)",
                                                     "nil",         "nil",
                                                     "[]",          "nil",
                                                     "int(1)",      "bulk(1.5)",
                                                     "bulk(123)",   "error(E x)",
                                                     "bulk(a\r\n)", "[simple(k),[int(1)]]",
                                                     "[int(0)]",    "[simple(m),bulk()]",
                                                     "int(9)"};

BOOST_AUTO_TEST_CASE(every_type_in_one_feed_and_byte_by_byte)
{
    BOOST_TEST(decode(every_type, SIZE_MAX, resp3) == every_type_replies,
               boost::test_tools::per_element());
    BOOST_TEST(decode(every_type, 1, resp3) == every_type_replies,
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(every_type_split_at_every_position)
{
    for (std::size_t cut = 1; cut < every_type.size(); ++cut) {
        BOOST_TEST_CONTEXT("cut at byte " << cut)
        {
            std::string error;
            BOOST_TEST(decode_in_two(every_type, cut, error, resp3) == every_type_replies,
                       boost::test_tools::per_element());
            BOOST_TEST(error.empty());
        }
    }
}

BOOST_AUTO_TEST_CASE(malformed_values_are_errors)
{
    for (std::string_view wire : {"#x\r\n",
                                  "#\r\n",
                                  "#tt\r\n",
                                  "_x\r\n",
                                  ",\r\n",
                                  ",abc\r\n",
                                  ",1.5x\r\n",
                                  ",+-1\r\n",
                                  "(\r\n",
                                  "(-\r\n",
                                  "(12a\r\n",
                                  ":\r\n",
                                  ":99999999999999999999\r\n",
                                  ":+1\r\n",
                                  "$-2\r\n",
                                  "*-2\r\n",
                                  "!-1\r\n",
                                  "=-1\r\n",
                                  "%-1\r\n",
                                  "~-1\r\n",
                                  ">-1\r\n",
                                  "|-1\r\n",
                                  "=3\r\nabc\r\n",
                                  "=4\r\ntxt_\r\n",
                                  "$?\r\n",
                                  "*?\r\n",
                                  ";3\r\nabc\r\n",
                                  ".\r\n"}) {
        BOOST_TEST_CONTEXT(wire)
        {
            BOOST_TEST(!error_of(wire, resp3).empty());
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(resp_decoding_errors_and_limits)

BOOST_AUTO_TEST_CASE(a_bulk_longer_than_its_length_is_an_error)
{
    BOOST_TEST(error_of("$3\r\nabcd\r\n") == "a bulk string longer than its length");
    BOOST_TEST(error_of("$3\r\nabc\n\r") == "a bulk string longer than its length");
}

BOOST_AUTO_TEST_CASE(an_unknown_type_byte_is_refused_before_its_line_ends)
{
    resp::decoder d;
    d.feed("?", 1);
    BOOST_TEST(!d.next().has_value());
    BOOST_TEST(d.error() == "unexpected byte \"?\" where a reply begins");
    BOOST_TEST(error_of("+OK\r\n\r\n") == "unexpected byte 0x0d where a reply begins");
}

BOOST_AUTO_TEST_CASE(nesting_is_limited)
{
    std::string deepest = nested_arrays(resp::decoder::max_depth);
    BOOST_TEST(decode(deepest).size() == 1u);
    BOOST_TEST(error_of(nested_arrays(resp::decoder::max_depth + 1)) ==
               "replies nested deeper than " + std::to_string(resp::decoder::max_depth) +
                   " levels");
    // A map is one level as well.
    BOOST_TEST(!error_of("%1\r\n" + nested_arrays(resp::decoder::max_depth), resp::protocol::resp3)
                    .empty());
}

BOOST_AUTO_TEST_CASE(a_huge_count_is_refused_before_any_element)
{
    for (std::string_view wire : {"*2147483647\r\n", "%1152921504606846976\r\n",
                                  "~9223372036854775807\r\n", "|4611686018427387904\r\n"}) {
        BOOST_TEST_CONTEXT(wire)
        {
            resp::decoder d(resp::decoder::default_max_buffer, resp::protocol::resp3);
            d.feed(wire.data(), wire.size());
            BOOST_TEST(!d.next().has_value());
            BOOST_TEST(d.error().find("larger than") != std::string::npos, d.error());
        }
    }
}

BOOST_AUTO_TEST_CASE(a_reply_is_capped_once_decoded)
{
    // A buffer cap of 64 bytes lets a reply take 64 KiB decoded: its elements' slots (counted
    // at its header) and its strings (counted as they arrive).
    resp::decoder d(64);
    std::string head = "*800\r\n";
    BOOST_TEST_REQUIRE(d.feed(head.data(), head.size()));
    BOOST_TEST(!d.next().has_value());
    BOOST_TEST_REQUIRE(d.error().empty());
    const std::string element = "$50\r\n" + std::string(50, 'e') + "\r\n";
    int fed = 0;
    while (fed < 800 && d.feed(element.data(), element.size())) {
        ++fed;
        BOOST_TEST_REQUIRE(!d.next().has_value());
        if (!d.error().empty()) {
            break;
        }
    }
    BOOST_TEST(fed < 800);
    BOOST_TEST(d.error() == "reply larger than 65536 bytes decoded");
}

BOOST_AUTO_TEST_CASE(the_decoded_size_is_counted_per_reply)
{
    resp::decoder d(4096);
    std::string wire = "*800\r\n";
    for (int i = 0; i < 800; ++i) {
        wire += ":1\r\n";
    }
    for (int i = 0; i < 10; ++i) {
        BOOST_TEST_REQUIRE(d.feed(wire.data(), wire.size()));
        auto r = d.next();
        BOOST_TEST_REQUIRE(r.has_value(), d.error());
        BOOST_TEST(r->elements.size() == 800u);
    }
}

BOOST_AUTO_TEST_CASE(the_line_limit_does_not_depend_on_how_the_line_arrives)
{
    const std::string longest = "+" + std::string(resp::decoder::max_line, 'l') + "\r\n";
    BOOST_TEST(decode_one(longest).size() ==
               std::string("simple()").size() + resp::decoder::max_line);
    BOOST_TEST(decode(longest, 1000).size() == 1u);
    const std::string too_long = "-" + std::string(resp::decoder::max_line + 1, 'l') + "\r\n";
    BOOST_TEST(error_of(too_long).find("line longer than") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_open_aggregate_is_buffered)
{
    resp::decoder d;
    d.feed("*2\r\n:1\r\n", 8);
    BOOST_TEST(!d.next().has_value());
    BOOST_TEST(d.has_buffered());
    BOOST_TEST(d.consumed() == 0u);
    d.feed(":2\r\n", 4);
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(show(*r) == "[int(1),int(2)]");
    BOOST_TEST(!d.has_buffered());
    BOOST_TEST(d.consumed() == 12u);
}

BOOST_AUTO_TEST_CASE(reset_drops_an_open_aggregate)
{
    resp::decoder d;
    d.feed("*2\r\n:1\r\n", 8);
    BOOST_TEST(!d.next().has_value());
    d.reset();
    BOOST_TEST(!d.has_buffered());
    d.feed(":5\r\n", 4);
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST(show(*r) == "int(5)");
    BOOST_TEST(d.consumed() == 4u);
}

BOOST_AUTO_TEST_CASE(replies_after_a_large_one)
{
    resp::decoder d;
    const std::string large = "$100000\r\n" + std::string(100000, 'q') + "\r\n+after\r\n";
    d.feed(large.data(), large.size());
    auto first = d.next();
    BOOST_TEST_REQUIRE(first.has_value());
    BOOST_TEST(first->text.size() == 100000u);
    auto second = d.next();
    BOOST_TEST_REQUIRE(second.has_value());
    BOOST_TEST(show(*second) == "simple(after)");
    d.feed(":3\r\n", 4);
    auto third = d.next();
    BOOST_TEST_REQUIRE(third.has_value());
    BOOST_TEST(show(*third) == "int(3)");
    BOOST_TEST(d.consumed() == large.size() + 4);
}

BOOST_AUTO_TEST_SUITE_END()
