#include "servers.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <thread>

extern char** environ;

namespace bench {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// What the signal handler needs to stop a server, in storage it may touch: no allocation,
// no locks. A slot's pid is set after fork and cleared (to -1) once the server is reaped.
constexpr int max_registered = 64;
struct registered
{
    std::atomic<pid_t> pid{-1};
    char log[512] = {};
    char dir[512] = {};
};
registered registry[max_registered];
std::atomic<int> registry_used{0};

// Async-signal-safe: kill(2), waitpid(2), unlink(2) and rmdir(2) only.
void stop_registered() noexcept
{
    const int saved_errno = errno;
    const int n = std::min(registry_used.load(), max_registered);
    for (int i = 0; i < n; ++i) {
        const pid_t pid = registry[i].pid.exchange(-1);
        if (pid <= 0) {
            continue;
        }
        ::kill(pid, SIGKILL);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        ::unlink(registry[i].log);
        ::rmdir(registry[i].dir);
    }
    errno = saved_errno;
}

void on_fatal_signal(int sig)
{
    stop_registered();
    // Die of the same signal, so that the shell sees how we ended.
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

std::terminate_handler previous_terminate = nullptr;

void on_terminate()
{
    stop_registered();
    if (previous_terminate) {
        previous_terminate();
    }
    std::abort();
}

std::string find_redis_server()
{
    if (const char* env = std::getenv("REDIS_SERVER"); env && *env) {
        return env;
    }
    std::string_view path = std::getenv("PATH") ? std::getenv("PATH") : "";
    while (!path.empty()) {
        auto dir = path.substr(0, path.find(':'));
        path.remove_prefix(std::min(path.size(), dir.size() + 1));
        auto candidate = std::string(dir.empty() ? "." : dir) + "/redis-server";
        if (::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
    }
    return "/usr/bin/redis-server";
}

std::uint16_t free_loopback_port()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        throw std::system_error(errno, std::generic_category(), "socket");
    }
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

// Sends `request` to 127.0.0.1:port and returns one whole reply (a simple line, or a bulk
// string with its header), or "" on any failure or after `timeout`.
std::string blocking_request(std::uint16_t port, std::string_view request,
                             std::chrono::milliseconds timeout)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return {};
    }
    timeval tv{0, static_cast<suseconds_t>(timeout.count() * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::string reply;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size())) {
        char buf[4096];
        while (true) {
            const auto eol = reply.find("\r\n");
            if (eol != std::string::npos) {
                if (reply[0] != '$') {
                    break;
                }
                const long len = std::strtol(reply.c_str() + 1, nullptr, 10);
                if (len < 0 || reply.size() >= eol + 2 + static_cast<std::size_t>(len) + 2) {
                    break;
                }
            }
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) {
                reply.clear();
                break;
            }
            reply.append(buf, static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    return reply;
}

// The server on `port` answers PING, and it is ours (not another program's on a reused port).
bool answers_ping(std::uint16_t port, pid_t pid)
{
    if (blocking_request(port, "PING\r\n", 200ms).rfind("+PONG", 0) != 0) {
        return false;
    }
    const auto info = blocking_request(port, "INFO server\r\n", 200ms);
    return info.find("process_id:" + std::to_string(pid) + "\r\n") != std::string::npos;
}

std::string log_tail(const std::string& file)
{
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    auto text = s.str();
    return text.size() > 2000 ? "..." + text.substr(text.size() - 2000) : text;
}

bool reap(pid_t pid, std::chrono::milliseconds within)
{
    const auto deadline = steady::now() + within;
    while (true) {
        int status = 0;
        const pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) {
            return true;  // reaped, or already reaped (by the signal handler)
        }
        if (steady::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(1ms);
    }
}

}  // namespace

void install_cleanup_handlers()
{
    struct sigaction sa
    {
    };
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        ::sigaction(sig, &sa, nullptr);
    }
    ::signal(SIGPIPE, SIG_IGN);
    previous_terminate = std::set_terminate(on_terminate);
}

local_servers::local_servers(int n)
{
    try {
        servers_.resize(static_cast<std::size_t>(n));
        for (auto& s : servers_) {
            start_one(s);
        }
    } catch (...) {
        stop();
        throw;
    }
}

local_servers::~local_servers()
{
    stop();
}

std::vector<std::string> local_servers::urls() const
{
    std::vector<std::string> out;
    for (const auto& s : servers_) {
        out.push_back("redis://127.0.0.1:" + std::to_string(s.port));
    }
    return out;
}

std::vector<pid_t> local_servers::pids() const
{
    std::vector<pid_t> out;
    for (const auto& s : servers_) {
        out.push_back(s.pid);
    }
    return out;
}

void local_servers::stop()
{
    for (auto& s : servers_) {
        stop_one(s);
    }
}

void local_servers::start_one(server& s)
{
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/redlock-bench-XXXXXX";
    if (!::mkdtemp(tmpl.data())) {
        throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
    }
    s.dir = tmpl;
    s.log = s.dir + "/redis.log";
    const int slot = registry_used.fetch_add(1);
    if (slot >= max_registered || s.dir.size() >= sizeof registry[0].dir ||
        s.log.size() >= sizeof registry[0].log) {
        std::error_code ec;
        std::filesystem::remove_all(s.dir, ec);
        throw std::runtime_error("too many servers, or a temporary path too long");
    }
    s.slot = slot;
    std::strcpy(registry[s.slot].dir, s.dir.c_str());
    std::strcpy(registry[s.slot].log, s.log.c_str());
    const std::string program = find_redis_server();

    constexpr int attempts = 5;
    for (int attempt = 1;; ++attempt) {
        s.port = free_loopback_port();
        // Everything the child needs is built before fork(): after it only async-signal-safe
        // calls are allowed.
        // clang-format off
        std::vector<std::string> args = {
            program, "--port", std::to_string(s.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", s.dir, "--logfile", s.log,
            "--daemonize", "no"};
        // clang-format on
        std::vector<char*> argv;
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        const int log_fd = ::open(s.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (log_fd < 0 || null_fd < 0) {
            throw std::system_error(errno, std::generic_category(), "open " + s.log);
        }
        const pid_t parent = ::getpid();
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) {
                ::_exit(127);
            }
            ::setpgid(0, 0);  // a Ctrl-C reaches the benchmark, which then stops the servers
            sigset_t none;
            sigemptyset(&none);
            ::sigprocmask(SIG_SETMASK, &none, nullptr);
            for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
                ::signal(sig, SIG_DFL);
            }
            ::dup2(null_fd, 0);
            ::dup2(log_fd, 1);
            ::dup2(log_fd, 2);
            ::close_range(3, ~0U, 0);
            ::execve(argv[0], argv.data(), environ);
            constexpr char msg[] = "redlock_bench: execve redis-server failed\n";
            [[maybe_unused]] auto n = ::write(2, msg, sizeof msg - 1);
            ::_exit(127);
        }
        const int fork_errno = errno;
        ::close(log_fd);
        ::close(null_fd);
        if (pid < 0) {
            throw std::system_error(fork_errno, std::generic_category(), "fork");
        }
        s.pid = pid;
        registry[s.slot].pid.store(pid);

        const auto deadline = steady::now() + 5s;
        bool exited = false;
        while (steady::now() < deadline) {
            int status = 0;
            if (::waitpid(pid, &status, WNOHANG) == pid) {
                exited = true;
                break;
            }
            if (answers_ping(s.port, pid)) {
                return;
            }
            std::this_thread::sleep_for(5ms);
        }
        const auto tail = log_tail(s.log);
        if (exited) {
            registry[s.slot].pid.store(-1);
            s.pid = -1;
            if (tail.find("Address already in use") != std::string::npos && attempt < attempts) {
                continue;
            }
            throw std::runtime_error("redis-server (" + program + ") on port " +
                                     std::to_string(s.port) + " exited during startup; log:\n" +
                                     tail);
        }
        throw std::runtime_error("redis-server on port " + std::to_string(s.port) +
                                 " did not answer PING within 5 s; log:\n" + tail);
    }
}

void local_servers::stop_one(server& s)
{
    if (s.slot < 0) {
        return;
    }
    // Taking the pid out of the registry first: the signal handler then leaves this one to us.
    const pid_t pid = registry[s.slot].pid.exchange(-1);
    if (pid > 0) {
        ::kill(pid, SIGTERM);
        // A server a scenario stopped (SIGSTOP) acts on SIGTERM only once continued.
        ::kill(pid, SIGCONT);
        if (!reap(pid, 2000ms)) {
            ::kill(pid, SIGKILL);
            reap(pid, 5000ms);
        }
    }
    s.pid = -1;
    std::error_code ec;
    std::filesystem::remove_all(s.dir, ec);
    s.slot = -1;
}

}  // namespace bench
