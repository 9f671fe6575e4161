// SPDX-License-Identifier: BSL-1.0
#include "netns.hpp"

#include "common/redis_server.hpp"
#include "process_io.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <thread>

namespace redlock::faults::netns {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

constexpr std::string_view name_prefix = "rlpart";
constexpr const char* netns_dir = "/run/netns";
constexpr auto server_start_limit = 5s;

// `name` as found on PATH (execve does not search it).
std::string on_path(const std::string& name)
{
    std::string_view path = std::getenv("PATH") ? std::getenv("PATH") : "";
    while (!path.empty()) {
        auto dir = path.substr(0, path.find(':'));
        path.remove_prefix(std::min(path.size(), dir.size() + 1));
        auto candidate = std::string(dir.empty() ? "." : dir) + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/"})
        if (::access((dir + name).c_str(), X_OK) == 0)
            return dir + name;
    return name;
}

std::string read_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string temp_dir()
{
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/redlock-netns-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
        throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
    return tmpl;
}

std::string joined(const std::vector<std::string>& args)
{
    std::string out;
    for (const auto& a : args)
        out += (out.empty() ? "" : " ") + a;
    return out;
}

// Moves the calling thread into a namespace for its lifetime, and back. Only the thread
// changes namespace, and only for the sockets it creates meanwhile: those stay in the
// namespace they were made in.
class entered
{
  public:
    explicit entered(const std::string& ns)
    {
        own_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        if (own_ < 0)
            throw std::system_error(errno, std::generic_category(), "open own netns");
        const int target =
            ::open((std::string(netns_dir) + "/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
        if (target < 0 || ::setns(target, CLONE_NEWNET) != 0) {
            const int err = errno;
            if (target >= 0)
                ::close(target);
            ::close(own_);
            throw std::system_error(err, std::generic_category(), "enter netns " + ns);
        }
        ::close(target);
    }
    ~entered()
    {
        // Returning cannot fail for a namespace this thread was in a moment ago; if it did, the
        // thread would go on in the lab's namespace, where nothing else is reachable.
        if (::setns(own_, CLONE_NEWNET) != 0)
            std::abort();
        ::close(own_);
    }
    entered(const entered&) = delete;
    entered& operator=(const entered&) = delete;

  private:
    int own_ = -1;
};

bool alive(pid_t pid)
{
    return ::kill(pid, 0) == 0 || errno != ESRCH;
}

}  // namespace

std::string run_program(const std::vector<std::string>& args, std::chrono::milliseconds limit)
{
    const std::string dir = temp_dir();
    const std::string out_file = dir + "/out";
    std::vector<std::string> argv = args;
    argv.front() = on_path(argv.front());
    child c(argv, out_file);
    const bool ended = c.wait_exit(steady::now() + limit);
    const std::string out = read_file(out_file);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (!ended)
        throw std::runtime_error("`" + joined(args) + "` did not end within " +
                                 std::to_string(limit.count()) + " ms: " + out);
    if (!c.exited_ok())
        throw std::runtime_error("`" + joined(args) + "` failed (" + c.describe_status() +
                                 "): " + out);
    return out;
}

std::optional<std::string> unavailable()
{
    static const std::optional<std::string> why = []() -> std::optional<std::string> {
        if (::geteuid() != 0)
            return "network namespaces need root (euid " + std::to_string(::geteuid()) + ")";
        for (const char* tool : {"ip", "nft", "redis-server"})
            if (on_path(tool).find('/') == std::string::npos)
                return std::string(tool) + " is not installed (Debian packages iproute2, " +
                       "nftables, redis-server; scripts/setup.sh installs them)";
        const std::string probe = std::string(name_prefix) + std::to_string(::getpid()) + "probe";
        try {
            run_program({"ip", "netns", "add", probe});
        } catch (const std::exception& e) {
            return std::string("`ip netns add` fails: ") + e.what();
        }
        std::optional<std::string> problem;
        try {
            run_program({"ip", "netns", "exec", probe, "nft", "list", "tables"});
        } catch (const std::exception& e) {
            problem = std::string("nftables does not work in a namespace: ") + e.what();
        }
        try {
            run_program({"ip", "netns", "del", probe});
        } catch (const std::exception&) {
        }
        return problem;
    }();
    return why;
}

std::vector<std::string> remove_stale()
{
    std::vector<std::string> removed;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(netns_dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(name_prefix, 0) != 0)
            continue;
        // rlpart<pid>x<n>..., or rlpart<pid>probe
        const std::string rest = name.substr(name_prefix.size());
        const auto digits = rest.find_first_not_of("0123456789");
        if (digits == 0)
            continue;
        const pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, digits)));
        if (pid == ::getpid() || alive(pid))
            continue;
        try {
            run_program({"ip", "netns", "del", name});
            removed.push_back(name);
        } catch (const std::exception&) {
            // Another run removing it at the same moment; nothing to do.
        }
    }
    return removed;
}

lab::lab() : dir_(temp_dir())
{
    static std::atomic<int> labs{0};
    prefix_ = std::string(name_prefix) + std::to_string(::getpid()) + "x" +
              std::to_string(labs.fetch_add(1));
    hub_ = prefix_ + "hub";
    try {
        run_program({"ip", "netns", "add", hub_});
        namespaces_.push_back(hub_);
        run_batch(hub_,
                  "link set lo up\n"
                  "link add br0 type bridge\n"
                  "addr add 10.213.0.1/24 dev br0\n"
                  "link set br0 up\n");
        const std::string file = dir_ + "/init.nft";
        std::ofstream(file) << "table bridge part {\n"
                               "  chain forward { type filter hook forward priority 0; "
                               "policy accept; }\n"
                               "}\n";
        run_program({"ip", "netns", "exec", hub_, "nft", "-f", file});
    } catch (...) {
        remove_all();
        throw;
    }
}

lab::~lab()
{
    remove_all();
}

void lab::remove_all() noexcept
{
    // Hosts first, the hub last; deleting a namespace deletes its end of each veth, and with
    // it the other end.
    for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) {
        try {
            run_program({"ip", "netns", "del", *it});
        } catch (const std::exception&) {
            // Left for remove_stale() of a later run.
        }
    }
    namespaces_.clear();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

void lab::run_batch(const std::string& ns, const std::string& commands)
{
    const std::string file = dir_ + "/" + ns + ".batch";
    {
        std::ofstream out(file, std::ios::trunc);
        out << commands;
        if (!out)
            throw std::runtime_error("cannot write " + file);
    }
    run_program({"ip", "-n", ns, "-batch", file});
}

host lab::add_host(const std::string& name, int octet)
{
    host h{prefix_ + name, "10.213.0." + std::to_string(octet)};
    const std::string port = "p" + std::to_string(bridge_ports_++);
    run_program({"ip", "netns", "add", h.ns});
    namespaces_.push_back(h.ns);
    // Both ends are created in their namespaces: no interface appears in the suite's own.
    run_program({"ip", "link", "add", "eth0", "netns", h.ns, "type", "veth", "peer", "name", port,
                 "netns", hub_});
    run_batch(h.ns, "addr add " + h.address + "/24 dev eth0\nlink set eth0 up\nlink set lo up\n");
    run_program({"ip", "-n", hub_, "link", "set", port, "master", "br0", "up"});
    return h;
}

std::vector<std::string> lab::exec_in(const host& h, std::vector<std::string> args)
{
    std::vector<std::string> out = {on_path("ip"), "netns", "exec", h.ns};
    out.insert(out.end(), args.begin(), args.end());
    return out;
}

void lab::set_drops(const drops& d)
{
    std::string rules = "flush chain bridge part forward\n";
    if (!d.empty()) {
        std::string pairs;
        for (const auto& [from, to] : d)
            pairs += (pairs.empty() ? "" : ", ") + from + " . " + to;
        rules += "add rule bridge part forward ip saddr . ip daddr { " + pairs + " } drop\n";
    }
    const std::string file = dir_ + "/drops.nft";
    {
        std::ofstream out(file, std::ios::trunc);
        out << rules;
        if (!out)
            throw std::runtime_error("cannot write " + file);
    }
    run_program({"ip", "netns", "exec", hub_, "nft", "-f", file});
}

std::string lab::redis(const std::string& address, std::uint16_t port,
                       const std::vector<std::string>& args, std::chrono::milliseconds limit) const
{
    const timeval tv{static_cast<time_t>(limit.count() / 1000),
                     static_cast<suseconds_t>(limit.count() % 1000 * 1000)};
    std::unique_ptr<redisContext, decltype(&redisFree)> c(nullptr, &redisFree);
    {
        entered in(hub_);
        c.reset(redisConnectWithTimeout(address.c_str(), port, tv));
    }
    const std::string what = address + ":" + std::to_string(port) + " " + args.front();
    if (!c || c->err)
        throw std::runtime_error("redis " + what +
                                 ": connect: " + (c ? c->errstr : "out of memory"));
    redisSetTimeout(c.get(), tv);
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : args) {
        argv.push_back(a.data());
        lens.push_back(a.size());
    }
    std::unique_ptr<redisReply, decltype(&freeReplyObject)> r(
        static_cast<redisReply*>(
            redisCommandArgv(c.get(), static_cast<int>(args.size()), argv.data(), lens.data())),
        &freeReplyObject);
    if (!r)
        throw std::runtime_error("redis " + what + ": " + (c->errstr[0] ? c->errstr : "no reply"));
    return test::render(*r);
}

child::child(std::vector<std::string> args, const std::string& log)
    : pid_(redlock::test::spawn_child(std::move(args), {}, log))
{
}

void child::signal(int sig)
{
    if (!exited_)
        ::kill(pid_, sig);
}

bool child::wait_exit(steady::time_point deadline)
{
    while (!exited_) {
        int st = 0;
        const pid_t r = ::waitpid(pid_, &st, WNOHANG);
        if (r == pid_) {
            exited_ = true;
            status_ = st;
        } else if (steady::now() >= deadline) {
            return false;
        } else {
            std::this_thread::sleep_for(1ms);
        }
    }
    return true;
}

void child::kill()
{
    if (exited_ || pid_ < 0)
        return;
    ::kill(pid_, SIGKILL);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    exited_ = true;
    status_ = st;
}

bool child::exited_ok() const
{
    return exited_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
}

std::string child::describe_status() const
{
    return describe_exit(exited_, status_);
}

server::server(const lab& l, host h, const std::string& dir)
    : lab_(l),
      host_(std::move(h)),
      log_(dir + "/" + host_.ns + ".log"),
      process_(lab::exec_in(
                   host_, {"redis-server", "--port", std::to_string(port), "--bind", host_.address,
                           "--protected-mode", "no", "--save", "", "--appendonly", "no", "--dir",
                           dir, "--dbfilename", host_.ns + ".rdb", "--hz", "100"}),
               log_)
{
    const auto deadline = steady::now() + server_start_limit;
    std::string last;
    for (;;) {
        try {
            if (lab_.redis(host_.address, port, {"PING"}, 100ms) == "PONG")
                return;
        } catch (const std::exception& e) {
            last = e.what();
        }
        if (process_.wait_exit(steady::now()))
            throw std::runtime_error("redis-server in " + host_.ns + " exited (" +
                                     process_.describe_status() + "): " + read_file(log_));
        if (steady::now() >= deadline)
            throw std::runtime_error("redis-server in " + host_.ns +
                                     " did not answer PING within 5 s (" + last +
                                     "): " + read_file(log_));
        std::this_thread::sleep_for(5ms);
    }
}

}  // namespace redlock::faults::netns
