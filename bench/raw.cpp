// SPDX-License-Identifier: BSL-1.0
#include "raw.hpp"

#include <redlock/config.hpp>
#include <redlock/node.hpp>
#include <redlock/report.hpp>

#include "node/connection.hpp"
#include "protocol/scripts.hpp"
#include "resp/resp.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <exception>
#include <memory>
#include <stdexcept>

namespace bench {
namespace {

namespace asio = boost::asio;
namespace rd = redlock::detail;
using namespace std::chrono_literals;

// As long as the library's owner values (16 random bytes, base64).
constexpr std::string_view owner_value = "bench-owner-value-0123==";
constexpr std::chrono::milliseconds expiry = 8000ms;  // the library's default expiry

// The library's own requests for one plain key: SET NX PX, and the compare-and-delete
// script (EVALSHA, sent as EVAL on its first use on a connection). The release does not
// publish: nobody waits in this scenario.
rd::request set_request(const std::string& key)
{
    const std::vector<std::string> keys{key};
    return rd::acquire_request({keys}, owner_value, expiry);
}

rd::request delete_request(const std::string& key)
{
    const std::vector<std::string> keys{key};
    return rd::release_request({keys}, owner_value, false);
}

// The client's side of a benchmark: one io_context run on this thread, the strand every
// connection works on, and the nodes with their connection settings (TLS included).
struct node_set
{
    explicit node_set(const std::vector<std::string>& urls)
    {
        redlock::config cfg;
        for (const auto& url : urls) {
            cfg.nodes.push_back(redlock::node::from_url(url));
        }
        nodes = cfg.nodes;
        settings = rd::make_connection_settings(cfg);
    }

    std::shared_ptr<rd::connection> connect(std::size_t i)
    {
        return std::make_shared<rd::connection>(strand, nodes.at(i), settings);
    }

    asio::io_context io{1};
    // The strand make_client_strand makes for an io_context, built directly: through its
    // type-erased argument g++ -O3 warns falsely (-Wmaybe-uninitialized) about the
    // thread_pool branch.
    asio::any_io_executor strand = asio::make_strand(io.get_executor());
    std::vector<redlock::node> nodes;
    rd::connection_settings settings;
};

void rethrow(std::exception_ptr e)
{
    if (e) {
        std::rethrow_exception(e);
    }
}

// Whether request `r`'s outcome is what the lock protocol hopes for (SET answered OK, the
// delete 1); otherwise what it was.
bool as_expected(const rd::request& r, const rd::exec_result& result, std::string& what)
{
    if (result.status != rd::exec_result::outcome::replied) {
        what = result.detail.empty() ? "no reply" : result.detail;
        return false;
    }
    rd::node_failure why;
    if (r.read(result.reply, owner_value, why) != redlock::node_status::ok) {
        if (why) {
            what = why.detail;
        } else if (result.reply.type == rd::resp::kind::integer) {
            what = std::to_string(result.reply.integer);
        } else {
            what = result.reply.text.empty() ? "an empty or nil reply" : result.reply.text;
        }
        return false;
    }
    return true;
}

asio::awaitable<void> sleep_for(clock::duration d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::deferred);
}

struct pump_shared
{
    bool stop = false;
    bool measuring = false;
    std::int64_t commands = 0;
    std::size_t running = 0;
    samples batch_latency;
    std::int64_t unexpected = 0;
    std::string first_unexpected;
};

// One connection's loop: submits a batch of requests (which the connection writes
// together), waits for every outcome, and goes on with the next batch, until told to stop
// at the end of a whole loop (every key set is also deleted).
struct pump final : rd::request_owner, std::enable_shared_from_this<pump>
{
    pump(std::shared_ptr<rd::connection> c, std::vector<rd::request> r, std::size_t per_batch,
         pump_shared& s, asio::any_io_executor ex)
        : conn(std::move(c)), requests(std::move(r)), batch(per_batch), sh(s), strand(std::move(ex))
    {
    }

    void send()
    {
        pending = batch;
        t0 = clock::now();
        // Held, so that the batch goes out in one write, as a pipeline of `batch` commands
        // (a request is otherwise written at once, and what follows it in the next write).
        conn->hold_writes();
        for (std::size_t i = 0; i < batch; ++i) {
            conn->submit(shared_from_this(), static_cast<std::uint32_t>(next + i),
                         requests[next + i].cmd);
        }
        conn->resume_writes();
    }

    void deliver(std::uint32_t index, rd::exec_result result) override
    {
        std::string what;
        if (!as_expected(requests[index], result, what) && sh.unexpected++ == 0) {
            sh.first_unexpected = what;
        }
        if (--pending > 0) {
            return;
        }
        if (sh.measuring) {
            sh.commands += static_cast<std::int64_t>(batch);
            sh.batch_latency.add(clock::now() - t0);
        }
        next = (next + batch) % requests.size();
        // The next batch from a fresh handler: this runs inside the connection's read.
        asio::post(strand, [self = shared_from_this()] { self->step(); });
    }

    bool given_up(std::uint32_t) const noexcept override { return false; }

    void step()
    {
        if (sh.stop && next == 0) {
            conn->close("benchmark done");
            --sh.running;
            return;
        }
        send();
    }

    std::shared_ptr<rd::connection> conn;
    std::vector<rd::request> requests;
    std::size_t batch;
    pump_shared& sh;
    asio::any_io_executor strand;
    std::size_t next = 0;
    std::size_t pending = 0;
    clock::time_point t0{};
};

// The latency rounds: one command submitted to `width` connections at once, the arrival of
// each outcome noted, the next round once all are in.
struct rounds final : rd::request_owner, std::enable_shared_from_this<rounds>
{
    rounds(std::vector<std::shared_ptr<rd::connection>> c, const std::string& key,
           asio::any_io_executor ex)
        : conns(std::move(c)),
          requests{set_request(key), delete_request(key)},
          quorum(conns.size() / 2 + 1),
          strand(ex),
          pause(ex)
    {
    }

    void send()
    {
        pending = width;
        arrivals.clear();
        t0 = clock::now();
        for (std::size_t i = 0; i < width; ++i) {
            conns[i]->submit(shared_from_this(), static_cast<std::uint32_t>(i),
                             requests[which].cmd);
        }
    }

    void deliver(std::uint32_t, rd::exec_result result) override
    {
        arrivals.push_back(clock::now() - t0);
        std::string what;
        if (!as_expected(requests[which], result, what) && first_unexpected.empty()) {
            first_unexpected = what;
        }
        if (--pending == 0) {
            asio::post(strand, [self = shared_from_this()] { self->replied(); });
        }
    }

    bool given_up(std::uint32_t) const noexcept override { return false; }

    void note(clock::duration all, clock::duration q)
    {
        switch (now) {
            case phase::one_node:
                (which == 0 ? f.node_set : f.node_delete).add(all);
                break;
            case phase::all_nodes:
                if (which == 0) {
                    f.round_set.add(all);
                    f.round_set_quorum.add(q);
                } else {
                    f.round_delete.add(all);
                }
                break;
            case phase::all_nodes_after_idle:
                if (which == 0) {
                    f.round_set_quorum_after_idle.add(q);
                }
                break;
        }
    }

    void replied()
    {
        const auto now_t = clock::now();
        if (now_t >= measure_from) {
            note(arrivals.back(), arrivals[std::min(quorum, arrivals.size()) - 1]);
        }
        which = 1 - which;
        if (which == 0 && now_t >= phase_end) {
            if (now == phase::all_nodes_after_idle || conns.size() == 1) {
                for (auto& c : conns) {
                    c->close("benchmark done");
                }
                return;
            }
            now = now == phase::one_node ? phase::all_nodes : phase::all_nodes_after_idle;
            width = conns.size();
            measure_from = now_t;  // the connections are warm already
            phase_end = now_t + third;
        }
        if (which == 0 && now == phase::all_nodes_after_idle) {
            pause.expires_after(idle_pause);
            pause.async_wait(
                [self = shared_from_this()](boost::system::error_code) { self->send(); });
            return;
        }
        send();
    }

    std::vector<std::shared_ptr<rd::connection>> conns;
    const rd::request requests[2];
    std::size_t quorum;
    asio::any_io_executor strand;
    asio::steady_timer pause;
    std::vector<clock::duration> arrivals;
    std::string first_unexpected;
    raw_latency_figures f;
    enum class phase { one_node, all_nodes, all_nodes_after_idle } now = phase::one_node;
    std::size_t width = 1;  // nodes in this phase: 1, then all
    std::size_t pending = 0;
    int which = 0;  // 0: SET, 1: delete
    clock::time_point t0{}, measure_from{}, phase_end{};
    clock::duration third{};
};

}  // namespace

std::string node_request(const std::string& url, std::initializer_list<std::string_view> args)
{
    node_set ns({url});
    auto conn = ns.connect(0);
    rd::command cmd;
    rd::resp::append_command(cmd.payload, args);
    rd::exec_result r;
    asio::co_spawn(
        ns.strand,
        [&]() -> asio::awaitable<void> {
            r = co_await execute(*conn, std::move(cmd), clock::now() + 5s);
            conn->close("request done");
        },
        rethrow);
    ns.io.run();
    const std::string what = conn->name() + " " + std::string(*args.begin()) + ": ";
    if (r.status != rd::exec_result::outcome::replied) {
        throw std::runtime_error(what + (r.detail.empty() ? "no reply" : r.detail));
    }
    if (r.reply.is_error()) {
        throw std::runtime_error(what + r.reply.text);
    }
    return r.reply.type == rd::resp::kind::integer ? std::to_string(r.reply.integer) : r.reply.text;
}

namespace {

// What one pump works on: the node it is connected to and its keys.
struct pump_plan
{
    std::size_t node;
    std::vector<std::string> keys;
};

// One connection per plan, all driven at once, each submitting batches of `depth` requests on
// its keys; the figures but the cycles.
raw_throughput_figures run_pumps(const std::vector<std::string>& urls,
                                 const std::vector<pump_plan>& plans, int depth,
                                 clock::duration warmup, clock::duration measure,
                                 const std::vector<int>& server_pids)
{
    if (depth != 1 && depth % 2 != 0) {
        throw std::invalid_argument("raw pipeline depth must be 1 or even");
    }
    node_set ns(urls);
    pump_shared sh;
    std::vector<std::shared_ptr<pump>> pumps;
    for (const auto& plan : plans) {
        std::vector<rd::request> requests;
        for (const auto& key : plan.keys) {
            requests.push_back(set_request(key));
            requests.push_back(delete_request(key));
        }
        const std::size_t batch = depth == 1 ? 1 : requests.size();
        pumps.push_back(std::make_shared<pump>(ns.connect(plan.node), std::move(requests), batch,
                                               sh, ns.strand));
    }

    raw_throughput_figures f;
    f.depth = depth;
    cpu_meter cpu(server_pids);
    clock::time_point t0, t1;
    asio::co_spawn(
        ns.strand,
        [&]() -> asio::awaitable<void> {
            sh.running = pumps.size();
            for (auto& p : pumps) {
                p->send();
            }
            co_await sleep_for(warmup);
            sh.measuring = true;
            t0 = clock::now();
            cpu.start();
            co_await sleep_for(measure);
            sh.measuring = false;
            t1 = clock::now();
            cpu.stop();
            sh.stop = true;
        },
        rethrow);
    // Returns once every pump has finished its loop and closed its connection.
    ns.io.run();
    pumps.clear();

    f.seconds = seconds(t1 - t0);
    f.commands = sh.commands;
    f.commands_per_s = static_cast<double>(f.commands) / f.seconds;
    f.batch_latency = std::move(sh.batch_latency);
    f.client_cores = cpu.client_cores();
    f.servers_cores = cpu.servers_cores();
    f.others_cores = cpu.others_cores();
    f.replies_as_expected = sh.unexpected == 0;
    f.first_unexpected = sh.first_unexpected;
    return f;
}

// Keys for a batch of `depth` requests: depth/2 keys, SET then delete each (depth 1
// alternates the two on one key).
std::size_t keys_per_batch(int depth)
{
    return static_cast<std::size_t>(std::max(depth / 2, 1));
}

}  // namespace

raw_throughput_figures raw_throughput(const std::vector<std::string>& urls, int depth,
                                      int connections_per_node, clock::duration warmup,
                                      clock::duration measure, const std::string& key_prefix,
                                      const std::vector<int>& server_pids)
{
    std::vector<pump_plan> plans;
    for (std::size_t n = 0; n < urls.size(); ++n) {
        for (int c = 0; c < connections_per_node; ++c) {
            const std::string key_base =
                key_prefix + ":" + std::to_string(n) + ":" + std::to_string(c) + ":";
            pump_plan plan{n, {}};
            for (std::size_t k = 0; k < keys_per_batch(depth); ++k) {
                plan.keys.push_back(key_base + std::to_string(k));
            }
            plans.push_back(std::move(plan));
        }
    }
    auto f = run_pumps(urls, plans, depth, warmup, measure, server_pids);
    f.connections_per_node = connections_per_node;
    f.cycles_per_s = f.commands_per_s / (2.0 * static_cast<double>(urls.size()));
    return f;
}

raw_throughput_figures raw_throughput_on_keys(const std::vector<std::string>& urls,
                                              const std::vector<std::vector<std::string>>& keys,
                                              int depth, clock::duration warmup,
                                              clock::duration measure,
                                              const std::vector<int>& server_pids)
{
    if (keys.size() != urls.size()) {
        throw std::invalid_argument("raw_throughput_on_keys: one key list per node");
    }
    std::vector<pump_plan> plans;
    for (std::size_t n = 0; n < urls.size(); ++n) {
        if (keys[n].size() < keys_per_batch(depth)) {
            throw std::invalid_argument("raw_throughput_on_keys: too few keys for the depth");
        }
        plans.push_back({n,
                         {keys[n].begin(),
                          keys[n].begin() + static_cast<std::ptrdiff_t>(keys_per_batch(depth))}});
    }
    auto f = run_pumps(urls, plans, depth, warmup, measure, server_pids);
    f.connections_per_node = 1;
    f.cycles_per_s = f.commands_per_s / 2.0;
    return f;
}

raw_latency_figures raw_latency(const std::vector<std::string>& urls, clock::duration warmup,
                                clock::duration measure, const std::string& key_prefix)
{
    node_set ns(urls);
    std::vector<std::shared_ptr<rd::connection>> conns;
    for (std::size_t n = 0; n < urls.size(); ++n) {
        conns.push_back(ns.connect(n));
    }
    auto r = std::make_shared<rounds>(std::move(conns), key_prefix + ":lat", ns.strand);
    r->third = measure / 3;
    const auto start = clock::now();
    r->measure_from = start + warmup;
    r->phase_end = start + warmup + r->third;
    // Every connection up first (a PING each), so that no round includes a connect.
    asio::co_spawn(
        ns.strand,
        [&]() -> asio::awaitable<void> {
            for (auto& c : r->conns) {
                rd::command ping;
                rd::resp::append_command(ping.payload, {"PING"});
                const auto pong = co_await execute(*c, std::move(ping), clock::now() + 5s);
                if (pong.status != rd::exec_result::outcome::replied || pong.reply.is_error()) {
                    throw std::runtime_error(
                        "raw latency: PING to " + c->name() + ": " +
                        (pong.reply.is_error() ? pong.reply.text : pong.detail));
                }
            }
            r->send();
        },
        rethrow);
    ns.io.run();
    if (!r->first_unexpected.empty()) {
        throw std::runtime_error("raw latency: unexpected reply " + r->first_unexpected);
    }
    return std::move(r->f);
}

}  // namespace bench
