#include "raw.hpp"

#include <redlock/node.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/system_error.hpp>

#include <array>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>

namespace bench {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// The library's compare-and-delete script, byte for byte (src/scripts.cpp), so that both
// run the same Lua under the same SHA-1.
constexpr std::string_view release_script = R"lua(
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then return redis.call('DEL', KEYS[1]) end
if v == false then return 0 end
return -1
)lua";

// As long as the library's owner values (16 random bytes, base64).
constexpr std::string_view owner_value = "bench-owner-value-0123==";
constexpr std::string_view expiry_ms = "8000";  // the library's default expiry

std::string encode(std::initializer_list<std::string_view> args)
{
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (auto a : args) {
        out += "$" + std::to_string(a.size()) + "\r\n";
        out += a;
        out += "\r\n";
    }
    return out;
}

std::string set_command(std::string_view key)
{
    return encode({"SET", key, owner_value, "NX", "PX", expiry_ms});
}

std::string delete_command(std::string_view key, std::string_view sha)
{
    return encode({"EVALSHA", sha, "1", key, owner_value});
}

// Finds whole replies in a byte stream and counts them by kind. Enough RESP2 for what the
// lock commands answer (and arrays, for completeness).
class reply_scanner
{
  public:
    /// Takes bytes; returns how many top-level replies they completed.
    std::size_t feed(const char* data, std::size_t n)
    {
        buf_.append(data, n);
        std::size_t done = 0;
        std::size_t pos = 0;
        while (true) {
            const std::size_t end = scan(pos, 0);
            if (end == npos) {
                break;
            }
            classify(pos, end);
            pos = end;
            ++done;
        }
        buf_.erase(0, pos);
        return done;
    }

    /// The text of the last complete reply (without type byte and CRLF framing).
    const std::string& last_text() const { return last_text_; }
    char last_type() const { return last_type_; }

    std::int64_t ok = 0;       // +OK
    std::int64_t deleted = 0;  // :1
    std::int64_t unexpected = 0;
    std::string first_unexpected;

  private:
    static constexpr std::size_t npos = std::string::npos;

    // The end of the reply that starts at `p`, or npos when it is not complete yet.
    std::size_t scan(std::size_t p, int nesting) const
    {
        if (p >= buf_.size()) {
            return npos;
        }
        const std::size_t eol = buf_.find("\r\n", p + 1);
        if (eol == npos) {
            return npos;
        }
        const long long len = std::strtoll(buf_.c_str() + p + 1, nullptr, 10);
        switch (buf_[p]) {
            case '+':
            case '-':
            case ':':
                return eol + 2;
            case '$':
                if (len < 0) {
                    return eol + 2;
                }
                return buf_.size() >= eol + 2 + static_cast<std::size_t>(len) + 2
                           ? eol + 2 + static_cast<std::size_t>(len) + 2
                           : npos;
            case '*': {
                if (nesting > 8) {
                    throw std::runtime_error("raw sender: reply nested too deeply");
                }
                std::size_t q = eol + 2;
                for (long long i = 0; i < len; ++i) {
                    q = scan(q, nesting + 1);
                    if (q == npos) {
                        return npos;
                    }
                }
                return q;
            }
            default:
                throw std::runtime_error("raw sender: not a RESP reply: '" +
                                         buf_.substr(p, std::min<std::size_t>(40, eol - p)) + "'");
        }
    }

    void classify(std::size_t p, std::size_t end)
    {
        const std::size_t eol = buf_.find("\r\n", p + 1);
        last_type_ = buf_[p];
        if (last_type_ == '$') {
            const std::size_t body = eol + 2;
            last_text_.assign(buf_, body, end >= body + 2 ? end - body - 2 : 0);
        } else {
            last_text_.assign(buf_, p + 1, eol - p - 1);
        }
        if (last_type_ == '+' && last_text_ == "OK") {
            ++ok;
        } else if (last_type_ == ':' && last_text_ == "1") {
            ++deleted;
        } else {
            if (unexpected++ == 0) {
                first_unexpected = std::string(1, last_type_) + last_text_;
            }
        }
    }

    std::string buf_;
    std::string last_text_;
    char last_type_ = 0;
};

tcp::socket connect_blocking(asio::io_context& io, const raw_node& n)
{
    tcp::resolver resolver(io);
    tcp::socket s(io);
    boost::system::error_code ec;
    asio::connect(s, resolver.resolve(n.host, std::to_string(n.port), ec), ec);
    if (ec) {
        throw std::runtime_error("raw sender: connect to " + n.host + ":" + std::to_string(n.port) +
                                 ": " + ec.message());
    }
    s.set_option(tcp::no_delay(true));
    auto handshake = [&](const std::string& cmd, std::string_view what) {
        asio::write(s, asio::buffer(cmd));
        reply_scanner scan;
        char buf[512];
        while (scan.feed(buf, s.read_some(asio::buffer(buf))) == 0) {
        }
        if (scan.last_type() == '-') {
            throw std::runtime_error(std::string(what) + " on " + n.host + ":" +
                                     std::to_string(n.port) + " failed: " + scan.last_text());
        }
    };
    if (!n.password.empty()) {
        handshake(n.username.empty() ? encode({"AUTH", n.password})
                                     : encode({"AUTH", n.username, n.password}),
                  "AUTH");
    }
    if (n.db != 0) {
        handshake(encode({"SELECT", std::to_string(n.db)}), "SELECT");
    }
    return s;
}

// Reads until `want` more replies have been completed.
asio::awaitable<void> read_replies(tcp::socket& s, reply_scanner& scan, std::vector<char>& buf,
                                   std::size_t want)
{
    std::size_t got = 0;
    while (got < want) {
        const std::size_t n = co_await s.async_read_some(asio::buffer(buf), asio::deferred);
        got += scan.feed(buf.data(), n);
    }
}

void rethrow(std::exception_ptr e)
{
    if (e) {
        std::rethrow_exception(e);
    }
}

// One step of a connection's loop: bytes to write and how many replies they ask for.
struct step
{
    std::string bytes;
    std::size_t replies = 0;
};

struct pump_shared
{
    explicit pump_shared(asio::io_context& io) : done(io, clock::time_point::max()) {}
    bool stop = false;
    bool measuring = false;
    std::int64_t commands = 0;
    std::size_t running = 0;
    samples batch_latency;
    asio::steady_timer done;
};

asio::awaitable<void> pump(tcp::socket& s, std::vector<step> steps, pump_shared& sh,
                           reply_scanner& scan)
{
    std::vector<char> buf(64 * 1024);
    // A whole loop of steps at a time: every key set is also deleted before stopping.
    while (!sh.stop) {
        for (const step& st : steps) {
            const auto t0 = clock::now();
            co_await asio::async_write(s, asio::buffer(st.bytes), asio::deferred);
            co_await read_replies(s, scan, buf, st.replies);
            if (sh.measuring) {
                sh.commands += static_cast<std::int64_t>(st.replies);
                sh.batch_latency.add(clock::now() - t0);
            }
        }
    }
    if (--sh.running == 0) {
        sh.done.cancel();
    }
}

asio::awaitable<void> sleep_for(clock::duration d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::deferred);
}

}  // namespace

raw_node raw_node_from_url(const std::string& url)
{
    const redlock::node n = redlock::node::from_url(url);
    if (!n.unix_path.empty() || n.tls) {
        throw std::runtime_error("the raw sender (scenario server) speaks plain TCP only, not " +
                                 url);
    }
    return raw_node{n.host, n.port, n.username, n.password, n.db};
}

std::string raw_request(const raw_node& n, std::initializer_list<std::string_view> args)
{
    asio::io_context io;
    tcp::socket s = connect_blocking(io, n);
    asio::write(s, asio::buffer(encode(args)));
    reply_scanner scan;
    char buf[4096];
    while (scan.feed(buf, s.read_some(asio::buffer(buf))) == 0) {
    }
    if (scan.last_type() == '-') {
        throw std::runtime_error(n.host + ":" + std::to_string(n.port) + " " +
                                 std::string(*args.begin()) + ": " + scan.last_text());
    }
    return scan.last_text();
}

std::string load_release_script(const std::vector<raw_node>& nodes)
{
    std::string sha;
    for (const auto& n : nodes) {
        sha = raw_request(n, {"SCRIPT", "LOAD", release_script});
    }
    return sha;
}

raw_throughput_figures raw_throughput(const std::vector<raw_node>& nodes, const std::string& sha,
                                      int depth, int connections_per_node, clock::duration warmup,
                                      clock::duration measure, const std::string& key_prefix,
                                      const std::vector<int>& server_pids)
{
    if (depth != 1 && depth % 2 != 0) {
        throw std::invalid_argument("raw pipeline depth must be 1 or even");
    }
    asio::io_context io(1);
    pump_shared sh(io);
    std::vector<std::unique_ptr<tcp::socket>> sockets;
    std::vector<std::unique_ptr<reply_scanner>> scanners;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
        for (int c = 0; c < connections_per_node; ++c) {
            const std::string key_base =
                key_prefix + ":" + std::to_string(n) + ":" + std::to_string(c) + ":";
            std::vector<step> steps;
            if (depth == 1) {
                steps.push_back({set_command(key_base + "0"), 1});
                steps.push_back({delete_command(key_base + "0", sha), 1});
            } else {
                step batch;
                for (int k = 0; k < depth / 2; ++k) {
                    batch.bytes += set_command(key_base + std::to_string(k));
                    batch.bytes += delete_command(key_base + std::to_string(k), sha);
                }
                batch.replies = static_cast<std::size_t>(depth);
                steps.push_back(std::move(batch));
            }
            sockets.push_back(std::make_unique<tcp::socket>(connect_blocking(io, nodes[n])));
            scanners.push_back(std::make_unique<reply_scanner>());
            ++sh.running;
            asio::co_spawn(io, pump(*sockets.back(), std::move(steps), sh, *scanners.back()),
                           rethrow);
        }
    }

    raw_throughput_figures f;
    f.depth = depth;
    f.connections_per_node = connections_per_node;
    cpu_meter cpu(server_pids);
    clock::time_point t0, t1;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            co_await sleep_for(warmup);
            sh.measuring = true;
            t0 = clock::now();
            cpu.start();
            co_await sleep_for(measure);
            sh.measuring = false;
            t1 = clock::now();
            cpu.stop();
            sh.stop = true;
            if (sh.running > 0) {
                co_await sh.done.async_wait(asio::as_tuple(asio::deferred));
            }
        },
        rethrow);
    io.run();

    f.seconds = seconds(t1 - t0);
    f.commands = sh.commands;
    f.commands_per_s = static_cast<double>(f.commands) / f.seconds;
    f.cycles_per_s = f.commands_per_s / (2.0 * static_cast<double>(nodes.size()));
    f.batch_latency = std::move(sh.batch_latency);
    f.client_cores = cpu.client_cores();
    f.servers_cores = cpu.servers_cores();
    for (const auto& s : scanners) {
        if (s->unexpected != 0 || s->ok != s->deleted) {
            f.replies_as_expected = false;
        }
    }
    return f;
}

raw_latency_figures raw_latency(const std::vector<raw_node>& nodes, const std::string& sha,
                                clock::duration warmup, clock::duration measure,
                                const std::string& key_prefix)
{
    asio::io_context io(1);
    std::vector<tcp::socket> sockets;
    for (const auto& n : nodes) {
        sockets.push_back(connect_blocking(io, n));
    }
    const std::string key = key_prefix + ":lat";
    const std::string commands[2] = {set_command(key), delete_command(key, sha)};
    const std::size_t quorum = nodes.size() / 2 + 1;

    // Plain callbacks rather than coroutines, to add as little as possible to the wire's
    // round trip: the command is written to every node at once (small writes on loopback do
    // not block), then every reply is awaited, and the arrival of each is noted.
    struct runner
    {
        runner(asio::io_context& io, std::vector<tcp::socket>& s, const std::string (&c)[2],
               std::size_t q)
            : sockets(s), commands(c), quorum(q), scanners(s.size()), buffers(s.size()), pause(io)
        {
        }

        std::vector<tcp::socket>& sockets;
        const std::string (&commands)[2];
        std::size_t quorum;
        std::vector<reply_scanner> scanners;
        std::vector<std::array<char, 4096>> buffers;
        std::vector<clock::duration> arrivals;
        raw_latency_figures f;
        enum class phase { one_node, all_nodes, all_nodes_after_idle } now = phase::one_node;
        std::size_t width = 1;  // nodes in this phase: 1, then all
        std::size_t pending = 0;
        int which = 0;  // 0: SET, 1: delete
        clock::time_point t0, measure_from, phase_end;
        clock::duration third{};
        asio::steady_timer pause;

        void send()
        {
            pending = width;
            arrivals.clear();
            t0 = clock::now();
            for (std::size_t i = 0; i < width; ++i) {
                asio::write(sockets[i], asio::buffer(commands[which]));
            }
            for (std::size_t i = 0; i < width; ++i) {
                read(i);
            }
        }
        void read(std::size_t i)
        {
            sockets[i].async_read_some(asio::buffer(buffers[i]),
                                       [this, i](boost::system::error_code ec, std::size_t n) {
                                           if (ec) {
                                               throw boost::system::system_error(ec);
                                           }
                                           if (scanners[i].feed(buffers[i].data(), n) == 0) {
                                               read(i);
                                               return;
                                           }
                                           arrivals.push_back(clock::now() - t0);
                                           if (--pending == 0) {
                                               replied();
                                           }
                                       });
        }
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
                if (now == phase::all_nodes_after_idle || sockets.size() == 1) {
                    return;  // done
                }
                now = now == phase::one_node ? phase::all_nodes : phase::all_nodes_after_idle;
                width = sockets.size();
                measure_from = now_t;  // the connections are warm already
                phase_end = now_t + third;
            }
            if (which == 0 && now == phase::all_nodes_after_idle) {
                pause.expires_after(idle_pause);
                pause.async_wait([this](boost::system::error_code) { send(); });
                return;
            }
            send();
        }
    };
    runner r(io, sockets, commands, quorum);
    r.third = measure / 3;
    const auto start = clock::now();
    r.measure_from = start + warmup;
    r.phase_end = start + warmup + r.third;
    r.send();
    io.run();
    for (const auto& s : r.scanners) {
        if (s.unexpected != 0) {
            throw std::runtime_error("raw latency: unexpected reply " + s.first_unexpected);
        }
    }
    return std::move(r.f);
}

}  // namespace bench
