#include "detail/resp.hpp"
#include "detail/scripts.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace std::string_literals;
using redlock::node_status;
using namespace redlock::detail;

namespace {

// The wire form of one RESP bulk string, written out independently of append_command.
std::string bulk(std::string_view s)
{
    return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

// The arguments of one encoded command (a RESP array of bulk strings).
std::vector<std::string> args_of(const std::string& wire)
{
    resp::decoder d;
    d.feed(wire.data(), wire.size());
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST_REQUIRE((r->type == resp::kind::array));
    BOOST_TEST(!d.next().has_value());  // exactly one command
    std::vector<std::string> out;
    for (const auto& e : r->elements) {
        BOOST_TEST_REQUIRE((e.type == resp::kind::bulk_string));
        out.push_back(e.text);
    }
    return out;
}

bool is_lower_hex_sha(const std::string& s)
{
    return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

resp::reply make(resp::kind type, std::string text = {}, std::int64_t integer = 0)
{
    return resp::reply{.type = type, .integer = integer, .text = std::move(text), .elements = {}};
}

resp::reply integer(std::int64_t n)
{
    return make(resp::kind::integer, {}, n);
}

// Key and value with RESP and Lua metacharacters: they must travel as plain arguments.
const std::string hostile_key = "lock:'a' ]] end --\r\n*1";
const std::string hostile_value = "v\r\n$3\0\"x\""s;

}  // namespace

BOOST_AUTO_TEST_SUITE(script_commands)

BOOST_AUTO_TEST_CASE(script_sha1_vectors)
{
    BOOST_TEST(script_sha1("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    BOOST_TEST(script_sha1("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
    BOOST_TEST(script_sha1("The quick brown fox jumps over the lazy dog") ==
               "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12");
}

BOOST_AUTO_TEST_CASE(acquire_is_set_nx_px)
{
    command c = acquire_command("lock:a", "val", 8000ms);
    BOOST_TEST(c.payload == "*6\r\n" + bulk("SET") + bulk("lock:a") + bulk("val") + bulk("NX") +
                                bulk("PX") + bulk("8000"));
    BOOST_TEST(c.fallback.empty());
}

BOOST_AUTO_TEST_CASE(get_is_get)
{
    command c = get_command("lock:a");
    BOOST_TEST(c.payload == "*2\r\n" + bulk("GET") + bulk("lock:a"));
    BOOST_TEST(c.fallback.empty());
}

BOOST_AUTO_TEST_CASE(hostile_key_and_value_are_separate_arguments)
{
    std::vector<std::string> set = {"SET", hostile_key, hostile_value, "NX", "PX", "10"};
    BOOST_TEST(args_of(acquire_command(hostile_key, hostile_value, 10ms).payload) == set,
               boost::test_tools::per_element());
    std::vector<std::string> get = {"GET", hostile_key};
    BOOST_TEST(args_of(get_command(hostile_key).payload) == get, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(release_is_evalsha_with_eval_fallback)
{
    command c = release_command(hostile_key, hostile_value);
    auto eval = args_of(c.fallback);
    BOOST_TEST_REQUIRE(eval.size() == 6u);
    const std::string& script = eval[1];
    const std::string channel = "redlock:released:" + std::string(hostile_key);
    BOOST_TEST(eval[0] == "EVAL");
    BOOST_TEST(eval[2] == "1");  // one key
    BOOST_TEST(eval[3] == hostile_key);
    BOOST_TEST(eval[4] == hostile_value);
    BOOST_TEST(eval[5] == channel);  // the wake-up channel is an argument too
    BOOST_TEST(script.find("DEL") != std::string::npos, script);
    BOOST_TEST(script.find("PUBLISH") != std::string::npos, script);
    BOOST_TEST(script.find(hostile_key) == std::string::npos);

    const std::string sha = script_sha1(script);
    BOOST_TEST(is_lower_hex_sha(sha), sha);
    BOOST_TEST(c.payload == "*6\r\n" + bulk("EVALSHA") + bulk(sha) + bulk("1") + bulk(hostile_key) +
                                bulk(hostile_value) + bulk(channel));
    BOOST_TEST(c.fallback == "*6\r\n" + bulk("EVAL") + bulk(script) + bulk("1") +
                                 bulk(hostile_key) + bulk(hostile_value) + bulk(channel));
}

BOOST_AUTO_TEST_CASE(extend_is_evalsha_with_eval_fallback)
{
    for (bool recreate : {false, true}) {
        BOOST_TEST_CONTEXT("recreate " << recreate)
        {
            command c = extend_command(hostile_key, hostile_value, 5000ms, recreate);
            auto eval = args_of(c.fallback);
            BOOST_TEST_REQUIRE(eval.size() == 7u);
            const std::string& script = eval[1];
            const std::string flag = recreate ? "1" : "0";
            BOOST_TEST(eval[0] == "EVAL");
            BOOST_TEST(script.find("PEXPIRE") != std::string::npos, script);
            BOOST_TEST(script.find(hostile_key) == std::string::npos);

            const std::string sha = script_sha1(script);
            BOOST_TEST(is_lower_hex_sha(sha), sha);
            BOOST_TEST(c.payload == "*7\r\n" + bulk("EVALSHA") + bulk(sha) + bulk("1") +
                                        bulk(hostile_key) + bulk(hostile_value) + bulk("5000") +
                                        bulk(flag));
            BOOST_TEST(c.fallback == "*7\r\n" + bulk("EVAL") + bulk(script) + bulk("1") +
                                         bulk(hostile_key) + bulk(hostile_value) + bulk("5000") +
                                         bulk(flag));
        }
    }
}

BOOST_AUTO_TEST_CASE(release_and_extend_scripts_differ)
{
    auto release_sha = args_of(release_command("k", "v").payload).at(1);
    auto extend_sha = args_of(extend_command("k", "v", 1000ms, false).payload).at(1);
    BOOST_TEST(release_sha != extend_sha);
    // The sha does not depend on the arguments.
    BOOST_TEST(args_of(release_command("other", "x").payload).at(1) == release_sha);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reply_reading)

BOOST_AUTO_TEST_CASE(acquire_replies)
{
    std::string detail;
    BOOST_TEST((read_acquire_reply(make(resp::kind::simple_string, "OK"), "v", detail) ==
                node_status::ok));
    BOOST_TEST(detail.empty());
    BOOST_TEST((read_acquire_reply(make(resp::kind::nil), "v", detail) == node_status::taken));
    BOOST_TEST(detail.empty());

    for (const resp::reply& r : {make(resp::kind::error, "OOM command not allowed"),
                                 make(resp::kind::simple_string, "QUEUED"), integer(1),
                                 make(resp::kind::bulk_string, "OK")}) {
        detail.clear();
        BOOST_TEST((read_acquire_reply(r, "v", detail) == node_status::error));
        BOOST_TEST(!detail.empty());
    }
    detail.clear();
    read_acquire_reply(make(resp::kind::error, "OOM command not allowed"), "v", detail);
    BOOST_TEST(detail.find("OOM command not allowed") != std::string::npos, detail);
}

BOOST_AUTO_TEST_CASE(script_replies)
{
    std::string detail;
    BOOST_TEST((read_script_reply(integer(1), "v", detail) == node_status::ok));
    BOOST_TEST((read_script_reply(integer(0), "v", detail) == node_status::missing));
    BOOST_TEST((read_script_reply(integer(-1), "v", detail) == node_status::taken));
    BOOST_TEST(detail.empty());

    for (const resp::reply& r :
         {integer(2), integer(-2), make(resp::kind::nil), make(resp::kind::bulk_string, "1"),
          make(resp::kind::error, "NOSCRIPT No matching script")}) {
        detail.clear();
        BOOST_TEST((read_script_reply(r, "v", detail) == node_status::error));
        BOOST_TEST(!detail.empty());
    }
    detail.clear();
    read_script_reply(integer(2), "v", detail);
    BOOST_TEST(detail.find('2') != std::string::npos, detail);
}

BOOST_AUTO_TEST_CASE(get_replies)
{
    std::string detail;
    BOOST_TEST(
        (read_get_reply(make(resp::kind::bulk_string, "mine"), "mine", detail) == node_status::ok));
    BOOST_TEST((read_get_reply(make(resp::kind::bulk_string, "theirs"), "mine", detail) ==
                node_status::taken));
    BOOST_TEST((read_get_reply(make(resp::kind::bulk_string, "min"), "mine", detail) ==
                node_status::taken));
    BOOST_TEST((read_get_reply(make(resp::kind::bulk_string, "mine2"), "mine", detail) ==
                node_status::taken));
    BOOST_TEST((read_get_reply(make(resp::kind::nil), "mine", detail) == node_status::missing));
    BOOST_TEST(detail.empty());

    for (const resp::reply& r :
         {make(resp::kind::error, "WRONGTYPE Operation against a key"), integer(1)}) {
        detail.clear();
        BOOST_TEST((read_get_reply(r, "mine", detail) == node_status::error));
        BOOST_TEST(!detail.empty());
    }
}

BOOST_AUTO_TEST_SUITE_END()
