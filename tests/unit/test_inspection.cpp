// SPDX-License-Identifier: BSL-1.0
// How the inspection script's reply (client::async_inspect) is read into a key_state, and
// the command that carries it.

#include "protocol/inspection.hpp"
#include "protocol/script_table.hpp"
#include "resp/resp.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace redlock::detail;
using redlock::key_kind;
using redlock::key_state;

namespace {

resp::reply of(resp::kind type)
{
    resp::reply r;
    r.type = type;
    return r;
}

resp::reply bulk(std::string text)
{
    resp::reply r = of(resp::kind::bulk_string);
    r.text = std::move(text);
    return r;
}

resp::reply integer(std::int64_t n)
{
    resp::reply r = of(resp::kind::integer);
    r.integer = n;
    return r;
}

resp::reply array(std::vector<resp::reply> elements)
{
    resp::reply r = of(resp::kind::array);
    r.elements = std::move(elements);
    return r;
}

key_state read(const resp::reply& r)
{
    key_state s;
    read_inspect_reply(r, s);
    return s;
}

// The arguments of one encoded command.
std::vector<std::string> args_of(const std::string& wire)
{
    resp::decoder d;
    d.feed(wire.data(), wire.size());
    auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    std::vector<std::string> out;
    for (const auto& e : r->elements) {
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

}  // namespace

BOOST_AUTO_TEST_SUITE(inspection)

BOOST_AUTO_TEST_CASE(the_key_travels_as_an_argument_of_evalsha_with_eval_as_fallback)
{
    const std::string key = "odd 'key'\r\n";
    const command c = inspect_command({key, "", {}});
    const auto sha = args_of(c.payload);
    BOOST_TEST_REQUIRE(sha.size() == 4u);
    BOOST_TEST(sha[0] == "EVALSHA");
    BOOST_TEST(sha[1].size() == 40u);
    BOOST_TEST(sha[2] == "1");
    BOOST_TEST(sha[3] == key);
    const auto eval = args_of(eval_form(c));
    BOOST_TEST_REQUIRE(eval.size() == 4u);
    BOOST_TEST(eval[0] == "EVAL");
    BOOST_TEST(eval[1].find(key) == std::string::npos);
    BOOST_TEST(eval[3] == key);
    BOOST_TEST(c.script == &script_of(script_id::inspect));
    BOOST_TEST(sha[1] == script_of(script_id::inspect).sha);
    BOOST_TEST(eval[1] == script_of(script_id::inspect).text);
}

BOOST_AUTO_TEST_CASE(a_missing_key)
{
    const key_state s = read(array({bulk("none"), integer(-2), bulk("")}));
    BOOST_TEST((s.kind == key_kind::missing));
    BOOST_TEST(s.type == "none");
    BOOST_TEST(!s.exists());
    BOOST_TEST(!s.ttl.has_value());
    BOOST_TEST(s.holders.empty());
    BOOST_TEST(s.error.empty());
}

BOOST_AUTO_TEST_CASE(a_plain_lock_has_its_value_as_holder_and_its_ttl)
{
    const key_state s = read(array({bulk("string"), integer(2500), bulk(""), bulk("owner\x01")}));
    BOOST_TEST((s.kind == key_kind::plain));
    BOOST_TEST(s.exists());
    BOOST_TEST_REQUIRE(s.holders.size() == 1u);
    BOOST_TEST(s.holders[0].value == "owner\x01");
    BOOST_TEST(s.holders[0].count == 1);
    BOOST_TEST_REQUIRE(s.ttl.has_value());
    BOOST_TEST(s.ttl->count() == 2500);
}

BOOST_AUTO_TEST_CASE(a_key_without_expiry_has_no_ttl)
{
    const key_state s = read(array({bulk("string"), integer(-1), bulk(""), bulk("v")}));
    BOOST_TEST((s.kind == key_kind::plain));
    BOOST_TEST(!s.ttl.has_value());
}

BOOST_AUTO_TEST_CASE(a_reentrant_lock_has_its_owner_and_hold_count)
{
    const key_state s =
        read(array({bulk("hash"), integer(900), bulk(""), array({bulk("me"), bulk("3")})}));
    BOOST_TEST((s.kind == key_kind::reentrant));
    BOOST_TEST_REQUIRE(s.holders.size() == 1u);
    BOOST_TEST(s.holders[0].value == "me");
    BOOST_TEST(s.holders[0].count == 3);
    BOOST_TEST(s.ttl->count() == 900);
}

BOOST_AUTO_TEST_CASE(a_hash_that_does_not_hold_counts_is_not_a_lock)
{
    for (const char* bad : {"x", "0", "-1", "3x", ""}) {
        const key_state s =
            read(array({bulk("hash"), integer(-1), bulk(""), array({bulk("field"), bulk(bad)})}));
        BOOST_TEST((s.kind == key_kind::other), "count '" << bad << "'");
        BOOST_TEST(s.type == "hash");
        BOOST_TEST(s.holders.empty());
        BOOST_TEST(s.error.empty());
    }
}

BOOST_AUTO_TEST_CASE(the_keys_beside_travel_after_the_key_limit_first_then_the_queue)
{
    const auto sha = args_of(inspect_command(inspected_keys_of("p:", "p:sem", false)).payload);
    BOOST_TEST_REQUIRE(sha.size() == 8u);
    BOOST_TEST(sha[2] == "5");
    BOOST_TEST(sha[3] == "p:sem");
    BOOST_TEST(sha[4] == "p:redlock:limit:sem");
    BOOST_TEST(sha[5] == "p:redlock:queue:sem");
    BOOST_TEST(sha[6] == "p:redlock:queue-expiry:sem");
    BOOST_TEST(sha[7] == "p:redlock:queue-state:sem");
    // On a cluster, the keys beside share the key's slot (braces around it make them).
    const inspected_keys in_slot = inspected_keys_of("", "sem", true);
    BOOST_TEST(in_slot.limit == "redlock:limit:{sem}");
    BOOST_TEST(in_slot.queue[0] == "redlock:queue:{sem}");
    // A key with a '}' outside any tag has no names in its slot: only the key is read.
    const auto alone = args_of(inspect_command(inspected_keys_of("", "a}b", true)).payload);
    BOOST_TEST_REQUIRE(alone.size() == 4u);
    BOOST_TEST(alone[2] == "1");
}

BOOST_AUTO_TEST_CASE(a_read_write_lock_has_its_live_entries_with_their_own_ttls)
{
    // now 1000: reader a has 500 ms left, reader b expired, the waiting writer w 200 ms.
    const key_state s = read(array(
        {bulk("hash"), integer(800), bulk(""),
         array({bulk("r:a"), bulk("1500"), bulk("r:b"), bulk("1000"), bulk("i:w"), bulk("1200")}),
         bulk("1000")}));
    BOOST_TEST((s.kind == key_kind::read_write));
    BOOST_TEST_REQUIRE(s.holders.size() == 2u);
    BOOST_TEST(s.holders[0].value == "a");
    BOOST_TEST((s.holders[0].role == redlock::holder_role::reader));
    BOOST_TEST_REQUIRE(s.holders[0].ttl.has_value());
    BOOST_TEST(s.holders[0].ttl->count() == 500);
    BOOST_TEST(s.holders[1].value == "w");
    BOOST_TEST((s.holders[1].role == redlock::holder_role::waiting_writer));
    BOOST_TEST(s.holders[1].ttl->count() == 200);

    const key_state w = read(array({bulk("hash"), integer(800), bulk(""),
                                    array({bulk("w:me:x"), bulk("1800")}), bulk("1000")}));
    BOOST_TEST((w.kind == key_kind::read_write));
    BOOST_TEST_REQUIRE(w.holders.size() == 1u);
    BOOST_TEST(w.holders[0].value == "me:x");
    BOOST_TEST((w.holders[0].role == redlock::holder_role::writer));
}

BOOST_AUTO_TEST_CASE(a_hash_of_counts_with_the_time_is_still_a_reentrant_lock)
{
    const key_state s = read(array(
        {bulk("hash"), integer(900), bulk(""), array({bulk("me"), bulk("2")}), bulk("1000")}));
    BOOST_TEST((s.kind == key_kind::reentrant));
    BOOST_TEST_REQUIRE(s.holders.size() == 1u);
    BOOST_TEST(s.holders[0].count == 2);
    BOOST_TEST(!s.holders[0].ttl.has_value());
    const key_state x = read(array(
        {bulk("hash"), integer(900), bulk(""), array({bulk("q:me"), bulk("2000")}), bulk("1000")}));
    // No read-write mode 'q': a reentrant owner "q:me" holding it 2000 times.
    BOOST_TEST((x.kind == key_kind::reentrant));
    BOOST_TEST_REQUIRE(x.holders.size() == 1u);
    BOOST_TEST(x.holders[0].value == "q:me");
    BOOST_TEST(x.holders[0].count == 2000);
}

BOOST_AUTO_TEST_CASE(a_semaphore_has_its_live_permits_and_its_limit)
{
    const key_state s = read(array(
        {bulk("zset"), integer(900), bulk(""),
         array({bulk("old"), bulk("990"), bulk("p1"), bulk("1300"), bulk("p2"), bulk("1900")}),
         bulk("1000"), bulk("2")}));
    BOOST_TEST((s.kind == key_kind::semaphore));
    BOOST_TEST(s.permits == 2);
    BOOST_TEST_REQUIRE(s.holders.size() == 2u);
    BOOST_TEST(s.holders[0].value == "p1");
    BOOST_TEST(s.holders[0].ttl->count() == 300);
    BOOST_TEST(s.holders[1].ttl->count() == 900);
    BOOST_TEST((s.holders[1].role == redlock::holder_role::owner));

    const key_state none =
        read(array({bulk("zset"), integer(-1), bulk(""), array({}), bulk("1000"), bulk("")}));
    BOOST_TEST((none.kind == key_kind::semaphore));
    BOOST_TEST(none.permits == 0);
    const key_state other = read(array({bulk("zset"), integer(-1), bulk(""),
                                        array({bulk("m"), bulk("1.5")}), bulk("1000"), bulk("")}));
    BOOST_TEST((other.kind == key_kind::other), "a sorted set of other scores");
    const key_state bad = read(array({bulk("zset"), integer(-1), bulk(""), array({})}));
    BOOST_TEST((bad.code == redlock::node_errc::unexpected_reply));
}

BOOST_AUTO_TEST_CASE(a_fair_lock_has_its_holder_and_its_live_queue_in_order)
{
    // now 1000: the holder's own entry, w1 committed and marked for hand-offs (stamp 4, 300 ms
    // left), old expired, w2 still joining (900 ms left).
    const key_state s =
        read(array({bulk("string"), integer(2500), bulk(""), bulk("holder"), bulk("1000"),
                    array({bulk("holder"), bulk("1764000000000006"), bulk("c"), bulk("1800"),
                           bulk("w1"), bulk("1764000000000007"), bulk("c4"), bulk("1300"),
                           bulk("old"), bulk("1764000000000008"), bulk("c"), bulk("1000"),
                           bulk("w2"), bulk("1764000000000009"), bulk("p"), bulk("1900")})}));
    BOOST_TEST((s.kind == key_kind::plain));
    BOOST_TEST_REQUIRE(s.holders.size() == 1u);
    BOOST_TEST(s.holders[0].value == "holder");
    BOOST_TEST_REQUIRE(s.queue.size() == 2u);
    BOOST_TEST(s.queue[0].value == "w1");
    BOOST_TEST(s.queue[0].ticket == 1764000000000007u);
    BOOST_TEST(s.queue[0].committed);
    BOOST_TEST(s.queue[0].ttl.count() == 300);
    BOOST_TEST(s.queue[1].value == "w2");
    BOOST_TEST(!s.queue[1].committed);
    BOOST_TEST(s.queue[1].ttl.count() == 900);
}

BOOST_AUTO_TEST_CASE(a_free_fair_lock_may_have_a_queue)
{
    const key_state s = read(array({bulk("none"), integer(-2), bulk(""), bulk("1000"),
                                    array({bulk("head"), bulk("5"), bulk("c"), bulk("1100")})}));
    BOOST_TEST((s.kind == key_kind::missing));
    BOOST_TEST(s.error.empty());
    BOOST_TEST(s.holders.empty());
    BOOST_TEST_REQUIRE(s.queue.size() == 1u);
    BOOST_TEST(s.queue[0].value == "head");
    BOOST_TEST(s.queue[0].ticket == 5u);

    // An entry whose expiry the node lost is left out; a queue left empty is empty.
    const key_state lost = read(array({bulk("none"), integer(-2), bulk(""), bulk("1000"),
                                       array({bulk("x"), bulk("5"), bulk(""), bulk("")})}));
    BOOST_TEST(lost.error.empty());
    BOOST_TEST(lost.queue.empty());
    const key_state plain =
        read(array({bulk("string"), integer(2500), bulk(""), bulk("v"), bulk("1000"), array({})}));
    BOOST_TEST((plain.kind == key_kind::plain));
    BOOST_TEST(plain.queue.empty());
}

BOOST_AUTO_TEST_CASE(a_malformed_queue_is_the_nodes_error)
{
    for (const resp::reply& queue :
         {array({bulk("w"), bulk("5"), bulk("c")}),
          array({bulk("w"), bulk("x"), bulk("c"), bulk("9")}),
          array({bulk("w"), bulk("-5"), bulk("c"), bulk("9")}), bulk("w")}) {
        const key_state s =
            read(array({bulk("string"), integer(2500), bulk(""), bulk("v"), bulk("1000"), queue}));
        BOOST_TEST((s.code == redlock::node_errc::unexpected_reply));
        BOOST_TEST(s.queue.empty());
        const key_state m = read(array({bulk("none"), integer(-2), bulk(""), bulk("1000"), queue}));
        BOOST_TEST((m.code == redlock::node_errc::unexpected_reply));
    }
}

BOOST_AUTO_TEST_CASE(another_type_is_named)
{
    const key_state s = read(array({bulk("list"), integer(-1), bulk("")}));
    BOOST_TEST((s.kind == key_kind::other));
    BOOST_TEST(s.type == "list");
    BOOST_TEST(s.exists());
}

BOOST_AUTO_TEST_CASE(a_replica_names_its_master)
{
    const key_state s =
        read(array({bulk("string"), integer(700), bulk("127.0.0.1:7001"), bulk("v")}));
    BOOST_TEST((s.kind == key_kind::plain));
    BOOST_TEST(s.replica_of == "127.0.0.1:7001");
    BOOST_TEST(read(array({bulk("none"), integer(-2), bulk("")})).replica_of.empty());
}

BOOST_AUTO_TEST_CASE(an_error_reply_or_a_malformed_one_is_the_nodes_error)
{
    resp::reply error = of(resp::kind::error);
    error.text = "NOPERM no scripts";
    const key_state e = read(error);
    BOOST_TEST(e.error.find("NOPERM no scripts") != std::string::npos);
    BOOST_TEST((e.code == redlock::node_errc::no_permission));
    BOOST_TEST(!e.exists());
    for (const resp::reply& r :
         {integer(1), array({bulk("string"), integer(5)}),
          array({bulk("string"), integer(5), bulk("")}), array({integer(5), integer(5)}),
          array({bulk("hash"), integer(5), bulk(""), array({bulk("odd")})})}) {
        const key_state s = read(r);
        BOOST_TEST(s.error == "unexpected reply to the inspection script");
        BOOST_TEST((s.code == redlock::node_errc::unexpected_reply));
    }
}

BOOST_AUTO_TEST_SUITE_END()
