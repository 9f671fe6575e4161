// SPDX-License-Identifier: BSL-1.0
// The multiplexer's decisions, without a socket: bytes out of prepare_write, bytes into feed,
// and what next() says the reader does with them.
#include "engine/multiplexer.hpp"

#include <boost/system/errc.hpp>
#include <boost/test/unit_test.hpp>

#include <deque>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

using namespace redlock::detail;
using step = reader_action::type;

namespace {

// Owners are told their outcomes by the runner, never by the multiplexer.
struct fake_owner final : request_owner
{
    void deliver(std::uint32_t, exec_result) override
    {
        BOOST_FAIL("the multiplexer told an owner an outcome itself");
    }
    bool given_up(std::uint32_t index) const noexcept override { return abandoned.contains(index); }
    std::set<std::uint32_t> abandoned;
};

command plain(std::string_view word, std::string_view arg = "x")
{
    command c;
    resp::append_command(c.payload, {word, arg});
    return c;
}

// Two rows of a script table.
const lua_script script_a{.index = 0, .name = "a", .keys = 0, .text = "return 1", .sha = "sha-a"};
const lua_script script_b{.index = 5, .name = "b", .keys = 0, .text = "return 2", .sha = "sha-b"};

command scripted(const lua_script& script)
{
    command c;
    resp::append_command(c.payload, {"EVALSHA", script.sha, "0"});
    c.script = &script;
    c.script_at = 4;  // behind "*3\r\n"
    return c;
}

// What a connection writes for `c` (scripted, perhaps behind ASKING) sent as EVAL.
std::string eval_of(const command& c)
{
    std::string out;
    if (c.own_reply == 1) {
        resp::append_command(out, {"ASKING"});
    }
    resp::append_command(out, {"EVAL", c.script->text, "0"});
    return out;
}

std::string bulk_array(std::initializer_list<std::string_view> items)
{
    std::string out = "*" + std::to_string(items.size()) + "\r\n";
    for (std::string_view item : items) {
        out += "$" + std::to_string(item.size()) + "\r\n";
        out += item;
        out += "\r\n";
    }
    return out;
}

std::string confirmation(std::string_view word, std::string_view channel, int count)
{
    std::string out = "*3\r\n$" + std::to_string(word.size()) + "\r\n" + std::string(word) + "\r\n";
    out += "$" + std::to_string(channel.size()) + "\r\n" + std::string(channel) + "\r\n";
    return out + ":" + std::to_string(count) + "\r\n";
}

const std::string noscript_reply = "-NOSCRIPT No matching script. Please use EVAL.\r\n";

struct fixture
{
    explicit fixture(socket_use use = socket_use::requests) : mux(use) { mux.connected(); }

    const command& keep(command c) { return commands.emplace_back(std::move(c)); }

    void submit(const command& c, std::uint32_t index, request_kind kind = request_kind::command)
    {
        (void)mux.add(submission{.owner = owner, .index = index, .cmd = &c, .kind = kind});
    }

    // The next batch, its write completed at once.
    std::string write()
    {
        std::string out;
        mux.prepare_write(out);
        mux.commit_write();
        return out;
    }

    // Feeds `bytes`, then takes the reader's steps up to the first read, park or fail.
    std::vector<reader_action> read(std::string_view bytes)
    {
        mux.feed(bytes);
        std::vector<reader_action> steps;
        for (;;) {
            steps.push_back(mux.next());
            const step s = steps.back().what;
            if (s == step::read || s == step::park || s == step::fail) {
                return steps;
            }
        }
    }

    void give_up(std::uint32_t index)
    {
        owner->abandoned.insert(index);
        mux.gave_up();
    }

    multiplexer mux;
    std::shared_ptr<fake_owner> owner = std::make_shared<fake_owner>();
    std::deque<command> commands;
};

// The steps as words, which a failed check prints.
std::string words(const std::vector<reader_action>& steps)
{
    static constexpr const char* names[] = {"read",   "park", "deliver", "drop",
                                            "resend", "push", "fail"};
    std::string out;
    for (const reader_action& a : steps) {
        out += out.empty() ? "" : " ";
        out += names[static_cast<int>(a.what)];
    }
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(multiplexer_writes)

BOOST_AUTO_TEST_CASE(nothing_is_written_while_no_socket_is_up)
{
    multiplexer mux;
    auto owner = std::make_shared<fake_owner>();
    const command ping = plain("PING");
    BOOST_TEST(mux.add(submission{.owner = owner, .index = 0, .cmd = &ping}));
    std::string out = "untouched";
    BOOST_TEST(mux.prepare_write(out) == 0u);
    BOOST_TEST(out == "untouched");
    BOOST_TEST(!mux.begin_read());
    mux.connected();
    BOOST_TEST(mux.prepare_write(out) == 1u);
    BOOST_TEST(out == ping.payload);
    BOOST_TEST(mux.in_flight() == 1u);
    BOOST_TEST(mux.queued() == 0u);
}

BOOST_AUTO_TEST_CASE(what_is_queued_during_a_write_goes_in_the_next_one_batch)
{
    fixture f;
    const command& a = f.keep(plain("GET", "a"));
    const command& b = f.keep(plain("GET", "b"));
    const command& c = f.keep(plain("GET", "c"));
    f.submit(a, 0);
    std::string out;
    BOOST_TEST(f.mux.prepare_write(out) == 1u);
    f.submit(b, 1);
    f.submit(c, 2);
    std::string busy = out;
    BOOST_TEST(f.mux.prepare_write(busy) == 0u);  // the first write is under way
    BOOST_TEST(busy == a.payload);                // and its buffer is left alone
    BOOST_TEST(f.mux.writing());
    f.mux.commit_write();
    BOOST_TEST(f.mux.prepare_write(out) == 2u);
    BOOST_TEST(out == b.payload + c.payload);
    BOOST_TEST(f.mux.in_flight() == 3u);
    f.mux.commit_write();
    BOOST_TEST(f.mux.prepare_write(out) == 0u);  // nothing left
}

BOOST_AUTO_TEST_CASE(held_writes_wait_for_as_many_resumes_and_go_together)
{
    fixture f;
    const command& a = f.keep(plain("DEL", "a"));
    const command& b = f.keep(plain("SET", "b"));
    f.mux.hold_writes();
    f.mux.hold_writes();
    f.submit(a, 0);
    f.submit(b, 1);
    std::string out;
    BOOST_TEST(f.mux.prepare_write(out) == 0u);
    BOOST_TEST(!f.mux.resume_writes());
    BOOST_TEST(f.mux.prepare_write(out) == 0u);
    BOOST_TEST(f.mux.resume_writes());
    BOOST_TEST(f.mux.prepare_write(out) == 2u);
    BOOST_TEST(out == a.payload + b.payload);
}

BOOST_AUTO_TEST_CASE(holds_outlive_the_socket)
{
    fixture f;
    f.mux.hold_writes();
    f.mux.fail_all();
    f.mux.connected();
    f.submit(f.keep(plain("GET")), 0);
    BOOST_TEST(f.write().empty());
    BOOST_TEST(f.mux.resume_writes());
    BOOST_TEST(f.write() == plain("GET").payload);
}

BOOST_AUTO_TEST_CASE(a_request_given_up_before_it_is_written_still_goes_out)
{
    // A round that stopped early still sets the key on the other nodes, and the clean-up
    // behind a cancelled acquire still deletes it: the reply is dropped, the command runs.
    fixture f;
    const command& set = f.keep(plain("SET"));
    f.submit(set, 0);
    f.give_up(0);
    BOOST_TEST(f.write() == set.payload);
    BOOST_TEST(f.mux.begin_read());
    BOOST_TEST(words(f.read("+OK\r\n")) == "drop park");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(multiplexer_replies)

BOOST_AUTO_TEST_CASE(replies_are_matched_to_requests_in_order_whatever_the_read_sizes)
{
    fixture f;
    f.submit(f.keep(plain("SET")), 7);
    f.submit(f.keep(plain("INCR")), 8);
    f.submit(f.keep(plain("GET")), 9);
    f.write();
    BOOST_TEST(f.mux.begin_read());
    BOOST_TEST(!f.mux.begin_read());  // one reader
    BOOST_TEST(words(f.read("+O")) == "read");
    auto steps = f.read("K\r\n:4");
    BOOST_TEST(words(steps) == "deliver read");
    BOOST_TEST(steps[0].request.index == 7u);
    BOOST_TEST(steps[0].reply.text == "OK");
    steps = f.read("2\r\n$3\r\nabc\r\n");
    BOOST_TEST(words(steps) == "deliver deliver park");
    BOOST_TEST(steps[0].request.index == 8u);
    BOOST_TEST(steps[0].reply.integer == 42);
    BOOST_TEST(steps[1].request.index == 9u);
    BOOST_TEST(steps[1].reply.text == "abc");
    BOOST_TEST((steps[1].request.owner == f.owner));
    BOOST_TEST(f.mux.heard_from_server());
    // Parked: the next write starts the reader again.
    BOOST_TEST(!f.mux.begin_read());
    f.submit(f.keep(plain("GET")), 10);
    f.write();
    BOOST_TEST(f.mux.begin_read());
}

BOOST_AUTO_TEST_CASE(the_reply_of_a_given_up_request_is_dropped_not_passed_to_the_next)
{
    fixture f;
    f.submit(f.keep(plain("SET")), 0);
    f.submit(f.keep(plain("GET")), 1);
    f.write();
    f.give_up(0);
    auto steps = f.read("+OK\r\n$5\r\nvalue\r\n");
    BOOST_TEST(words(steps) == "drop deliver park");
    BOOST_TEST(steps[0].request.index == 0u);
    BOOST_TEST(steps[1].request.index == 1u);
    BOOST_TEST(steps[1].reply.text == "value");
}

BOOST_AUTO_TEST_CASE(a_request_with_several_replies_is_answered_by_an_array_of_them)
{
    fixture f;
    command acquire_and_wait = plain("SET");
    resp::append_command(acquire_and_wait.payload, {"WAIT", "1", "100"});
    acquire_and_wait.replies = 2;
    f.submit(f.keep(std::move(acquire_and_wait)), 0);
    f.submit(f.keep(plain("GET")), 1);
    f.write();
    BOOST_TEST(words(f.read("+OK\r\n")) == "read");  // half of it
    auto steps = f.read(":1\r\n$-1\r\n");
    BOOST_TEST(words(steps) == "deliver deliver park");
    BOOST_TEST((steps[0].reply.type == resp::kind::array));
    BOOST_TEST(steps[0].reply.elements.size() == 2u);
    BOOST_TEST(steps[0].reply.elements[0].text == "OK");
    BOOST_TEST(steps[0].reply.elements[1].integer == 1);
    BOOST_TEST(steps[1].request.index == 1u);
    BOOST_TEST((steps[1].reply.type == resp::kind::nil));
}

BOOST_AUTO_TEST_CASE(a_reply_nobody_asked_for_is_a_protocol_error)
{
    fixture f;
    f.submit(f.keep(plain("GET")), 0);
    f.write();
    auto steps = f.read("+OK\r\n+EXTRA\r\n");
    BOOST_TEST(words(steps) == "deliver fail");
    BOOST_TEST((steps[1].error == boost::system::errc::protocol_error));
    BOOST_TEST(!steps[1].diagnostics.empty());
    // Broken for good: no more writes, every step fails, until the socket is replaced.
    BOOST_TEST(!f.mux.socket_up());
    f.submit(f.keep(plain("GET")), 1);
    BOOST_TEST(f.write().empty());
    BOOST_TEST((f.mux.next().what == step::fail));
}

BOOST_AUTO_TEST_CASE(bytes_after_the_last_reply_owed_are_a_protocol_error)
{
    fixture f;
    f.submit(f.keep(plain("GET")), 0);
    f.write();
    auto steps = f.read("+OK\r\n+EXT");
    BOOST_TEST(words(steps) == "deliver fail");
    BOOST_TEST((steps[1].error == boost::system::errc::protocol_error));
}

BOOST_AUTO_TEST_CASE(bytes_that_are_no_resp_are_a_protocol_error)
{
    fixture f;
    f.submit(f.keep(plain("GET")), 0);
    f.write();
    auto steps = f.read("?garbage\r\n");
    BOOST_TEST(words(steps) == "fail");
    BOOST_TEST((steps[0].error == boost::system::errc::protocol_error));
}

BOOST_AUTO_TEST_CASE(on_a_request_socket_a_message_shaped_array_is_a_reply)
{
    fixture f;
    f.submit(f.keep(plain("LRANGE")), 0);
    f.write();
    auto steps = f.read(bulk_array({"message", "a", "b"}));
    BOOST_TEST(words(steps) == "deliver park");
    BOOST_TEST(steps[0].reply.elements.size() == 3u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(multiplexer_scripts)

BOOST_AUTO_TEST_CASE(a_script_goes_as_eval_on_first_use_on_a_socket_then_as_evalsha)
{
    fixture f;
    const command& a = f.keep(scripted(script_a));
    const command& b = f.keep(scripted(script_b));
    f.submit(a, 0);
    f.submit(a, 1);
    f.submit(b, 2);
    BOOST_TEST(f.write() == eval_of(a) + a.payload + eval_of(b));
    f.submit(a, 3);
    f.submit(b, 4);
    BOOST_TEST(f.write() == a.payload + b.payload);
}

BOOST_AUTO_TEST_CASE(noscript_sends_the_same_request_again_as_eval)
{
    fixture f;
    const command& a = f.keep(scripted(script_a));
    const command& get = f.keep(plain("GET"));
    f.submit(a, 0);
    f.write();
    BOOST_TEST(words(f.read(":1\r\n")) == "deliver park");
    // SCRIPT FLUSH meanwhile: the EVALSHA is refused.
    f.submit(a, 1);
    f.submit(get, 2);
    BOOST_TEST(f.write() == a.payload + get.payload);
    auto steps = f.read(noscript_reply + "$1\r\nv\r\n");
    BOOST_TEST(words(steps) == "resend deliver park");
    BOOST_TEST(steps[0].request.index == 1u);
    BOOST_TEST(steps[1].request.index == 2u);
    BOOST_TEST(f.mux.queued() == 1u);
    BOOST_TEST(f.write() == eval_of(a));
    BOOST_TEST(f.mux.begin_read());
    steps = f.read(":1\r\n");
    BOOST_TEST(words(steps) == "deliver park");
    BOOST_TEST(steps[0].request.index == 1u);
    // Loaded again by that EVAL.
    f.submit(a, 3);
    BOOST_TEST(f.write() == a.payload);
}

BOOST_AUTO_TEST_CASE(noscript_resends_a_given_up_request_too_and_then_drops_its_reply)
{
    // A release given up at its deadline was still meant to run.
    fixture f;
    const command& a = f.keep(scripted(script_a));
    f.submit(a, 0);
    f.write();
    f.read(":1\r\n");
    f.submit(a, 1);
    f.write();
    f.give_up(1);
    BOOST_TEST(words(f.read(noscript_reply)) == "resend park");
    BOOST_TEST(f.write() == eval_of(a));
    f.mux.begin_read();
    BOOST_TEST(words(f.read(":1\r\n")) == "drop park");
}

// Many requests through the FIFO in overlapping batches, as a busy link has them: each reply
// goes to its own request, in order, also across a NOSCRIPT that queues a request again
// behind those written after it.
BOOST_AUTO_TEST_CASE(replies_match_their_requests_across_many_overlapping_batches)
{
    fixture f;
    const command& get = f.keep(plain("GET"));
    const command& a = f.keep(scripted(script_a));
    std::uint32_t submitted = 0;
    std::vector<std::uint32_t> delivered;
    auto take = [&](const std::vector<reader_action>& steps) {
        for (const reader_action& s : steps) {
            if (s.what == step::deliver) {
                delivered.push_back(s.request.index);
            }
        }
    };
    for (int batch = 0; batch < 40; ++batch) {
        for (int k = 0; k < 7; ++k) {
            f.submit(get, submitted++);
        }
        f.write();
        std::string replies;
        for (int k = 0; k < 5; ++k) {
            replies += "$1\r\nv\r\n";
        }
        take(f.read(replies));
    }
    BOOST_TEST(f.mux.in_flight() == 80u);
    f.submit(a, submitted++);  // first use: goes as EVAL, which loads it
    f.submit(a, submitted++);
    f.write();
    std::string replies;
    for (int k = 0; k < 80; ++k) {
        replies += "$1\r\nv\r\n";
    }
    take(f.read(replies + ":1\r\n" + noscript_reply));
    BOOST_TEST(f.mux.queued() == 1u);  // the second, again as EVAL
    BOOST_TEST(f.write() == eval_of(a));
    f.mux.begin_read();
    take(f.read(":1\r\n"));
    BOOST_TEST(f.mux.in_flight() == 0u);
    BOOST_TEST_REQUIRE(delivered.size() == std::size_t{submitted});
    for (std::uint32_t i = 0; i < submitted; ++i) {
        BOOST_TEST(delivered[i] == i);
    }
}

BOOST_AUTO_TEST_CASE(an_error_reply_to_an_eval_makes_the_next_use_send_the_text_again)
{
    fixture f;
    const command& a = f.keep(scripted(script_a));
    f.submit(a, 0);
    BOOST_TEST(f.write() == eval_of(a));
    auto steps = f.read("-OOM command not allowed when used memory > 'maxmemory'.\r\n");
    BOOST_TEST(words(steps) == "deliver park");
    BOOST_TEST(steps[0].reply.is_error());
    f.submit(a, 1);
    BOOST_TEST(f.write() == eval_of(a));
}

BOOST_AUTO_TEST_CASE(an_error_reply_to_an_evalsha_other_than_noscript_keeps_the_script)
{
    fixture f;
    const command& a = f.keep(scripted(script_a));
    f.submit(a, 0);
    f.submit(a, 1);
    f.write();
    auto steps = f.read(":1\r\n-BUSY Redis is busy running a script.\r\n");
    BOOST_TEST(words(steps) == "deliver deliver park");
    f.submit(a, 2);
    BOOST_TEST(f.write() == a.payload);
}

BOOST_AUTO_TEST_CASE(a_fresh_socket_knows_no_script)
{
    fixture f;
    const command& a = f.keep(scripted(script_a));
    f.submit(a, 0);
    f.write();
    f.read(":1\r\n");
    f.mux.fail_all();
    f.mux.connected();
    f.submit(a, 1);
    BOOST_TEST(f.write() == eval_of(a));
}

// Behind ASKING (cluster_link after an ASK) the command's own reply is the second.
command with_asking(const command& c)
{
    command asking = c;
    std::string prefix;
    resp::append_command(prefix, {"ASKING"});
    asking.payload.insert(0, prefix);
    asking.script_at += static_cast<std::uint32_t>(prefix.size());
    asking.replies = 2;
    asking.own_reply = 1;
    return asking;
}

BOOST_AUTO_TEST_CASE(behind_asking_noscript_is_read_from_the_commands_own_reply)
{
    fixture f;
    const command& a = f.keep(with_asking(scripted(script_a)));
    f.submit(a, 0);
    f.write();
    f.read("+OK\r\n:1\r\n");
    f.submit(a, 1);
    BOOST_TEST(f.write() == a.payload);
    auto steps = f.read("+OK\r\n" + noscript_reply);
    BOOST_TEST(words(steps) == "resend park");
    BOOST_TEST(f.write() == eval_of(a));
}

BOOST_AUTO_TEST_CASE(behind_asking_an_error_of_asking_itself_is_not_the_commands)
{
    fixture f;
    const command& a = f.keep(with_asking(scripted(script_a)));
    f.submit(a, 0);
    BOOST_TEST(f.write() == eval_of(a));
    auto steps = f.read("-ERR unexpected\r\n:1\r\n");
    BOOST_TEST(words(steps) == "deliver park");
    BOOST_TEST(steps[0].reply.elements.size() == 2u);
    // The EVAL ran: the script stays known.
    f.submit(a, 1);
    BOOST_TEST(f.write() == a.payload);
}

BOOST_AUTO_TEST_CASE(own_reply_picks_the_commands_reply_among_several)
{
    const auto decode = [](std::string_view bytes) {
        resp::decoder d;
        d.feed(bytes.data(), bytes.size());
        return d.next().value();
    };
    const command one = plain("ROLE");
    const resp::reply role = decode(bulk_array({"master"}));
    BOOST_TEST(&own_reply(one, role) == &role);  // one reply, itself an array
    const command asking = with_asking(plain("SET"));
    const resp::reply both = decode("*2\r\n+OK\r\n-MOVED 1 h:1\r\n");
    BOOST_TEST(&own_reply(asking, both) == &both.elements[1]);
    const resp::reply refused = decode("-ERR\r\n");
    BOOST_TEST(&own_reply(asking, refused) == &refused);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(multiplexer_stuck)

BOOST_AUTO_TEST_CASE(a_server_looks_stuck_once_every_request_in_flight_was_given_up)
{
    fixture f;
    f.submit(f.keep(plain("SET")), 0);
    f.submit(f.keep(plain("SET")), 1);
    f.write();
    f.give_up(0);
    BOOST_TEST(!f.mux.looks_stuck());
    f.give_up(1);
    BOOST_TEST(f.mux.looks_stuck());
}

BOOST_AUTO_TEST_CASE(a_wanted_request_in_flight_keeps_the_server_from_looking_stuck)
{
    fixture f;
    f.submit(f.keep(plain("SET")), 0);
    f.submit(f.keep(plain("DEL")), 1);  // a clean-up, written behind
    f.write();
    f.give_up(0);
    BOOST_TEST(!f.mux.looks_stuck());
    f.give_up(1);
    BOOST_TEST(f.mux.looks_stuck());
}

BOOST_AUTO_TEST_CASE(nothing_in_flight_is_not_stuck)
{
    fixture f;
    f.submit(f.keep(plain("SET")), 0);  // queued, never written
    f.give_up(0);
    BOOST_TEST(!f.mux.looks_stuck());
}

BOOST_AUTO_TEST_CASE(a_reply_to_a_given_up_request_moves_the_stuck_scan_along)
{
    fixture f;
    for (std::uint32_t i = 0; i < 3; ++i) {
        f.submit(f.keep(plain("SET")), i);
    }
    f.write();
    f.give_up(0);
    f.give_up(1);
    BOOST_TEST(!f.mux.looks_stuck());
    BOOST_TEST(words(f.read("+OK\r\n")) == "drop read");
    f.give_up(2);
    BOOST_TEST(words(f.read("+OK\r\n")) == "drop read");
    BOOST_TEST(f.mux.looks_stuck());  // the one left, given up
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(multiplexer_silence)

BOOST_AUTO_TEST_CASE(a_server_that_answered_nothing_since_a_timeout_is_sent_nothing_new)
{
    fixture f;
    f.submit(f.keep(plain("SET")), 0);
    f.write();
    f.give_up(0);
    const std::uint64_t mark = f.mux.replies_read();
    // The clean-up queued in the same turn as the timeout still goes out, behind the SET.
    f.submit(f.keep(plain("DEL")), 1);
    BOOST_TEST(f.write() == plain("DEL").payload);
    BOOST_TEST(!f.mux.unresponsive());
    BOOST_TEST(f.mux.went_silent(mark));
    BOOST_TEST(f.mux.unresponsive());
    const command& get = f.keep(plain("GET"));
    BOOST_TEST(!f.mux.add(submission{.owner = f.owner, .index = 2, .cmd = &get}));
    BOOST_TEST(f.mux.queued() == 0u);
    // It answers again: requests go to it.
    BOOST_TEST(words(f.read("+OK\r\n")) == "drop read");
    BOOST_TEST(!f.mux.unresponsive());
    BOOST_TEST(f.mux.add(submission{.owner = f.owner, .index = 3, .cmd = &get}));
}

BOOST_AUTO_TEST_CASE(a_reply_after_the_timeout_means_the_server_is_not_silent)
{
    fixture f;
    f.submit(f.keep(plain("SET")), 0);
    f.submit(f.keep(plain("SET")), 1);
    f.write();
    f.give_up(0);
    const std::uint64_t mark = f.mux.replies_read();
    BOOST_TEST(words(f.read("+OK\r\n")) == "drop read");
    BOOST_TEST(!f.mux.went_silent(mark));
    BOOST_TEST(!f.mux.unresponsive());
}

BOOST_AUTO_TEST_CASE(a_new_socket_is_not_silent)
{
    fixture f;
    f.submit(f.keep(plain("SET")), 0);
    f.write();
    f.give_up(0);
    BOOST_TEST(f.mux.went_silent(f.mux.replies_read()));
    BOOST_TEST(f.mux.fail_all().empty());
    BOOST_TEST(!f.mux.unresponsive());
    f.mux.connected();
    f.submit(f.keep(plain("GET")), 1);
    f.write();
    BOOST_TEST(words(f.read("$-1\r\n")) == "deliver park");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(multiplexer_failures)

BOOST_AUTO_TEST_CASE(fail_all_returns_the_wanted_requests_in_flight_first_then_queued)
{
    fixture f;
    f.submit(f.keep(plain("SET")), 0);
    f.submit(f.keep(plain("SET")), 1);
    f.submit(f.keep(plain("SET")), 2);
    std::string batch;
    f.mux.prepare_write(batch);  // a write under way
    f.submit(f.keep(plain("SET")), 3);
    f.submit(f.keep(plain("SET")), 4);
    f.give_up(1);
    f.give_up(4);
    const auto wanted = f.mux.fail_all();
    BOOST_TEST(wanted.size() == 3u);
    BOOST_TEST(wanted[0].index == 0u);
    BOOST_TEST(wanted[1].index == 2u);
    BOOST_TEST(wanted[2].index == 3u);
    BOOST_TEST(f.mux.queued() == 0u);
    BOOST_TEST(f.mux.in_flight() == 0u);
    BOOST_TEST(!f.mux.socket_up());
    BOOST_TEST(!f.mux.writing());
    // Requests added now wait for the next socket.
    f.submit(f.keep(plain("GET")), 5);
    BOOST_TEST(f.write().empty());
    f.mux.connected();
    BOOST_TEST(f.write() == plain("GET").payload);
}

BOOST_AUTO_TEST_CASE(a_fresh_socket_starts_reading_from_its_own_bytes)
{
    fixture f;
    f.submit(f.keep(plain("GET")), 0);
    f.submit(f.keep(plain("GET")), 1);
    f.write();
    BOOST_TEST(!f.mux.heard_from_server());
    f.read("$-1\r\n$10\r\nhalf");  // the socket fails mid-reply
    BOOST_TEST(f.mux.heard_from_server());
    f.mux.fail_all();
    f.mux.connected();
    BOOST_TEST(!f.mux.heard_from_server());
    f.submit(f.keep(plain("GET")), 2);
    f.write();
    auto steps = f.read("$1\r\nv\r\n");
    BOOST_TEST(words(steps) == "deliver park");
    BOOST_TEST(steps[0].request.index == 2u);
    BOOST_TEST(steps[0].reply.text == "v");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(multiplexer_pubsub)

BOOST_AUTO_TEST_CASE(messages_are_pushed_between_replies_and_keep_the_reader_going)
{
    fixture f(socket_use::pubsub);
    const command& subscribe = f.keep(plain("SUBSCRIBE", "ch"));
    f.submit(subscribe, 0, request_kind::subscribe);
    f.write();
    BOOST_TEST(f.mux.begin_read());
    auto steps = f.read(confirmation("subscribe", "ch", 1));
    // Subscribed: the reader stays, with nothing in flight.
    BOOST_TEST(words(steps) == "deliver read");
    BOOST_TEST(steps[0].request.index == 0u);
    BOOST_TEST(f.mux.subscriptions() == 1);
    steps = f.read(bulk_array({"message", "ch", "released"}));
    BOOST_TEST(words(steps) == "push read");
    BOOST_TEST(steps[0].reply.elements[2].text == "released");
    // A PING's pong comes after a message sent before it.
    f.submit(f.keep(plain("PING", "")), 1);
    f.write();
    steps = f.read(bulk_array({"message", "ch", "v2"}) + bulk_array({"pong", ""}));
    BOOST_TEST(words(steps) == "push deliver read");
    BOOST_TEST(steps[1].request.index == 1u);
    BOOST_TEST(steps[1].reply.elements[0].text == "pong");
    // The last unsubscription parks the reader.
    f.submit(f.keep(plain("UNSUBSCRIBE", "ch")), 2, request_kind::unsubscribe);
    f.write();
    steps = f.read(confirmation("unsubscribe", "ch", 0));
    BOOST_TEST(words(steps) == "deliver park");
    BOOST_TEST(f.mux.subscriptions() == 0);
}

BOOST_AUTO_TEST_CASE(a_subscription_of_several_channels_is_answered_by_their_confirmations)
{
    fixture f(socket_use::pubsub);
    command both;
    resp::append_command(both.payload, {"SUBSCRIBE", "a", "b"});
    both.replies = 2;
    f.submit(f.keep(std::move(both)), 0, request_kind::subscribe);
    f.write();
    BOOST_TEST(words(f.read(confirmation("subscribe", "a", 1))) == "read");
    auto steps = f.read(confirmation("subscribe", "b", 2));
    BOOST_TEST(words(steps) == "deliver read");
    BOOST_TEST(steps[0].reply.elements.size() == 2u);
    BOOST_TEST(steps[0].reply.elements[1].elements[1].text == "b");
    BOOST_TEST(f.mux.subscriptions() == 2);
}

BOOST_AUTO_TEST_CASE(a_refused_subscription_is_answered_by_its_one_error)
{
    fixture f(socket_use::pubsub);
    command both;
    resp::append_command(both.payload, {"SSUBSCRIBE", "a", "b"});
    both.replies = 2;
    f.submit(f.keep(std::move(both)), 0, request_kind::subscribe);
    f.submit(f.keep(plain("PING", "")), 1);
    f.write();
    auto steps = f.read("-MOVED 15495 127.0.0.1:7002\r\n" + bulk_array({"pong", ""}));
    BOOST_TEST(words(steps) == "deliver deliver park");
    BOOST_TEST(steps[0].reply.is_error());
    BOOST_TEST(steps[1].request.index == 1u);
}

BOOST_AUTO_TEST_CASE(an_unasked_shard_unsubscription_is_pushed_and_counted)
{
    // A server whose slot moved drops its shard channels and says so.
    fixture f(socket_use::pubsub);
    f.submit(f.keep(plain("SSUBSCRIBE", "{k}a")), 0, request_kind::subscribe);
    f.submit(f.keep(plain("SSUBSCRIBE", "{k}b")), 1, request_kind::subscribe);
    f.write();
    auto steps =
        f.read(confirmation("ssubscribe", "{k}a", 1) + confirmation("ssubscribe", "{k}b", 2));
    BOOST_TEST(words(steps) == "deliver deliver read");
    steps = f.read(confirmation("sunsubscribe", "{k}a", 1));
    BOOST_TEST(words(steps) == "push read");
    BOOST_TEST(f.mux.subscriptions() == 1);
    // Also while another request waits for its reply.
    f.submit(f.keep(plain("PING", "")), 2);
    f.write();
    steps = f.read(confirmation("sunsubscribe", "{k}b", 0) + bulk_array({"pong", ""}));
    BOOST_TEST(words(steps) == "push deliver park");
    BOOST_TEST(f.mux.subscriptions() == 0);
}

BOOST_AUTO_TEST_CASE(a_subscription_nobody_asked_for_is_a_protocol_error)
{
    fixture f(socket_use::pubsub);
    f.submit(f.keep(plain("PING", "")), 0);
    f.write();
    auto steps = f.read(confirmation("subscribe", "x", 1));
    BOOST_TEST(words(steps) == "fail");
    BOOST_TEST((steps[0].error == boost::system::errc::protocol_error));
}

BOOST_AUTO_TEST_CASE(channel_and_shard_channel_counts_add_up)
{
    fixture f(socket_use::pubsub);
    f.submit(f.keep(plain("SUBSCRIBE", "a")), 0, request_kind::subscribe);
    f.submit(f.keep(plain("SSUBSCRIBE", "b")), 1, request_kind::subscribe);
    f.write();
    f.read(confirmation("subscribe", "a", 1) + confirmation("ssubscribe", "b", 1));
    BOOST_TEST(f.mux.subscriptions() == 2);
    f.submit(f.keep(plain("UNSUBSCRIBE", "a")), 2, request_kind::unsubscribe);
    f.write();
    BOOST_TEST(words(f.read(confirmation("unsubscribe", "a", 0))) == "deliver read");
    BOOST_TEST(f.mux.subscriptions() == 1);
}

BOOST_AUTO_TEST_CASE(a_new_socket_has_no_subscriptions)
{
    fixture f(socket_use::pubsub);
    f.submit(f.keep(plain("SUBSCRIBE", "a")), 0, request_kind::subscribe);
    f.write();
    f.read(confirmation("subscribe", "a", 1));
    f.mux.fail_all();
    f.mux.connected();
    BOOST_TEST(f.mux.subscriptions() == 0);
    BOOST_TEST(!f.mux.begin_read());
}

BOOST_AUTO_TEST_SUITE_END()
