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

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

reply_ptr expect(reply_ptr r, int type, std::uint16_t port, std::string_view cmd)
{
    if (r->type != type)
        fail(port, cmd, "unexpected reply " + render(*r));
    return r;
}

std::string find_redis_server()
{
    std::string_view path = std::getenv("PATH") ? std::getenv("PATH") : "";
    while (!path.empty()) {
        auto dir = path.substr(0, path.find(':'));
        path.remove_prefix(std::min(path.size(), dir.size() + 1));
        auto candidate = std::string(dir.empty() ? "." : dir) + "/redis-server";
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return "/usr/bin/redis-server";
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

}  // namespace

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
            port_ = unused_loopback_port();
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
        find_redis_server(), "--port", std::to_string(port_), "--bind", "127.0.0.1",
        "--save", "", "--appendonly", "no", "--hz", "100", "--enable-debug-command", "local",
        "--dir", dir_, "--logfile", log, "--daemonize", "no"};
    // clang-format on
    if (!sentinel_config_.empty()) {
        // The config file goes first; Sentinel rewrites it, so it is written once.
        const std::string conf = dir_ + "/sentinel.conf";
        if (!std::filesystem::exists(conf)) {
            std::ofstream(conf) << sentinel_config_;
        }
        argv = {find_redis_server(),
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
