// SPDX-License-Identifier: BSL-1.0
// The pure parts of the read-write lock: its options, how long a waiting writer's intent
// lasts, and the requests of each mode.

#include "lock/rw_rules.hpp"
#include "lock/validity.hpp"
#include "protocol/key_slot.hpp"
#include "protocol/key_space.hpp"
#include "protocol/script_table.hpp"
#include "protocol/scripts.hpp"
#include "resp/resp.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::detail;

namespace {

// The arguments of one encoded command (a RESP array of bulk strings).
std::vector<std::string> words(const std::string& wire)
{
    resp::decoder d;
    d.feed(wire.data(), wire.size());
    const auto r = d.next();
    BOOST_TEST_REQUIRE(r.has_value());
    std::vector<std::string> out;
    for (const auto& e : r->elements) {
        out.push_back(e.text);
    }
    return out;
}

const std::vector<std::string> cache_key = {"cache:{prices}"};

lock_shape rw_shape(const kind_scripts& mode, bool fencing = false, bool in_cluster = false)
{
    return lock_shape{
        .keys = cache_key, .fencing = fencing, .in_cluster = in_cluster, .scripts = &mode};
}

// EVALSHA sha numkeys keys... args...: the keys and the arguments after them.
struct script_call
{
    std::vector<std::string> keys;
    std::vector<std::string> args;
};

script_call call_of(const request& r, script_id expected)
{
    BOOST_TEST(r.cmd.script == &script_of(expected));
    const auto all = words(r.cmd.payload);
    BOOST_TEST_REQUIRE(all.size() >= 3u);
    BOOST_TEST(all[0] == "EVALSHA");
    const auto n = static_cast<std::size_t>(std::stoul(all[2]));
    return {{all.begin() + 3, all.begin() + 3 + static_cast<std::ptrdiff_t>(n)},
            {all.begin() + 3 + static_cast<std::ptrdiff_t>(n), all.end()}};
}

using strings = std::vector<std::string>;

}  // namespace

BOOST_AUTO_TEST_SUITE(rw_mutex_pure)

BOOST_AUTO_TEST_CASE(options_that_an_entry_cannot_have_are_refused)
{
    redlock::options o;
    BOOST_TEST(rw_problem(o).empty());
    o.fencing = true;  // for writers
    BOOST_TEST(rw_problem(o).empty());
    o.reentrant = true;
    BOOST_TEST(rw_problem(o).find("options.reentrant") == 0u);
    o.reentrant = false;
    o.set_nx_on_extend = true;
    BOOST_TEST(rw_problem(o).find("options.set_nx_on_extend") == 0u);
    o.set_nx_on_extend = false;
    // The fair queue orders a mutex's waiters: a read-write lock would ignore it.
    o.fair = true;
    BOOST_TEST(rw_problem(o).find("options.fair") == 0u);
}

BOOST_AUTO_TEST_CASE(a_writers_intent_outlasts_its_pause_and_four_rounds)
{
    // The defaults: an 8 s expiry, a per-node deadline of 400 ms, a pause of up to 250 ms.
    const auto per_node = node_timeout(8000ms, 0.05);
    BOOST_TEST(writer_intent_expiry(250ms, per_node).count() == 1850);
    BOOST_TEST(writer_intent_expiry(0ms, per_node).count() == 1600);
    // A per-node deadline of a fraction of a millisecond rounds up, and a negative delay
    // (a user's function) counts as none.
    BOOST_TEST(writer_intent_expiry(-5ms, std::chrono::microseconds(1500)).count() == 6);
    // It grows with the pause, so that the next attempt refreshes it before it ends.
    BOOST_TEST(writer_intent_expiry(5000ms, per_node) > 5000ms);
}

BOOST_AUTO_TEST_CASE(each_mode_acquires_with_its_entry_and_a_writer_asks_for_its_intent)
{
    const auto reader =
        call_of(acquire_request(rw_shape(reader_scripts), "v", 900ms), script_id::rw_acquire);
    BOOST_TEST(reader.keys == cache_key, boost::test_tools::per_element());
    BOOST_TEST(reader.args == (strings{"v", "900", "r", "0"}), boost::test_tools::per_element());

    const auto waiting = call_of(acquire_request(rw_shape(writer_scripts), "w", 900ms, 1850ms),
                                 script_id::rw_acquire);
    BOOST_TEST(waiting.args == (strings{"w", "900", "w", "1850"}),
               boost::test_tools::per_element());

    const auto trying =
        call_of(acquire_request(rw_shape(writer_scripts), "w", 900ms), script_id::rw_acquire);
    BOOST_TEST(trying.args.at(3) == "0");  // a single attempt records no intent
    BOOST_TEST(acquire_request(rw_shape(reader_scripts), "v", 900ms).read == &read_script_reply);
}

BOOST_AUTO_TEST_CASE(only_a_fenced_writer_bumps_the_counter_in_the_keys_slot)
{
    const request writer = acquire_request(rw_shape(writer_scripts, true, true), "w", 900ms);
    const auto w = call_of(writer, script_id::rw_acquire);
    BOOST_TEST_REQUIRE(w.keys.size() == 2u);
    BOOST_TEST(w.keys[1] == fence_key("", cache_key[0], true));
    BOOST_TEST(key_slot(w.keys[1]) == key_slot(w.keys[0]));
    BOOST_TEST(writer.read == &read_fenced_acquire_reply);

    // Readers hold together: no token orders them.
    const request reader = acquire_request(rw_shape(reader_scripts, true, true), "r", 900ms);
    BOOST_TEST(call_of(reader, script_id::rw_acquire).keys.size() == 1u);
    BOOST_TEST(reader.read == &read_script_reply);
    BOOST_TEST(cluster_key_problem(rw_shape(writer_scripts, true, true)).empty());
}

BOOST_AUTO_TEST_CASE(a_release_names_its_mode_and_a_writer_withdraws_its_intent_unless_it_waits_on)
{
    const auto reader =
        call_of(release_request(rw_shape(reader_scripts), "r", false), script_id::rw_release);
    BOOST_TEST(reader.args == (strings{"r", "r", "1"}), boost::test_tools::per_element());

    const auto writer =
        call_of(release_request(rw_shape(writer_scripts), "w", true), script_id::rw_release);
    BOOST_TEST_REQUIRE(writer.args.size() == 5u);
    BOOST_TEST((strings{writer.args.begin(), writer.args.begin() + 3}) == (strings{"w", "w", "1"}),
               boost::test_tools::per_element());
    BOOST_TEST(writer.args[3] == "PUBLISH");
    BOOST_TEST(writer.args[4] == release_channel("", cache_key[0]));

    // Between the attempts of a writer that waits, its clean-up keeps the intent.
    const auto clean_up =
        call_of(clean_up_request(rw_shape(writer_scripts), {.value = "w"}), script_id::rw_release);
    BOOST_TEST(clean_up.args.at(2) == "0");
}

BOOST_AUTO_TEST_CASE(check_and_extend_touch_only_the_entry_of_their_mode)
{
    for (const kind_scripts* kind : {&reader_scripts, &writer_scripts}) {
        const std::string mode = kind == &reader_scripts ? "r" : "w";
        const auto check = call_of(check_request(rw_shape(*kind), "v"), script_id::rw_check_extend);
        BOOST_TEST(check.args == (strings{"v", mode}), boost::test_tools::per_element());
        const auto extend =
            call_of(extend_request(rw_shape(*kind), "v", 700ms, false), script_id::rw_check_extend);
        BOOST_TEST(extend.args == (strings{"v", mode, "700"}), boost::test_tools::per_element());
    }
}

BOOST_AUTO_TEST_CASE(the_scripts_are_rows_of_the_table)
{
    BOOST_TEST(script_of(script_id::rw_acquire).name == "rw_acquire");
    BOOST_TEST(!script_of(script_id::rw_acquire).keys.has_value());  // 1, or 2 when fenced
    BOOST_TEST(script_of(script_id::rw_release).keys.value_or(0) == 1u);
    BOOST_TEST(script_of(script_id::rw_check_extend).keys.value_or(0) == 1u);
    // Expiries are the servers' own time.
    BOOST_TEST(script_of(script_id::rw_acquire).text.find("TIME") != std::string_view::npos);
}

BOOST_AUTO_TEST_SUITE_END()
