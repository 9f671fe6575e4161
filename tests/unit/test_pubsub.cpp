// SPDX-License-Identifier: BSL-1.0
// Reading pub/sub traffic on a RESP2 connection.
#include "engine/pubsub.hpp"

#include <boost/test/unit_test.hpp>

#include <initializer_list>

using namespace redlock::detail;

namespace {

resp::reply text(std::string_view s, resp::kind type = resp::kind::bulk_string)
{
    resp::reply r;
    r.type = type;
    r.text = s;
    return r;
}

resp::reply number(std::int64_t n)
{
    resp::reply r;
    r.type = resp::kind::integer;
    r.integer = n;
    return r;
}

resp::reply array(std::initializer_list<resp::reply> items)
{
    resp::reply r;
    r.type = resp::kind::array;
    r.elements = items;
    return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(pubsub_replies)

BOOST_AUTO_TEST_CASE(messages_of_each_kind_are_read)
{
    const auto plain = array({text("message"), text("ch"), text("v")});
    const auto shard = array({text("smessage"), text("{k}ch"), text("w")});
    const auto pattern = array({text("pmessage"), text("c*"), text("ch"), text("x")});
    for (const auto* r : {&plain, &shard, &pattern}) {
        BOOST_TEST((classify_pubsub(*r) == pubsub_reply::message));
        BOOST_TEST(!confirmed_count(*r));
    }
    auto m = read_message(plain);
    BOOST_TEST_REQUIRE(m.has_value());
    BOOST_TEST(m->channel == "ch");
    BOOST_TEST(m->payload == "v");
    BOOST_TEST(m->pattern.empty());
    m = read_message(pattern);
    BOOST_TEST_REQUIRE(m.has_value());
    BOOST_TEST(m->pattern == "c*");
    BOOST_TEST(m->channel == "ch");
    BOOST_TEST(m->payload == "x");
}

BOOST_AUTO_TEST_CASE(confirmations_carry_their_family_and_count)
{
    struct
    {
        const char* word;
        pubsub_reply kind;
    } const cases[] = {
        {"subscribe", pubsub_reply::subscribed},
        {"psubscribe", pubsub_reply::subscribed},
        {"unsubscribe", pubsub_reply::unsubscribed},
        {"punsubscribe", pubsub_reply::unsubscribed},
        {"ssubscribe", pubsub_reply::shard_subscribed},
        {"sunsubscribe", pubsub_reply::shard_unsubscribed},
    };
    for (const auto& c : cases) {
        const auto r = array({text(c.word), text("ch"), number(3)});
        BOOST_TEST((classify_pubsub(r) == c.kind), c.word);
        BOOST_TEST(confirmed_count(r).value_or(-1) == 3);
        BOOST_TEST(!read_message(r));
    }
    // UNSUBSCRIBE with nothing subscribed names no channel.
    const auto none = array({text("unsubscribe"), resp::reply{}, number(0)});
    BOOST_TEST((classify_pubsub(none) == pubsub_reply::unsubscribed));
}

BOOST_AUTO_TEST_CASE(anything_else_is_an_ordinary_reply)
{
    const resp::reply others[] = {
        text("message"),
        array({text("pong"), text("")}),
        array({text("message"), text("ch")}),
        array({text("message"), text("ch"), number(1)}),
        array({text("pmessage"), text("ch"), text("v")}),
        array({text("subscribe"), text("ch"), text("1")}),
        array({text("MESSAGE"), text("ch"), text("v")}),
        array({number(1), text("ch"), text("v")}),
        text("ERR message", resp::kind::error),
    };
    for (const auto& r : others) {
        BOOST_TEST((classify_pubsub(r) == pubsub_reply::other));
        BOOST_TEST(!read_message(r));
        BOOST_TEST(!confirmed_count(r));
    }
}

BOOST_AUTO_TEST_CASE(a_subscription_is_a_request_its_confirmation_answers)
{
    multiplexer mux(socket_use::pubsub);
    mux.connected();
    const submission s = subscription(request_kind::subscribe, "SSUBSCRIBE", "ch");
    BOOST_TEST((s.kind == request_kind::subscribe));
    std::string expected;
    resp::append_command(expected, {"SSUBSCRIBE", "ch"});
    BOOST_TEST(s.cmd->payload == expected);
    BOOST_TEST(!s.owner->given_up(s.index));  // nobody waits, and nobody gives it up
    (void)mux.add(s);
    std::string out;
    mux.prepare_write(out);
    mux.commit_write();
    BOOST_TEST(out == expected);
    BOOST_TEST(mux.begin_read());
    mux.feed("*3\r\n$10\r\nssubscribe\r\n$2\r\nch\r\n:1\r\n");
    BOOST_TEST((mux.next().what == reader_action::type::deliver));
    BOOST_TEST(mux.subscriptions() == 1);
    BOOST_TEST((mux.next().what == reader_action::type::read));  // messages may come
}

BOOST_AUTO_TEST_SUITE_END()
