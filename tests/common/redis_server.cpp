// SPDX-License-Identifier: BSL-1.0
#include "common/redis_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

extern char** environ;

namespace redlock::test {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using context_ptr = std::unique_ptr<redisContext, decltype(&redisFree)>;
using reply_ptr = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

constexpr auto start_timeout = 5s;
constexpr auto reap_timeout = 5s;
constexpr auto poll_interval = 2ms;
constexpr int start_attempts = 5;
// Cluster creation and convergence: 1-5 s for redis-cli, 2-7 s to cluster_state:ok (measured).
constexpr auto cluster_create_timeout = 30s;
constexpr auto cluster_settle_timeout = 15s;
// Each cluster check opens a few connections per node: polling every 1 ms would load the two
// cores that the nodes need to converge.
constexpr auto cluster_poll_interval = 20ms;
constexpr std::uint16_t cluster_bus_offset = 10000;
constexpr std::size_t cluster_slots = 16384;
constexpr std::size_t migrate_batch = 100;

[[noreturn]] void fail(std::uint16_t port, std::string_view cmd, std::string_view what)
{
    throw std::runtime_error("redis 127.0.0.1:" + std::to_string(port) + " " + std::string(cmd) +
                             ": " + std::string(what));
}

timeval to_timeval(std::chrono::milliseconds ms)
{
    return timeval{static_cast<time_t>(ms.count() / 1000),
                   static_cast<suseconds_t>(ms.count() % 1000 * 1000)};
}

// Leaves errors in c->err (a failed setsockopt included) for the caller to judge.
context_ptr connect(std::uint16_t port, std::chrono::milliseconds timeout)
{
    context_ptr c(redisConnectWithTimeout("127.0.0.1", port, to_timeval(timeout)), &redisFree);
    if (c && !c->err)
        redisSetTimeout(c.get(), to_timeval(timeout));
    return c;
}

reply_ptr run(redisContext* c, const std::vector<std::string_view>& args)
{
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (auto a : args) {
        argv.push_back(a.data());
        lens.push_back(a.size());
    }
    auto* r = redisCommandArgv(c, static_cast<int>(args.size()), argv.data(), lens.data());
    return {static_cast<redisReply*>(r), &freeReplyObject};
}

reply_ptr command(std::uint16_t port, const std::vector<std::string_view>& args)
{
    auto c = connect(port, 1s);
    if (!c || c->err)
        fail(port, args.at(0), std::string("connect: ") + (c ? c->errstr : "out of memory"));
    auto r = run(c.get(), args);
    if (!r)  // I/O error, EOF, or the 1 s timeout (a paused server)
        fail(port, args.at(0), c->errstr[0] ? c->errstr : "no reply");
    return r;
}

reply_ptr expect(reply_ptr r, int type, std::uint16_t port, std::string_view cmd)
{
    if (r->type != type)
        fail(port, cmd, "unexpected reply " + render(*r));
    return r;
}

// `name` (redis-server, redis-cli) as found on PATH, as execve does not search it.
std::string find_program(const std::string& name)
{
    std::string_view path = std::getenv("PATH") ? std::getenv("PATH") : "";
    while (!path.empty()) {
        auto dir = path.substr(0, path.find(':'));
        path.remove_prefix(std::min(path.size(), dir.size() + 1));
        auto candidate = std::string(dir.empty() ? "." : dir) + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return "/usr/bin/" + name;
}

std::string make_temp_dir()
{
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/redlock-test-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
        throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
    return tmpl;
}

// The log from `offset` on (this start only), cut to its last 2000 bytes.
std::string log_tail(const std::string& file, std::uintmax_t offset)
{
    std::ifstream in(file, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset));
    std::ostringstream s;
    s << in.rdbuf();
    auto text = s.str();
    return text.size() > 2000 ? "..." + text.substr(text.size() - 2000) : text;
}

// Checks the pid too: if someone else grabbed our port, their server would answer PONG while
// ours is about to exit with "Address already in use".
bool answers_ping(std::uint16_t port, pid_t pid)
{
    auto c = connect(port, 100ms);
    if (!c || c->err)
        return false;
    auto pong = run(c.get(), {"PING"});
    if (!pong || pong->type != REDIS_REPLY_STATUS || std::string_view(pong->str) != "PONG")
        return false;
    auto info = run(c.get(), {"INFO", "server"});
    return info && info->type == REDIS_REPLY_STRING &&
           std::string_view(info->str, info->len)
                   .find("process_id:" + std::to_string(pid) + "\r\n") != std::string_view::npos;
}

// Bounded waitpid; the caller has made the child exit or stop already.
bool wait_child(pid_t pid, int options, int& status)
{
    const auto deadline = steady::now() + reap_timeout;
    while (steady::now() < deadline) {
        pid_t r = ::waitpid(pid, &status, options | WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            return r == pid;
        std::this_thread::sleep_for(1ms);
    }
    return false;
}

// Whether a server could listen on 127.0.0.1:port now. SO_REUSEADDR as redis sets it, so a
// port held only by TIME_WAIT connections counts as free, as it does for redis.
bool port_is_free(std::uint16_t port)
{
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw std::system_error(errno, std::generic_category(), "socket");
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    return free;
}

// A free port P whose cluster bus port P+10000 is free too; redis refuses P > 55535. The
// ephemeral range here is 32768-60999, so most candidates fit.
std::uint16_t unused_cluster_port()
{
    for (int attempt = 0; attempt < 100; ++attempt) {
        const auto port = unused_loopback_port();
        if (port <= 65535 - cluster_bus_offset && port_is_free(port + cluster_bus_offset))
            return port;
    }
    throw std::runtime_error("redis_server: no free port P with P+10000 free in 100 attempts");
}

// The whole of a small file, e.g. redis-cli's output.
std::string read_text(const std::string& file)
{
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

std::string render(const redisReply& r)
{
    switch (r.type) {
        case REDIS_REPLY_INTEGER:
            return std::to_string(r.integer);
        case REDIS_REPLY_NIL:
            return "(nil)";
        case REDIS_REPLY_ARRAY: {
            std::string out;
            for (size_t i = 0; i < r.elements; ++i) {
                // Appended piece by piece: `(i ? " " : "") + render(...)` trips a false
                // -Wrestrict in g++ 12 at -O3.
                if (i > 0) {
                    out += ' ';
                }
                out += render(*r.element[i]);
            }
            return out;
        }
        default:  // string, status, error
            return std::string(r.str, r.len);
    }
}

// Everything the child needs is built before fork(): after fork only async-signal-safe calls
// are allowed, and the test process may have other threads (Asio) holding the malloc lock.
pid_t spawn_child(std::vector<std::string> args, const std::vector<std::string>& extra_env,
                  const std::string& log)
{
    std::vector<char*> argv, envp;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    // glibc's getenv takes the first match, so extras placed first override inherited values.
    for (auto& e : extra_env)
        envp.push_back(const_cast<char*>(e.c_str()));
    for (char** e = environ; *e; ++e)
        envp.push_back(*e);
    envp.push_back(nullptr);

    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0)
        throw std::system_error(errno, std::generic_category(), "open " + log);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0) {
        ::close(log_fd);
        throw std::system_error(errno, std::generic_category(), "open /dev/null");
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        // PDEATHSIG fires when the forking *thread* exits: create children from a thread that
        // outlives them. The getppid check closes the race with a parent that already died.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent)
            ::_exit(127);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        // Inheriting the runner's stdout/stderr would make ctest wait for the server.
        ::dup2(null_fd, 0);
        ::dup2(log_fd, 1);
        ::dup2(log_fd, 2);
        ::close_range(3, ~0U, 0);  // hiredis/Asio sockets are not CLOEXEC
        ::execve(argv[0], argv.data(), envp.data());
        constexpr char msg[] = "test harness: execve failed\n";
        [[maybe_unused]] auto n = ::write(2, msg, sizeof msg - 1);
        ::_exit(127);
    }
    const int err = errno;
    ::close(log_fd);
    ::close(null_fd);
    if (pid < 0)
        throw std::system_error(err, std::generic_category(), "fork");
    return pid;
}

redis_server::redis_server(std::vector<std::string> extra_args, std::vector<std::string> extra_env)
    : args_(std::move(extra_args)), env_(std::move(extra_env)), dir_(make_temp_dir())
{
    start_on_a_free_port();
}

redis_server::redis_server(sentinel_config config)
    : dir_(make_temp_dir()), sentinel_config_(std::move(config.text))
{
    start_on_a_free_port();
}

redis_server::redis_server(cluster_config config)
    : dir_(make_temp_dir()), cluster_bus_(true), tls_(std::move(config.tls))
{
    // nodes.conf is relative to --dir: a path that includes the dir makes redis exit at once.
    // No diskless-sync delay: Redis 7.0 otherwise waits 5 s before a replica's first sync.
    // clang-format off
    args_ = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
             "--repl-diskless-sync-delay", "0"};
    // clang-format on
    args_.insert(args_.end(), config.extra_args.begin(), config.extra_args.end());
    start_on_a_free_port();
}

std::unique_ptr<redis_server> redis_server::cluster_node(std::vector<std::string> extra_args,
                                                         std::optional<tls_files> tls)
{
    return std::unique_ptr<redis_server>(
        new redis_server(cluster_config{std::move(extra_args), std::move(tls)}));
}

std::unique_ptr<redis_server> redis_server::sentinel(const std::string& name,
                                                     std::uint16_t master_port, int quorum,
                                                     std::chrono::milliseconds down_after)
{
    const std::string ms = std::to_string(down_after.count());
    return std::unique_ptr<redis_server>(new redis_server(
        sentinel_config{"sentinel monitor " + name + " 127.0.0.1 " + std::to_string(master_port) +
                        " " + std::to_string(quorum) + "\nsentinel down-after-milliseconds " +
                        name + " " + ms + "\nsentinel failover-timeout " + name + " 10000\n"}));
}

void redis_server::start_on_a_free_port()
{
    try {
        // The port is free when picked but may be taken before redis binds it: pick again.
        for (int attempt = 1;; ++attempt) {
            // A bus port taken after the check makes redis exit with "Address already in use"
            // too, so start() fails the same way and the loop picks again.
            if (tls_) {
                // The bus goes with the TLS port (tls-cluster); the plain port is any other.
                tls_port_ = unused_cluster_port();
                do {
                    port_ = unused_loopback_port();
                } while (port_ == tls_port_ || port_ == tls_port_ + cluster_bus_offset);
            } else {
                port_ = cluster_bus_ ? unused_cluster_port() : unused_loopback_port();
            }
            if (start())
                return;
            if (attempt == start_attempts)
                throw std::runtime_error("redis_server: no free port after " +
                                         std::to_string(attempt) + " attempts");
        }
    } catch (...) {
        kill();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
        throw;
    }
}

redis_server::~redis_server()
{
    kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

std::string redis_server::url() const
{
    return "redis://127.0.0.1:" + std::to_string(port_);
}

bool redis_server::start()
{
    const std::string log = dir_ + "/redis.log";
    std::error_code ec;  // no log yet on the first start
    const auto log_size = std::filesystem::file_size(log, ec);
    const auto log_offset = ec ? 0 : log_size;
    // clang-format off
    std::vector<std::string> argv = {
        find_program("redis-server"), "--port", std::to_string(port_), "--bind", "127.0.0.1",
        "--save", "", "--appendonly", "no", "--hz", "100", "--enable-debug-command", "local",
        "--dir", dir_, "--logfile", log, "--daemonize", "no"};
    // clang-format on
    if (tls_) {
        // Before args_, which may override any of them (e.g. --tls-cluster no). The bus port is
        // explicit so that it stays the one checked free whatever tls-cluster says.
        // clang-format off
        argv.insert(argv.end(), {
            "--tls-port", std::to_string(tls_port_),
            "--cluster-port", std::to_string(tls_port_ + cluster_bus_offset),
            "--tls-cert-file", tls_->cert_file, "--tls-key-file", tls_->key_file,
            "--tls-ca-cert-file", tls_->ca_file, "--tls-auth-clients", "no",
            "--tls-cluster", "yes", "--tls-replication", "yes"});
        // clang-format on
    }
    if (!sentinel_config_.empty()) {
        // The config file goes first; Sentinel rewrites it, so it is written once.
        const std::string conf = dir_ + "/sentinel.conf";
        if (!std::filesystem::exists(conf)) {
            std::ofstream(conf) << sentinel_config_;
        }
        argv = {find_program("redis-server"),
                conf,
                "--sentinel",
                "--port",
                std::to_string(port_),
                "--bind",
                "127.0.0.1",
                "--dir",
                dir_,
                "--logfile",
                log,
                "--daemonize",
                "no"};
    }
    argv.insert(argv.end(), args_.begin(), args_.end());
    pid_ = spawn_child(std::move(argv), env_, log);
    paused_ = false;

    const auto deadline = steady::now() + start_timeout;
    while (steady::now() < deadline) {
        if (!running()) {
            auto text = log_tail(log, log_offset);
            if (text.find("Address already in use") != std::string::npos)
                return false;
            throw std::runtime_error("redis-server on port " + std::to_string(port_) +
                                     " exited during startup; log:\n" + text);
        }
        if (answers_ping(port_, pid_))
            return true;
        std::this_thread::sleep_for(poll_interval);
    }
    kill();
    throw std::runtime_error("redis-server on port " + std::to_string(port_) +
                             " did not answer PING within 5 s; log:\n" + log_tail(log, log_offset));
}

void redis_server::pause()
{
    if (paused_ || !running())
        return;
    ::kill(pid_, SIGSTOP);
    // SIGSTOP is asynchronous: without waiting, the next command may still be answered.
    int status = 0;
    if (wait_child(pid_, WUNTRACED, status) && !WIFSTOPPED(status))
        pid_ = -1;  // died instead, and is now reaped
    paused_ = pid_ > 0;
}

void redis_server::resume()
{
    if (running())
        ::kill(pid_, SIGCONT);  // takes effect synchronously in the kernel
    paused_ = false;
}

void redis_server::kill()
{
    if (pid_ > 0) {
        ::kill(pid_, SIGCONT);
        ::kill(pid_, SIGKILL);
        int status = 0;
        wait_child(pid_, 0, status);
    }
    pid_ = -1;
    paused_ = false;
}

void redis_server::restart()
{
    kill();
    // Same port by contract; a client socket may briefly hold it as its ephemeral port.
    for (int attempt = 1; attempt <= start_attempts; ++attempt) {
        if (start())
            return;
        std::this_thread::sleep_for(20ms);
    }
    throw std::runtime_error("redis_server::restart: port " + std::to_string(port_) +
                             " stayed in use");
}

bool redis_server::running() const
{
    int status = 0;
    if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_)
        pid_ = -1;
    return pid_ > 0;
}

redis_cluster::redis_cluster(std::size_t n, std::vector<std::string> extra_args)
{
    for (std::size_t i = 0; i < n; ++i)
        nodes_.push_back(std::make_unique<redis_server>(extra_args));
}

std::vector<std::string> redis_cluster::urls() const
{
    std::vector<std::string> out;
    for (auto& n : nodes_)
        out.push_back(n->url());
    return out;
}

void redis_cluster::flushall()
{
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i]->paused())
            throw std::logic_error("redis_cluster::flushall: node " + std::to_string(i) +
                                   " is paused");
        if (nodes_[i]->running())
            redis_command(nodes_[i]->port(), {"FLUSHALL"});
    }
}

namespace {

using server_list = std::vector<std::unique_ptr<redis_server>>;
// The owner's port for every slot as one node reports it; 0 where it names no owner.
using slot_owners = std::vector<std::uint16_t>;

// Cluster commands answer errors as replies: a SETSLOT that failed must not pass silently.
void expect_ok(std::uint16_t port, const std::vector<std::string>& args)
{
    auto r = command(port, std::vector<std::string_view>(args.begin(), args.end()));
    if (r->type != REDIS_REPLY_STATUS || std::string_view(r->str, r->len) != "OK") {
        std::string cmd;
        for (auto& a : args)
            cmd += (cmd.empty() ? "" : " ") + a;
        fail(port, cmd, render(*r));
    }
}

bool answers(const redis_server& s)
{
    return s.running() && !s.paused();
}

std::string describe(const server_list& nodes, std::size_t i)
{
    return "server " + std::to_string(i) + " (port " + std::to_string(nodes[i]->port()) + ")";
}

std::optional<std::size_t> index_of_port(const server_list& nodes, std::uint16_t port)
{
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i]->port() == port)
            return i;
    return std::nullopt;
}

// Whether `port` is one of `s`'s: with TLS, a cluster names its TLS port to replicas (ROLE) and
// to TLS clients, its plain port to plain clients.
bool is_port_of(const redis_server& s, std::int64_t port)
{
    return port == s.port() || (s.tls_port() != 0 && port == s.tls_port());
}

// The port other nodes meet `s` on: its TLS port with TLS (its bus port is that + 10000).
std::uint16_t meeting_port(const redis_server& s)
{
    return s.tls_port() != 0 ? s.tls_port() : s.port();
}

// The reply of CLUSTER SLOTS in RESP2: [[start, end, [ip, port, id, ...], replicas...], ...].
slot_owners read_slot_owners(std::uint16_t port)
{
    auto r = expect(command(port, {"CLUSTER", "SLOTS"}), REDIS_REPLY_ARRAY, port, "CLUSTER SLOTS");
    slot_owners owners(cluster_slots, 0);
    for (std::size_t i = 0; i < r->elements; ++i) {
        const redisReply& range = *r->element[i];
        if (range.type != REDIS_REPLY_ARRAY || range.elements < 3 ||
            range.element[0]->type != REDIS_REPLY_INTEGER ||
            range.element[1]->type != REDIS_REPLY_INTEGER ||
            range.element[2]->type != REDIS_REPLY_ARRAY || range.element[2]->elements < 2 ||
            range.element[2]->element[1]->type != REDIS_REPLY_INTEGER ||
            range.element[0]->integer < 0 || range.element[1]->integer >= 16384 ||
            range.element[0]->integer > range.element[1]->integer)
            fail(port, "CLUSTER SLOTS", "unexpected entry " + render(range));
        for (auto s = range.element[0]->integer; s <= range.element[1]->integer; ++s)
            owners[static_cast<std::size_t>(s)] =
                static_cast<std::uint16_t>(range.element[2]->element[1]->integer);
    }
    return owners;
}

std::string cluster_state(std::uint16_t port)
{
    const auto info = redis_command(port, {"CLUSTER", "INFO"});
    const auto at = info.find("cluster_state:");
    if (at == std::string::npos)
        fail(port, "CLUSTER INFO", "no cluster_state in " + info);
    const auto begin = at + std::string_view("cluster_state:").size();
    return info.substr(begin, info.find_first_of("\r\n", begin) - begin);
}

// ROLE: ["master", ...] or ["slave", master ip, master port, link state, offset].
reply_ptr role(std::uint16_t port)
{
    auto r = expect(command(port, {"ROLE"}), REDIS_REPLY_ARRAY, port, "ROLE");
    if (r->elements < 1 || r->element[0]->type != REDIS_REPLY_STRING)
        fail(port, "ROLE", "unexpected reply " + render(*r));
    return r;
}

bool is_master(std::uint16_t port)
{
    return std::string_view(role(port)->element[0]->str) == "master";
}

// "" once every running server reports cluster_state:ok and the same slot owners (then
// stored in *agreed); otherwise what is still wrong, for the timeout message.
std::string cluster_problem(const server_list& nodes, slot_owners* agreed = nullptr)
{
    std::optional<slot_owners> first;
    std::size_t first_index = 0;
    try {
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (!answers(*nodes[i]))
                continue;
            const auto port = nodes[i]->port();
            if (auto state = cluster_state(port); state != "ok")
                return describe(nodes, i) + " has cluster_state:" + state;
            auto owners = read_slot_owners(port);
            if (!first) {
                first = std::move(owners);
                first_index = i;
                continue;
            }
            for (std::size_t s = 0; s < cluster_slots; ++s)
                if (owners[s] != (*first)[s])
                    return describe(nodes, i) + " says port " + std::to_string(owners[s]) +
                           " owns slot " + std::to_string(s) + ", " + describe(nodes, first_index) +
                           " says port " + std::to_string((*first)[s]);
        }
    } catch (const std::exception& e) {
        return e.what();
    }
    if (!first)
        return "no server is running";
    if (agreed)
        *agreed = std::move(*first);
    return {};
}

// Each node's config epoch as the server on `port` knows it, from CLUSTER NODES: lines of
// "<id> <address> <flags> <master> <ping-sent> <pong-received> <config-epoch> ...".
std::map<std::string, std::string> config_epochs(std::uint16_t port)
{
    std::map<std::string, std::string> epochs;
    std::istringstream lines(redis_command(port, {"CLUSTER", "NODES"}));
    for (std::string line; std::getline(lines, line);) {
        std::istringstream fields(line);
        std::string id, address, flags, master, ping, pong, epoch;
        if (fields >> id >> address >> flags >> master >> ping >> pong >> epoch)
            epochs[id] = epoch;
    }
    return epochs;
}

// "" once every running server knows the same config epoch for every node; otherwise who
// disagrees. A target that takes a slot without a vote gets a new epoch only if it knows the
// largest one: with a stale view it may keep an epoch below the old owner's, and gossip the
// old owner sent before it let go then gives the slot back to it on some nodes.
std::string config_epoch_problem(const server_list& nodes)
{
    std::optional<std::map<std::string, std::string>> first;
    std::size_t first_index = 0;
    try {
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (!answers(*nodes[i]))
                continue;
            auto epochs = config_epochs(nodes[i]->port());
            if (!first) {
                first = std::move(epochs);
                first_index = i;
            } else if (epochs != *first) {
                return describe(nodes, i) + " knows other config epochs than " +
                       describe(nodes, first_index);
            }
        }
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

// Polls `problem` until it returns "" (then returns "") or `limit` passes (then returns the
// last problem).
std::string settle(const std::function<std::string()>& problem, std::chrono::milliseconds limit)
{
    const auto deadline = steady::now() + limit;
    for (;;) {
        auto p = problem();
        if (p.empty() || steady::now() >= deadline)
            return p;
        std::this_thread::sleep_for(cluster_poll_interval);
    }
}

// Bounded wait for a short-lived child; kills it on timeout. The exit status, or nullopt.
std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds limit)
{
    const auto deadline = steady::now() + limit;
    int status = 0;
    while (steady::now() < deadline) {
        const pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (r < 0 && errno != EINTR)
            throw std::system_error(errno, std::generic_category(), "waitpid");
        std::this_thread::sleep_for(cluster_poll_interval);
    }
    ::kill(pid, SIGKILL);
    wait_child(pid, 0, status);
    return std::nullopt;
}

// Joins `nodes` with redis-cli; returns its output. With every node on one host, redis-cli
// takes the first `masters` addresses as masters, but then shuffles the replicas among them at
// random ("optimize slaves allocation for anti-affinity"): replicas it put elsewhere are moved
// to the master the layout promises.
std::string create_with_redis_cli(const server_list& nodes, std::size_t masters,
                                  std::size_t replicas_per_master,
                                  const std::optional<tls_files>& tls)
{
    // Over the TLS ports, as with a cluster that has no plain ones; but not when extra args
    // turned tls-cluster off: the nodes then announce their plain ports, to which redis-cli
    // --tls would wait forever for a TLS handshake.
    const bool over_tls =
        tls &&
        redis_command(nodes[0]->port(), {"CONFIG", "GET", "tls-cluster"}) == "tls-cluster yes";
    std::vector<std::string> argv = {find_program("redis-cli")};
    if (over_tls)
        argv.insert(argv.end(), {"--tls", "--cacert", tls->ca_file});
    argv.insert(argv.end(), {"--cluster", "create"});
    for (auto& node : nodes)
        argv.push_back("127.0.0.1:" + std::to_string(over_tls ? node->tls_port() : node->port()));
    argv.insert(argv.end(),
                {"--cluster-replicas", std::to_string(replicas_per_master), "--cluster-yes"});
    const std::string log = nodes[0]->dir() + "/cluster-create.log";
    const auto status =
        wait_for_exit(spawn_child(std::move(argv), {}, log), cluster_create_timeout);
    // redis-cli exits 0 on some failures: its output is the verdict.
    auto output = read_text(log);
    if (status != 0 || output.find("[ERR]") != std::string::npos ||
        output.find("[OK] All 16384 slots covered") == std::string::npos)
        throw std::runtime_error(
            "cluster_deployment: redis-cli --cluster create " +
            (status ? "exited with " + std::to_string(*status) : std::string("timed out")) +
            "; output:\n" + output);
    for (std::size_t i = masters; i < nodes.size(); ++i) {
        const auto& master = *nodes[(i - masters) / replicas_per_master];
        auto r = role(nodes[i]->port());
        if (r->elements >= 3 && r->element[2]->type == REDIS_REPLY_INTEGER &&
            is_port_of(master, r->element[2]->integer))
            continue;
        expect_ok(nodes[i]->port(),
                  {"CLUSTER", "REPLICATE", redis_command(master.port(), {"CLUSTER", "MYID"})});
        output += "(then " + describe(nodes, i) + " moved to port " +
                  std::to_string(master.port()) + ")\n";
    }
    return "redis-cli output:\n" + output;
}

// What redis-cli --cluster create does, for fewer than 3 masters, in the same layout.
std::string create_by_hand(const server_list& nodes, std::size_t masters,
                           std::size_t replicas_per_master)
{
    for (std::size_t m = 0; m < masters; ++m)
        expect_ok(nodes[m]->port(),
                  {"CLUSTER", "ADDSLOTSRANGE", std::to_string(m * cluster_slots / masters),
                   std::to_string((m + 1) * cluster_slots / masters - 1)});
    // Distinct epochs while each node knows only itself (later the server refuses): with equal
    // ones the nodes would first have to resolve the collision.
    for (std::size_t i = 0; i < nodes.size(); ++i)
        expect_ok(nodes[i]->port(), {"CLUSTER", "SET-CONFIG-EPOCH", std::to_string(i + 1)});
    for (std::size_t i = 1; i < nodes.size(); ++i)
        expect_ok(nodes[i]->port(),
                  {"CLUSTER", "MEET", "127.0.0.1", std::to_string(meeting_port(*nodes[0]))});
    // REPLICATE fails with "Unknown node" until gossip has introduced the master.
    for (std::size_t i = masters; i < nodes.size(); ++i) {
        const auto master = (i - masters) / replicas_per_master;
        const auto id = redis_command(nodes[master]->port(), {"CLUSTER", "MYID"});
        auto problem = settle(
            [&]() -> std::string {
                try {
                    auto r = redis_command(nodes[i]->port(), {"CLUSTER", "REPLICATE", id});
                    return r == "OK" ? "" : r;
                } catch (const std::exception& e) {
                    return e.what();
                }
            },
            cluster_settle_timeout);
        if (!problem.empty())
            throw std::runtime_error("cluster_deployment: " + describe(nodes, i) +
                                     " CLUSTER REPLICATE " + id + ": " + problem);
    }
    return "(joined by hand: redis-cli --cluster create needs 3 masters)";
}

}  // namespace

std::string redis_server::tls_command(const std::vector<std::string>& args) const
{
    if (!tls_ || tls_port_ == 0)
        throw std::logic_error("redis_server::tls_command: port " + std::to_string(port_) +
                               " has no TLS port");
    // clang-format off
    std::vector<std::string> argv = {find_program("redis-cli"), "--tls", "--cacert", tls_->ca_file,
                                     "-h", "127.0.0.1", "-p", std::to_string(tls_port_)};
    // clang-format on
    argv.insert(argv.end(), args.begin(), args.end());
    std::string cmd;
    for (auto& a : args)
        cmd += (cmd.empty() ? "" : " ") + a;
    // A file of its own per call: spawn_child appends, and calls may overlap across threads.
    static std::atomic<unsigned> calls{0};
    const std::string log = dir_ + "/redis-cli-" + std::to_string(++calls) + ".out";
    const auto status = wait_for_exit(spawn_child(std::move(argv), {}, log), start_timeout);
    const auto output = read_text(log);
    std::error_code ec;
    std::filesystem::remove(log, ec);
    if (status != 0)
        throw std::runtime_error(
            "redis-cli --tls -p " + std::to_string(tls_port_) + " " + cmd + ": " +
            (status ? "exited with " + std::to_string(*status) : std::string("timed out")) +
            "; output:\n" + output);
    std::string out;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty())
            continue;
        if (!out.empty())
            out += ' ';
        out += line;
    }
    return out;
}

cluster_deployment::cluster_deployment(std::size_t masters, std::size_t replicas_per_master,
                                       std::vector<std::string> extra_args,
                                       std::optional<tls_files> tls)
{
    if (masters == 0)
        throw std::invalid_argument("cluster_deployment: no masters");
    const std::size_t n = masters * (1 + replicas_per_master);
    for (std::size_t i = 0; i < n; ++i)
        nodes_.push_back(redis_server::cluster_node(extra_args, tls));

    // redis-cli refuses fewer than 3 masters; the server does not, so tests of 1 or 2 masters
    // get the same steps by hand.
    const auto created = masters >= 3
                             ? create_with_redis_cli(nodes_, masters, replicas_per_master, tls)
                             : create_by_hand(nodes_, masters, replicas_per_master);

    for (auto& node : nodes_)
        ids_.push_back(redis_command(node->port(), {"CLUSTER", "MYID"}));

    // Replicas are ready once linked to the master the layout above promises: a test that
    // kills a master expects its replica to hold the data written before.
    auto problem = settle(
        [&]() -> std::string {
            if (auto p = cluster_problem(nodes_); !p.empty())
                return p;
            for (std::size_t i = masters; i < n; ++i) {
                const auto master = (i - masters) / replicas_per_master;
                try {
                    auto r = role(nodes_[i]->port());
                    if (r->elements < 4 || std::string_view(r->element[0]->str) != "slave" ||
                        r->element[2]->type != REDIS_REPLY_INTEGER ||
                        !is_port_of(*nodes_[master], r->element[2]->integer) ||
                        r->element[3]->type != REDIS_REPLY_STRING ||
                        std::string_view(r->element[3]->str) != "connected")
                        return describe(nodes_, i) + " should be a connected replica of " +
                               describe(nodes_, master) + ", ROLE says " + render(*r);
                } catch (const std::exception& e) {
                    return e.what();
                }
            }
            return {};
        },
        cluster_settle_timeout);
    if (!problem.empty())
        throw std::runtime_error("cluster_deployment: not ready after 15 s: " + problem + "\n" +
                                 created);
}

std::string cluster_deployment::url() const
{
    std::string out = "redis-cluster://";
    for (std::size_t i = 0; i < nodes_.size(); ++i)
        out += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(nodes_[i]->port());
    return out;
}

std::string cluster_deployment::tls_url() const
{
    std::string out = "rediss-cluster://";
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i]->tls_port() == 0)
            throw std::logic_error("cluster_deployment::tls_url: the servers have no TLS port");
        out += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(nodes_[i]->tls_port());
    }
    return out;
}

std::uint16_t cluster_deployment::slot_of(std::string_view key)
{
    // Only the hash tag is hashed, so {user1000}.a and {user1000}.b share a slot; "{}" is no tag.
    if (auto open = key.find('{'); open != std::string_view::npos) {
        if (auto close = key.find('}', open + 1);
            close != std::string_view::npos && close != open + 1)
            key = key.substr(open + 1, close - open - 1);
    }
    std::uint16_t crc = 0;  // CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0
    for (unsigned char c : key) {
        crc = static_cast<std::uint16_t>(crc ^ (c << 8));
        for (int bit = 0; bit < 8; ++bit)
            crc = static_cast<std::uint16_t>(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return static_cast<std::uint16_t>(crc % cluster_slots);
}

std::optional<std::size_t> cluster_deployment::owner_of_slot(std::uint16_t slot) const
{
    for (auto& node : nodes_)
        if (answers(*node))
            return index_of_port(nodes_, read_slot_owners(node->port()).at(slot));
    throw std::runtime_error("cluster_deployment::owner_of_slot: no server is running");
}

void cluster_deployment::begin_slot_migration(std::uint16_t slot, std::size_t from, std::size_t to)
{
    // The target first: once the source is MIGRATING it sends ASK there for moved keys.
    const auto s = std::to_string(slot);
    expect_ok((*this)[to].port(), {"CLUSTER", "SETSLOT", s, "IMPORTING", node_id(from)});
    expect_ok((*this)[from].port(), {"CLUSTER", "SETSLOT", s, "MIGRATING", node_id(to)});
}

void cluster_deployment::migrate_keys(std::uint16_t slot, std::size_t from, std::size_t to)
{
    const auto source = (*this)[from].port();
    const auto target = std::to_string((*this)[to].port());
    const auto s = std::to_string(slot);
    const auto batch = std::to_string(migrate_batch);
    // Each round moves its keys or throws, and no new key can appear in a MIGRATING slot on
    // the source; the deadline only guards against a server that misbehaves.
    const auto deadline = steady::now() + cluster_settle_timeout;
    for (;;) {
        auto keys = expect(command(source, {"CLUSTER", "GETKEYSINSLOT", s, batch}),
                           REDIS_REPLY_ARRAY, source, "CLUSTER GETKEYSINSLOT");
        if (keys->elements == 0)
            return;
        if (steady::now() >= deadline)
            fail(source, "MIGRATE", "keys of slot " + s + " still there after 15 s");
        // The empty key and db 0 with KEYS: the batch form; keys stay binary-safe.
        std::vector<std::string_view> args = {"MIGRATE", "127.0.0.1", target, "",
                                              "0",       "1000",      "KEYS"};
        for (std::size_t i = 0; i < keys->elements; ++i)
            args.emplace_back(keys->element[i]->str, keys->element[i]->len);
        auto r = command(source, args);
        // NOKEY: every key of the batch expired since GETKEYSINSLOT.
        if (r->type != REDIS_REPLY_STATUS || (std::string_view(r->str, r->len) != "OK" &&
                                              std::string_view(r->str, r->len) != "NOKEY"))
            fail(source, "MIGRATE to " + target, render(*r));
    }
}

void cluster_deployment::finish_slot_migration(std::uint16_t slot, std::size_t to)
{
    const auto s = std::to_string(slot);
    const auto owner = (*this)[to].port();
    if (auto problem = settle([&] { return config_epoch_problem(nodes_); }, cluster_settle_timeout);
        !problem.empty())
        throw std::runtime_error("cluster_deployment::finish_slot_migration: " + problem);
    // The target first: it leaves IMPORTING, takes a new config epoch and broadcasts it, so
    // nodes told nothing directly (replicas) learn the new owner too.
    expect_ok(owner, {"CLUSTER", "SETSLOT", s, "NODE", node_id(to)});
    std::vector<std::uint16_t> masters = {owner};
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (i == to || !answers(*nodes_[i]) || !is_master(nodes_[i]->port()))
            continue;
        expect_ok(nodes_[i]->port(), {"CLUSTER", "SETSLOT", s, "NODE", node_id(to)});
        masters.push_back(nodes_[i]->port());
    }
    auto problem = settle(
        [&]() -> std::string {
            try {
                for (auto port : masters)
                    if (auto says = read_slot_owners(port)[slot]; says != owner)
                        return "port " + std::to_string(port) + " says port " +
                               std::to_string(says) + " owns slot " + s;
            } catch (const std::exception& e) {
                return e.what();
            }
            return {};
        },
        cluster_settle_timeout);
    if (!problem.empty())
        throw std::runtime_error("cluster_deployment::finish_slot_migration: " + problem);
}

void cluster_deployment::promote_after_master_killed(std::size_t replica)
{
    const auto port = (*this)[replica].port();
    auto r = role(port);
    if (std::string_view(r->element[0]->str) != "slave" || r->elements < 3 ||
        r->element[2]->type != REDIS_REPLY_INTEGER)
        throw std::runtime_error("cluster_deployment::promote_after_master_killed: " +
                                 describe(nodes_, replica) + " is no replica: ROLE " + render(*r));
    // The old master's slots as the replica knows them: the ones it must end up owning. ROLE
    // names a TLS cluster's TLS port, CLUSTER SLOTS (asked over the plain port) the plain one.
    auto old_master = static_cast<std::uint16_t>(r->element[2]->integer);
    for (auto& node : nodes_)
        if (is_port_of(*node, old_master))
            old_master = node->port();
    const auto before = read_slot_owners(port);
    std::vector<std::size_t> slots;
    for (std::size_t s = 0; s < cluster_slots; ++s)
        if (before[s] == old_master)
            slots.push_back(s);

    // TAKEOVER: no agreement from the old master (dead) nor a vote of the other masters.
    expect_ok(port, {"CLUSTER", "FAILOVER", "TAKEOVER"});
    auto problem = settle(
        [&]() -> std::string {
            slot_owners agreed;
            if (auto p = cluster_problem(nodes_, &agreed); !p.empty())
                return p;
            for (auto s : slots)
                if (agreed[s] != port)
                    return "port " + std::to_string(agreed[s]) + " still owns slot " +
                           std::to_string(s);
            try {
                if (!is_master(port))
                    return describe(nodes_, replica) + " is no master yet";
            } catch (const std::exception& e) {
                return e.what();
            }
            return {};
        },
        cluster_settle_timeout);
    if (!problem.empty())
        throw std::runtime_error("cluster_deployment::promote_after_master_killed(" +
                                 std::to_string(replica) + "): not done after 15 s: " + problem);
}

void cluster_deployment::flushall()
{
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i]->paused())
            throw std::logic_error("cluster_deployment::flushall: server " + std::to_string(i) +
                                   " is paused");
        // Replicas refuse writes (READONLY) and follow their master anyway.
        if (nodes_[i]->running() && is_master(nodes_[i]->port()))
            expect_ok(nodes_[i]->port(), {"FLUSHALL"});
    }
}

void cluster_deployment::wait_until_ok()
{
    auto problem = settle([&] { return cluster_problem(nodes_); }, cluster_settle_timeout);
    if (!problem.empty())
        throw std::runtime_error("cluster_deployment::wait_until_ok: not ok after 15 s: " +
                                 problem);
}

std::optional<std::string> redis_get(std::uint16_t port, std::string_view key)
{
    auto r = command(port, {"GET", key});
    if (r->type == REDIS_REPLY_NIL)
        return std::nullopt;
    r = expect(std::move(r), REDIS_REPLY_STRING, port, "GET");
    return std::string(r->str, r->len);
}

void redis_set(std::uint16_t port, std::string_view key, std::string_view value,
               std::optional<long long> px_ms)
{
    const std::string px = px_ms ? std::to_string(*px_ms) : "";
    std::vector<std::string_view> args = {"SET", key, value};
    if (px_ms)
        args.insert(args.end(), {"PX", px});
    expect(command(port, args), REDIS_REPLY_STATUS, port, "SET");
}

long long redis_pttl(std::uint16_t port, std::string_view key)
{
    return expect(command(port, {"PTTL", key}), REDIS_REPLY_INTEGER, port, "PTTL")->integer;
}

std::string redis_command(std::uint16_t port, std::vector<std::string> args)
{
    if (args.empty())
        throw std::invalid_argument("redis_command: no command");
    return render(*command(port, std::vector<std::string_view>(args.begin(), args.end())));
}

std::uint16_t unused_loopback_port()
{
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw std::system_error(errno, std::generic_category(), "socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        const int err = errno;
        ::close(fd);
        throw std::system_error(err, std::generic_category(), "bind 127.0.0.1:0");
    }
    ::close(fd);
    return ntohs(addr.sin_port);
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

}  // namespace redlock::test
