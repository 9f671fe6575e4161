// SPDX-License-Identifier: BSL-1.0
#include "protocol/key_slot.hpp"
#include "protocol/key_space.hpp"
#include "protocol/script_table.hpp"
#include "protocol/scripts.hpp"
#include "resp/resp.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <optional>
#include <set>
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

// The EVAL that a connection sends in place of `c` when it must.
std::string eval_form(const command& c)
{
    std::string out;
    append_eval_form(out, c);
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
    // RFC 3174's vectors: a message of two blocks, and one of a million bytes.
    BOOST_TEST(script_sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
               "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    BOOST_TEST(script_sha1(std::string(1000000, 'a')) ==
               "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    // Binary input: NUL and bytes above 0x7f are hashed as they are.
    BOOST_TEST(script_sha1("\0\xff"s) == "aa3e5dcdd77b153f2e59bd0d8794fde33cb4e486");
}

const std::vector<std::string> one_key = {"lock:a"};
const std::vector<std::string> hostile_keys = {hostile_key};
const std::vector<std::string> three_keys = {"first-key-xyz", hostile_key, "third-key-xyz"};

BOOST_AUTO_TEST_CASE(every_script_is_named_by_the_sha1_of_its_text)
{
    const auto all = all_scripts();
    std::set<std::string_view> names;
    std::set<std::string> shas;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const lua_script& s = all[i];
        BOOST_TEST_CONTEXT("row " << i << ", " << s.name)
        {
            BOOST_TEST(s.index == i);
            BOOST_TEST(s.index < max_scripts);
            BOOST_TEST(&script_of(static_cast<script_id>(i)) == &s);
            BOOST_TEST(!s.name.empty());
            BOOST_TEST(!s.text.empty());
            BOOST_TEST(is_lower_hex_sha(s.sha), s.sha);
            BOOST_TEST(s.sha == script_sha1(s.text));
        }
        names.insert(s.name);
        shas.insert(s.sha);
    }
    BOOST_TEST(names.size() == script_count);  // each name once
    BOOST_TEST(shas.size() == script_count);   // no two rows with the same text
    BOOST_TEST(script_of(script_id::inspect).name == "inspect");
    BOOST_TEST((script_of(script_id::rw_release).keys == std::optional<std::size_t>(1)));
    BOOST_TEST(!script_of(script_id::inspect).keys.has_value());  // a semaphore's limit too
    BOOST_TEST(!script_of(script_id::plain_release).keys.has_value());
}

BOOST_AUTO_TEST_CASE(a_script_command_is_evalsha_with_the_same_eval_as_fallback)
{
    const lua_script& release = script_of(script_id::plain_release);
    const command c =
        script_command(script_id::plain_release, three_keys, {hostile_value}, {"PUBLISH", "ch"});
    const std::vector<std::string> tail{"3",           three_keys[0], three_keys[1], three_keys[2],
                                        hostile_value, "PUBLISH",     "ch"};
    std::vector<std::string> evalsha{"EVALSHA", release.sha};
    evalsha.insert(evalsha.end(), tail.begin(), tail.end());
    std::vector<std::string> eval{"EVAL", std::string(release.text)};
    eval.insert(eval.end(), tail.begin(), tail.end());
    BOOST_TEST(args_of(c.payload) == evalsha, boost::test_tools::per_element());
    BOOST_TEST(args_of(eval_form(c)) == eval, boost::test_tools::per_element());
    BOOST_TEST(c.script == &release);
    BOOST_TEST((slot_of(c) == key_slot(three_keys[0])));
    BOOST_TEST(c.replies == 1);

    const lua_script& inspect = script_of(script_id::inspect);
    const command one = script_command(script_id::inspect, one_key, {});
    const std::vector<std::string> inspect_sha{"EVALSHA", inspect.sha, "1", "lock:a"};
    BOOST_TEST(args_of(one.payload) == inspect_sha, boost::test_tools::per_element());
    BOOST_TEST(one.payload ==
               "*4\r\n" + bulk("EVALSHA") + bulk(inspect.sha) + bulk("1") + bulk("lock:a"));
    BOOST_TEST(one.script == &inspect);
}

BOOST_AUTO_TEST_CASE(the_eval_form_keeps_what_goes_before_and_after_the_script)
{
    const std::vector<std::string> keys{"a", "b"};
    request req = acquire_request({.keys = keys}, "v", 1000ms);
    add_replica_wait(req.cmd, 1, 5ms);
    const std::string eval = eval_form(req.cmd);
    // As a cluster's router prefixes ASKING.
    const std::string asking = "*1\r\n" + bulk("ASKING");
    req.cmd.payload.insert(0, asking);
    req.cmd.script_at += static_cast<std::uint32_t>(asking.size());
    BOOST_TEST(eval_form(req.cmd) == asking + eval);
    BOOST_TEST(eval.starts_with("*7\r\n" + bulk("EVAL") + bulk(req.cmd.script->text) + bulk("2")));
    BOOST_TEST(eval.ends_with("*3\r\n" + bulk("WAIT") + bulk("1") + bulk("5")));
}

BOOST_AUTO_TEST_CASE(plain_single_key_acquire_is_set_nx_px)
{
    request r = acquire_request({one_key, false}, "val", 8000ms);
    BOOST_TEST(r.cmd.payload == "*6\r\n" + bulk("SET") + bulk("lock:a") + bulk("val") + bulk("NX") +
                                    bulk("PX") + bulk("8000"));
    BOOST_TEST(r.cmd.script == nullptr);
    BOOST_TEST(r.read == &read_acquire_reply);
    BOOST_TEST((slot_of(r.cmd) == key_slot("lock:a")));
    BOOST_TEST(!slot_of(command{}).has_value());  // no key: any master
}

BOOST_AUTO_TEST_CASE(plain_single_key_check_is_get)
{
    request r = check_request({one_key, false}, "val");
    BOOST_TEST(r.cmd.payload == "*2\r\n" + bulk("GET") + bulk("lock:a"));
    BOOST_TEST(r.cmd.script == nullptr);
    BOOST_TEST(r.read == &read_get_reply);
}

BOOST_AUTO_TEST_CASE(hostile_key_and_value_are_separate_arguments)
{
    std::vector<std::string> set = {"SET", hostile_key, hostile_value, "NX", "PX", "10"};
    BOOST_TEST(
        args_of(acquire_request({hostile_keys, false}, hostile_value, 10ms).cmd.payload) == set,
        boost::test_tools::per_element());
    std::vector<std::string> get = {"GET", hostile_key};
    BOOST_TEST(args_of(check_request({hostile_keys, false}, hostile_value).cmd.payload) == get,
               boost::test_tools::per_element());
}

// Every script request: EVALSHA sha numkeys keys... args..., and the same as EVAL with the
// text of script `id`, whose SHA-1 is the sha; no key or value inside the script text.
void check_script_request(const request& r, script_id id, const std::vector<std::string>& keys,
                          const std::vector<std::string>& args, std::string_view must_contain)
{
    const lua_script& expected = script_of(id);
    BOOST_TEST_CONTEXT("script " << expected.name)
    {
        BOOST_TEST(r.cmd.script == &expected);
        BOOST_TEST((!expected.keys || *expected.keys == keys.size()));
    }
    auto eval = args_of(eval_form(r.cmd));
    auto evalsha = args_of(r.cmd.payload);
    BOOST_TEST_REQUIRE(eval.size() == 3 + keys.size() + args.size());
    BOOST_TEST_REQUIRE(evalsha.size() == eval.size());
    BOOST_TEST(eval[0] == "EVAL");
    BOOST_TEST(evalsha[0] == "EVALSHA");
    const std::string& script = eval[1];
    BOOST_TEST(script == expected.text);
    BOOST_TEST(evalsha[1] == expected.sha);
    BOOST_TEST(evalsha[1] == script_sha1(script));
    BOOST_TEST(eval[2] == std::to_string(keys.size()));
    for (std::size_t i = 0; i < keys.size(); ++i) {
        BOOST_TEST(eval[3 + i] == keys[i]);
        BOOST_TEST(script.find(keys[i]) == std::string::npos);
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
        BOOST_TEST(eval[3 + keys.size() + i] == args[i]);
    }
    BOOST_TEST(std::equal(eval.begin() + 2, eval.end(), evalsha.begin() + 2));
    BOOST_TEST(script.find(hostile_value) == std::string::npos);
    BOOST_TEST(script.find(must_contain) != std::string::npos, script);
    BOOST_TEST(r.read == &read_script_reply);
}

BOOST_AUTO_TEST_CASE(script_requests_for_every_kind_and_shape)
{
    for (bool reentrant : {false, true}) {
        const auto pick = [reentrant](script_id plain, script_id reentrant_id) {
            return reentrant ? reentrant_id : plain;
        };
        for (const auto* keys : {&hostile_keys, &three_keys}) {
            BOOST_TEST_CONTEXT("reentrant " << reentrant << ", " << keys->size() << " keys")
            {
                lock_shape shape{*keys, reentrant};
                // A quiet release (a hand-off) names no channel; an announced one names each
                // key's release channel.
                const script_id release =
                    pick(script_id::plain_release, script_id::reentrant_release);
                check_script_request(release_request(shape, hostile_value, false), release, *keys,
                                     {hostile_value}, "ARGV[2 + i]");
                std::vector<std::string> announced{hostile_value, "PUBLISH"};
                for (const std::string& k : *keys) {
                    announced.push_back("redlock:released:" + k);
                }
                check_script_request(release_request(shape, hostile_value, true), release, *keys,
                                     announced, "ARGV[2 + i]");
                for (bool recreate : {false, true}) {
                    check_script_request(
                        extend_request(shape, hostile_value, 5000ms, recreate),
                        pick(script_id::plain_check_extend, script_id::reentrant_check_extend),
                        *keys, {hostile_value, "5000", recreate ? "1" : "0"}, "ARGV[2]");
                }
                if (reentrant || keys->size() > 1) {
                    check_script_request(
                        acquire_request(shape, hostile_value, 700ms),
                        pick(script_id::plain_acquire, script_id::reentrant_acquire), *keys,
                        {hostile_value, "700"}, reentrant ? "HINCRBY" : "EXISTS");
                    check_script_request(
                        check_request(shape, hostile_value),
                        pick(script_id::plain_check_extend, script_id::reentrant_check_extend),
                        *keys, {hostile_value}, reentrant ? "HEXISTS" : "GET");
                }
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(each_kind_has_its_own_scripts)
{
    std::set<std::string> shas;
    for (bool reentrant : {false, true}) {
        lock_shape shape{three_keys, reentrant};
        shas.insert(args_of(acquire_request(shape, "v", 1000ms).cmd.payload).at(1));
        shas.insert(args_of(release_request(shape, "v", true).cmd.payload).at(1));
        const std::string extend =
            args_of(extend_request(shape, "v", 1000ms, false).cmd.payload).at(1);
        shas.insert(extend);
        // A check is the extend script without an expiry.
        BOOST_TEST(args_of(check_request(shape, "v").cmd.payload).at(1) == extend);
    }
    BOOST_TEST(shas.size() == 6u);
    // The same script whatever the keys and values.
    BOOST_TEST(args_of(release_request({one_key, false}, "x", true).cmd.payload).at(1) ==
               args_of(release_request({hostile_keys, false}, "y", false).cmd.payload).at(1));
}

BOOST_AUTO_TEST_CASE(fenced_acquire_names_a_counter_beside_each_key)
{
    for (const auto* keys : {&one_key, &hostile_keys, &three_keys}) {
        BOOST_TEST_CONTEXT(keys->size() << " keys")
        {
            std::vector<std::string> all = *keys;
            std::vector<std::string> counters;
            for (const std::string& k : *keys) {
                counters.push_back("redlock:fence:" + k);
                BOOST_TEST(fence_key("", k) == counters.back());
            }
            all.insert(all.end(), counters.begin(), counters.end());
            request acquire = acquire_request({*keys, false, true}, hostile_value, 900ms);
            auto eval = args_of(eval_form(acquire.cmd));
            BOOST_TEST_REQUIRE(eval.size() == 3 + all.size() + 2);
            BOOST_TEST(eval[2] == std::to_string(all.size()));
            BOOST_TEST(std::equal(all.begin(), all.end(), eval.begin() + 3));
            BOOST_TEST(eval[1].find("INCR") != std::string::npos);
            BOOST_TEST(eval[1].find("TIME") != std::string::npos);
            BOOST_TEST(acquire.read == &read_fenced_acquire_reply);
            BOOST_TEST(acquire.cmd.script == &script_of(script_id::fenced_acquire));

            request raise = fence_raise_request({*keys, false, true}, 123456789012345ULL);
            auto r = args_of(eval_form(raise.cmd));
            BOOST_TEST_REQUIRE(r.size() == 3 + counters.size() + 1);
            BOOST_TEST(std::equal(counters.begin(), counters.end(), r.begin() + 3));
            BOOST_TEST(r.back() == "123456789012345");
            BOOST_TEST(raise.read == &read_script_reply);
            BOOST_TEST(raise.cmd.script == &script_of(script_id::fence_raise));
        }
    }
}

BOOST_AUTO_TEST_CASE(a_key_prefix_goes_before_counters_and_channels)
{
    const std::vector<std::string> keys = lock_keys("app:{locks}:", {"a", hostile_key});
    BOOST_TEST_REQUIRE(keys.size() == 2u);
    BOOST_TEST(keys[0] == "app:{locks}:a");
    BOOST_TEST(keys[1] == "app:{locks}:" + hostile_key);
    const lock_shape shape{keys, false, true, "app:{locks}:"};

    auto acquire = args_of(eval_form(acquire_request(shape, "v", 900ms).cmd));
    BOOST_TEST_REQUIRE(acquire.size() == 3u + 4 + 2);
    BOOST_TEST(acquire[3] == "app:{locks}:a");
    BOOST_TEST(acquire[4] == "app:{locks}:" + hostile_key);
    BOOST_TEST(acquire[5] == "app:{locks}:redlock:fence:a");
    BOOST_TEST(acquire[6] == "app:{locks}:redlock:fence:" + hostile_key);

    auto raise = args_of(eval_form(fence_raise_request(shape, 7).cmd));
    BOOST_TEST_REQUIRE(raise.size() == 3u + 2 + 1);
    BOOST_TEST(raise[3] == "app:{locks}:redlock:fence:a");

    auto release = args_of(eval_form(release_request(shape, "v", true).cmd));
    BOOST_TEST_REQUIRE(release.size() == 3u + 2 + 4);
    BOOST_TEST(release[3] == "app:{locks}:a");
    BOOST_TEST(release[5] == "v");
    BOOST_TEST(release[6] == "PUBLISH");
    BOOST_TEST(release[7] == "app:{locks}:redlock:released:a");
    BOOST_TEST(release[8] == "app:{locks}:redlock:released:" + hostile_key);
}

BOOST_AUTO_TEST_CASE(on_a_cluster_releases_go_out_by_sharded_pub_sub_in_the_keys_slot)
{
    const std::vector<std::string> keys{"orders"};
    const lock_shape shape{.keys = keys, .fencing = true, .in_cluster = true};
    const request release = release_request(shape, "v", true);
    auto args = args_of(eval_form(release.cmd));
    BOOST_TEST_REQUIRE(args.size() == 3u + 1 + 3);
    BOOST_TEST(args[5] == "SPUBLISH");
    BOOST_TEST(args[6] == "redlock:released:{orders}");
    BOOST_TEST((slot_of(release.cmd) == key_slot("orders")));
    auto acquire = args_of(eval_form(acquire_request(shape, "v", 900ms).cmd));
    BOOST_TEST_REQUIRE(acquire.size() == 3u + 2 + 2);
    BOOST_TEST(acquire[4] == "redlock:fence:{orders}");
    BOOST_TEST((slot_of(acquire_request(shape, "v", 900ms).cmd) == key_slot("orders")));
}

BOOST_AUTO_TEST_CASE(release_channels_sit_beside_their_keys)
{
    for (std::string_view prefix : {"", "p:", "redlock:released:"}) {
        BOOST_TEST_CONTEXT("prefix '" << prefix << "'")
        {
            const std::string key = std::string(prefix) + "job:7";
            BOOST_TEST(release_channel(prefix, key) ==
                       std::string(prefix) + "redlock:released:job:7");
            // On a cluster, in the key's slot, for sharded pub/sub.
            const std::string sharded = release_channel(prefix, key, true);
            BOOST_TEST(sharded == std::string(prefix) + "redlock:released:{" + key + "}");
            BOOST_TEST(key_slot(sharded) == key_slot(key));
        }
    }
}

BOOST_AUTO_TEST_CASE(fenced_acquire_replies)
{
    node_failure why;
    BOOST_TEST((read_fenced_acquire_reply(integer(1), "v", why) == node_status::ok));
    BOOST_TEST((read_fenced_acquire_reply(integer(1763876543123456), "v", why) == node_status::ok));
    BOOST_TEST((read_fenced_acquire_reply(integer(-1), "v", why) == node_status::taken));
    BOOST_TEST(!why);
    for (const resp::reply& r : {integer(0), integer(-2), make(resp::kind::nil),
                                 make(resp::kind::error, "ERR value is not an integer")}) {
        why = {};
        BOOST_TEST((read_fenced_acquire_reply(r, "v", why) == node_status::error));
        BOOST_TEST(!why.detail.empty());
    }
}

BOOST_AUTO_TEST_CASE(acquire_replies)
{
    node_failure why;
    BOOST_TEST(
        (read_acquire_reply(make(resp::kind::simple_string, "OK"), "v", why) == node_status::ok));
    BOOST_TEST(!why);
    BOOST_TEST((read_acquire_reply(make(resp::kind::nil), "v", why) == node_status::taken));
    BOOST_TEST(!why);

    for (const resp::reply& r : {make(resp::kind::error, "OOM command not allowed"),
                                 make(resp::kind::simple_string, "QUEUED"), integer(1),
                                 make(resp::kind::bulk_string, "OK")}) {
        why = {};
        BOOST_TEST((read_acquire_reply(r, "v", why) == node_status::error));
        BOOST_TEST(!why.detail.empty());
    }
    why = {};
    read_acquire_reply(make(resp::kind::error, "OOM command not allowed"), "v", why);
    BOOST_TEST(why.detail.find("OOM command not allowed") != std::string::npos, why.detail);
    // An error reply is the server's; any other reply the command cannot have.
    BOOST_TEST((why.code == redlock::node_errc::server_error));
    why = {};
    read_acquire_reply(make(resp::kind::simple_string, "QUEUED"), "v", why);
    BOOST_TEST((why.code == redlock::node_errc::unexpected_reply));
    why = {};
    read_acquire_reply(make(resp::kind::error, "READONLY You can't write"), "v", why);
    BOOST_TEST((why.code == redlock::node_errc::not_a_master));
    BOOST_TEST(why.detail.find("list masters") != std::string::npos, why.detail);
}

BOOST_AUTO_TEST_CASE(script_replies)
{
    node_failure why;
    BOOST_TEST((read_script_reply(integer(1), "v", why) == node_status::ok));
    BOOST_TEST((read_script_reply(integer(0), "v", why) == node_status::missing));
    BOOST_TEST((read_script_reply(integer(-1), "v", why) == node_status::taken));
    BOOST_TEST(!why);

    for (const resp::reply& r :
         {integer(2), integer(-2), make(resp::kind::nil), make(resp::kind::bulk_string, "1"),
          make(resp::kind::error, "NOSCRIPT No matching script")}) {
        why = {};
        BOOST_TEST((read_script_reply(r, "v", why) == node_status::error));
        BOOST_TEST(!why.detail.empty());
    }
    why = {};
    read_script_reply(integer(2), "v", why);
    BOOST_TEST(why.detail.find('2') != std::string::npos, why.detail);
    BOOST_TEST((why.code == redlock::node_errc::unexpected_reply));
}

BOOST_AUTO_TEST_CASE(get_replies)
{
    node_failure why;
    BOOST_TEST(
        (read_get_reply(make(resp::kind::bulk_string, "mine"), "mine", why) == node_status::ok));
    BOOST_TEST((read_get_reply(make(resp::kind::bulk_string, "theirs"), "mine", why) ==
                node_status::taken));
    BOOST_TEST(
        (read_get_reply(make(resp::kind::bulk_string, "min"), "mine", why) == node_status::taken));
    BOOST_TEST((read_get_reply(make(resp::kind::bulk_string, "mine2"), "mine", why) ==
                node_status::taken));
    BOOST_TEST((read_get_reply(make(resp::kind::nil), "mine", why) == node_status::missing));
    BOOST_TEST(!why);

    for (const resp::reply& r :
         {make(resp::kind::error, "WRONGTYPE Operation against a key"), integer(1)}) {
        why = {};
        BOOST_TEST((read_get_reply(r, "mine", why) == node_status::error));
        BOOST_TEST(!why.detail.empty());
    }
}

BOOST_AUTO_TEST_CASE(a_replica_wait_follows_the_command_and_its_fallback)
{
    const std::vector<std::string> keys{"a", "b"};
    request req = acquire_request({.keys = keys}, "v", 1000ms);
    const std::string payload = req.cmd.payload;
    const std::string fallback = eval_form(req.cmd);
    add_replica_wait(req.cmd, 2, 0ms);
    BOOST_TEST(req.cmd.replies == 2);
    // The command unchanged, then WAIT with a timeout of at least 1 ms (0 would never end).
    const std::string wait = "*3\r\n" + bulk("WAIT") + bulk("2") + bulk("1");
    BOOST_TEST(req.cmd.payload == payload + wait);
    BOOST_TEST(eval_form(req.cmd) == fallback + wait);

    const std::vector<std::string> one{"k"};
    request set = acquire_request({.keys = one}, "v", 1000ms);
    add_replica_wait(set.cmd, 1, 50ms);
    BOOST_TEST(set.cmd.script == nullptr);  // SET has no script to fall back from
    BOOST_TEST(set.cmd.payload.ends_with("*3\r\n" + bulk("WAIT") + bulk("1") + bulk("50")));
}

BOOST_AUTO_TEST_CASE(a_node_counts_only_when_enough_replicas_acknowledged)
{
    const auto pair = [](resp::reply own, resp::reply acknowledged) {
        resp::reply r = make(resp::kind::array);
        r.elements = {std::move(own), std::move(acknowledged)};
        return r;
    };
    const resp::reply set = make(resp::kind::simple_string, "OK");
    node_failure why;
    // Reads one reply to a command followed by WAIT.
    const auto status = [&](const resp::reply& r, int replicas) {
        return read_replicated_reply(r, read_acquire_reply, "v", replicas, why);
    };
    BOOST_TEST((status(pair(set, integer(2)), 2) == node_status::ok));
    BOOST_TEST((status(pair(set, integer(3)), 2) == node_status::ok));

    why = {};
    BOOST_TEST((status(pair(set, integer(1)), 2) == node_status::error));
    BOOST_TEST(why.detail.find("1 of the 2 replicas") != std::string::npos, why.detail);
    BOOST_TEST((why.code == redlock::node_errc::not_replicated));

    // Refused by the command itself: WAIT's count does not matter.
    BOOST_TEST((status(pair(make(resp::kind::nil), integer(5)), 2) == node_status::taken));

    why = {};
    BOOST_TEST((status(pair(set, make(resp::kind::error, "ERR WAIT cannot be used")), 1) ==
                node_status::error));
    BOOST_TEST(why.detail.find("ERR WAIT cannot be used") != std::string::npos, why.detail);
    BOOST_TEST((why.code == redlock::node_errc::server_error));

    BOOST_TEST((status(set, 1) == node_status::error));
    BOOST_TEST((status(pair(set, make(resp::kind::bulk_string, "2")), 1) == node_status::error));
}

BOOST_AUTO_TEST_SUITE_END()
