// SPDX-License-Identifier: BSL-1.0
// The pure parts of the semaphore: its quorum, its requests and replies, its options, and
// the acquire's decision on a node that names another number of permits.

#include "lock/acquire_fsm.hpp"
#include "lock/semaphore_rules.hpp"
#include "protocol/key_slot.hpp"
#include "protocol/key_space.hpp"
#include "protocol/script_table.hpp"
#include "protocol/scripts.hpp"
#include "quorum/tally.hpp"
#include "resp/resp.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using redlock::node_status;
using namespace redlock::detail;

namespace {

// Whether `holders` holders can each be granted by `q` distinct nodes of `n` when each node
// admits at most `permits` holders: a search over every placement, holder by holder, each
// taking a set of q nodes no smaller (as a bitmask) than the previous holder's, so that each
// multiset of sets is tried once.
bool placement_exists(unsigned n, unsigned permits, unsigned q, unsigned holders,
                      std::vector<unsigned>& load, unsigned from = 0)
{
    if (holders == 0) {
        return true;
    }
    for (unsigned set = from; set < (1u << n); ++set) {
        if (static_cast<unsigned>(__builtin_popcount(set)) != q) {
            continue;
        }
        bool fits = true;
        for (unsigned i = 0; i < n; ++i) {
            fits = fits && (!(set >> i & 1u) || load[i] < permits);
        }
        if (!fits) {
            continue;
        }
        for (unsigned i = 0; i < n; ++i) {
            load[i] += set >> i & 1u;
        }
        const bool found = placement_exists(n, permits, q, holders - 1, load, set);
        for (unsigned i = 0; i < n; ++i) {
            load[i] -= set >> i & 1u;
        }
        if (found) {
            return true;
        }
    }
    return false;
}

bool extra_holder_fits(unsigned n, unsigned permits, unsigned q)
{
    std::vector<unsigned> load(n, 0);
    return placement_exists(n, permits, q, permits + 1, load);
}

// The arguments of one encoded command (a RESP array of bulk strings).
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

resp::reply integer(std::int64_t n)
{
    return resp::reply{.type = resp::kind::integer, .integer = n, .text = {}, .elements = {}};
}

resp::reply array(std::vector<resp::reply> elements)
{
    return resp::reply{.type = resp::kind::array, .integer = 0, .text = {}, .elements = elements};
}

const std::vector<std::string> gpu_key = {"jobs:gpu"};

lock_shape semaphore_shape(const std::vector<std::string>& keys, std::size_t permits,
                           bool in_cluster = false)
{
    return lock_shape{
        .keys = keys, .in_cluster = in_cluster, .scripts = &semaphore_scripts, .permits = permits};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(semaphore_pure)

BOOST_AUTO_TEST_CASE(the_quorum_follows_the_formula)
{
    // One permit is a mutex: a majority.
    for (std::size_t n = 1; n <= 9; ++n) {
        BOOST_TEST(semaphore_quorum(n, 1) == quorum_of(n), "n = " << n);
    }
    BOOST_TEST(semaphore_quorum(1, 7) == 1u);  // one server grants alone
    BOOST_TEST(semaphore_quorum(3, 2) == 3u);  // the peers' majority (2) lets 3 holders in
    BOOST_TEST(semaphore_quorum(5, 2) == 4u);
    BOOST_TEST(semaphore_quorum(5, 3) == 4u);
    BOOST_TEST(semaphore_quorum(5, 4) == 5u);  // L >= N - 1: every node
    BOOST_TEST(semaphore_quorum(5, 100) == 5u);
    BOOST_TEST(semaphore_quorum(7, 2) == 5u);
}

BOOST_AUTO_TEST_CASE(the_quorum_is_the_least_that_keeps_an_extra_holder_out)
{
    for (unsigned n = 1; n <= 6; ++n) {
        for (unsigned permits = 1; permits <= 4; ++permits) {
            const auto q = static_cast<unsigned>(semaphore_quorum(n, permits));
            BOOST_TEST_CONTEXT("n = " << n << ", permits = " << permits << ", q = " << q)
            {
                BOOST_TEST(q >= quorum_of(n));  // never below a majority
                BOOST_TEST(q <= n);
                BOOST_TEST(!extra_holder_fits(n, permits, q));
                BOOST_TEST(extra_holder_fits(n, permits, q - 1));
                BOOST_TEST((permits + 1) * q > n * permits);
                BOOST_TEST((permits + 1) * (q - 1) <= n * permits);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(a_tally_counts_towards_the_quorum_it_is_given)
{
    tally t{.nodes = 5, .need = 4, .ok = 3};
    BOOST_TEST(t.quorum() == 4u);
    BOOST_TEST(!t.reached());
    t.add(node_status::ok);
    BOOST_TEST(t.reached());
    const tally full{.nodes = 5, .need = 4, .ok = 3, .taken = 2};
    BOOST_TEST(full.impossible());
    BOOST_TEST(decided(full, stop_rule::outcome_known));
    // Without `need`, a majority.
    BOOST_TEST((tally{.nodes = 5, .ok = 3}.reached()));
}

BOOST_AUTO_TEST_CASE(the_limit_sits_beside_the_holders_in_their_slot)
{
    BOOST_TEST(limit_key("", "jobs:gpu") == "redlock:limit:jobs:gpu");
    BOOST_TEST(limit_key("app:", "app:jobs:gpu") == "app:redlock:limit:jobs:gpu");
    const std::string in_slot = limit_key("", "jobs:gpu", true);
    BOOST_TEST(key_slot(in_slot) == key_slot("jobs:gpu"));
    BOOST_TEST(limit_key("", "{jobs}:gpu", true) == "redlock:limit:{jobs}:gpu");
    // A '}' outside any hash tag leaves no name in the key's slot: refused on a cluster.
    const std::vector<std::string> odd = {"jobs}gpu"};
    BOOST_TEST(!cluster_key_problem(semaphore_shape(odd, 2, true)).empty());
    BOOST_TEST(cluster_key_problem(semaphore_shape(gpu_key, 2, true)).empty());
}

BOOST_AUTO_TEST_CASE(requests_name_both_keys_and_pass_the_permits)
{
    const lock_shape shape = semaphore_shape(gpu_key, 3);
    const request acquire = acquire_request(shape, "owner", 700ms);
    BOOST_TEST(acquire.cmd.script == &script_of(script_id::semaphore_acquire));
    BOOST_TEST(acquire.read == &read_semaphore_acquire_reply);
    const std::vector<std::string> expected = {
        "EVAL",
        std::string(script_of(script_id::semaphore_acquire).text),
        "2",
        "jobs:gpu",
        "redlock:limit:jobs:gpu",
        "owner",
        "700",
        "3"};
    BOOST_TEST(args_of(eval_form(acquire.cmd)) == expected, boost::test_tools::per_element());
    BOOST_TEST((slot_of(acquire.cmd) == key_slot("jobs:gpu")));

    const auto release = args_of(eval_form(release_request(shape, "owner", true).cmd));
    BOOST_TEST(release.at(1) == script_of(script_id::semaphore_release).text);
    BOOST_TEST(release.size() == 8u);
    BOOST_TEST(release.at(6) == "PUBLISH");
    BOOST_TEST(release.at(7) == release_channel("", "jobs:gpu"));

    const auto extend = args_of(eval_form(extend_request(shape, "owner", 900ms, false).cmd));
    const auto check = args_of(eval_form(check_request(shape, "owner").cmd));
    BOOST_TEST(extend.at(1) == script_of(script_id::semaphore_check_extend).text);
    BOOST_TEST(check.at(1) == extend.at(1));  // a check is the extend without an expiry
    BOOST_TEST(extend.size() == 7u);
    BOOST_TEST(extend.back() == "900");
    BOOST_TEST(check.size() == 6u);
    // Expiries are the server's: the scripts read its clock.
    BOOST_TEST(extend.at(1).find("TIME") != std::string::npos);
    BOOST_TEST(args_of(eval_form(acquire.cmd)).at(1).find("TIME") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(acquire_replies_grant_refuse_or_name_both_limits)
{
    node_failure why;
    BOOST_TEST((read_semaphore_acquire_reply(integer(1), "v", why) == node_status::ok));
    BOOST_TEST((read_semaphore_acquire_reply(integer(-1), "v", why) == node_status::taken));
    BOOST_TEST(!why);
    const resp::reply mismatch = array({integer(-2), integer(2), integer(5)});
    BOOST_TEST((read_semaphore_acquire_reply(mismatch, "v", why) == node_status::error));
    BOOST_TEST((why.code == redlock::node_errc::permits_mismatch));
    BOOST_TEST(why.detail.find("use 2 permits, this client 5") != std::string::npos, why.detail);
    why = {};
    for (const resp::reply& r : {array({integer(-2), integer(2)}),
                                 array({integer(-3), integer(2), integer(5)}), integer(7)}) {
        BOOST_TEST((read_semaphore_acquire_reply(r, "v", why) == node_status::error));
        BOOST_TEST((why.code == redlock::node_errc::unexpected_reply));
        why = {};
    }
}

BOOST_AUTO_TEST_CASE(options_a_permit_cannot_have)
{
    BOOST_TEST(semaphore_problem({}, 1).empty());
    BOOST_TEST(semaphore_problem({}, 1000).empty());
    BOOST_TEST(semaphore_problem({}, 0).find("at least 1 permit (got 0)") != std::string::npos);
    BOOST_TEST(semaphore_problem({}, -3).find("got -3") != std::string::npos);
    BOOST_TEST(semaphore_problem({.reentrant = true}, 2).find("reentrant") != std::string::npos);
    BOOST_TEST(semaphore_problem({.fencing = true}, 2).find("fencing") != std::string::npos);
    BOOST_TEST(semaphore_problem({.set_nx_on_extend = true}, 2).find("set_nx_on_extend") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_node_with_other_permits_ends_the_acquire_after_its_clean_up)
{
    for (bool quorum : {false, true}) {
        acquire_fsm fsm(acquire_rules{.tries = 5});
        BOOST_TEST((fsm.start(false).step == acquire_step::attempt));
        // Even with a quorum of the other nodes: the holders disagree on the limit.
        const attempt_result r{.quorum_with_validity = quorum, .invalid_use = true};
        BOOST_TEST((fsm.attempted(r, false).step == acquire_step::clean_up));
        const auto done = fsm.cleaned_up(false, false);
        BOOST_TEST((done.step == acquire_step::complete));
        BOOST_TEST((done.ec == redlock::error::invalid_argument));
    }
}

BOOST_AUTO_TEST_SUITE_END()
