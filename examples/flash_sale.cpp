// SPDX-License-Identifier: BSL-1.0
// flash_sale: several processes sell a limited stock of coupons, kept correct by one redlock lock.
//
// The stock lives in a plain file and every sale is a deliberately non-atomic read-modify-write:
// read the count, do a little work (1 ms), write count - 1 and append "<buyer> <coupon>" to the
// sales log. Without the lock two buyers read the same count and sell the same coupon; with it
// every coupon is sold exactly once.
//
//   flash_sale --nodes URL,URL,... --stock N --buyers B [--dir D] [--no-lock]
//
// The coordinator (this invocation) writes the stock file, starts B buyer processes of this same
// binary (`--buyer I` plus the same arguments), waits for them, then checks the sales log.
// Exit status: 0 when every coupon was sold exactly once and the stock ends at 0, 1 otherwise,
// 2 for bad arguments.

#include <redlock/redlock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr const char* lock_name = "flash-sale:coupon";
constexpr auto work_time = 1ms;  // the "business logic" between reading and writing the stock
constexpr int max_think_ms = 8;  // a buyer's pause between two purchases, outside the lock
constexpr int max_failures = 3;  // acquire failures in a row (other than `taken`) before giving up
constexpr long max_stock = 1'000'000;
constexpr long max_buyers = 64;

struct arguments
{
    std::string nodes;  // comma-separated URLs, as given
    std::vector<std::string> urls;
    long stock = -1;
    long buyers = -1;
    std::string dir;    // empty: a fresh temporary directory
    long buyer_id = 0;  // 0: this is the coordinator
    bool no_lock = false;
};

// One write(2) per message, so that lines of concurrent buyers never interleave.
void say(const std::string& text)
{
    std::string line = text;
    if (line.empty() || line.back() != '\n') {
        line += '\n';
    }
    std::string_view rest = line;
    while (!rest.empty()) {
        const ssize_t n = ::write(STDOUT_FILENO, rest.data(), rest.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        rest.remove_prefix(static_cast<std::size_t>(n));
    }
}

[[noreturn]] void usage(const std::string& problem, int status = 2)
{
    std::fprintf(status == 0 ? stdout : stderr,
                 "flash_sale: %s\n"
                 "usage: flash_sale --nodes URL[,URL...] --stock N --buyers B [--dir D] "
                 "[--no-lock]\n"
                 "  --nodes    Redis masters, e.g. redis://127.0.0.1:7001,redis://127.0.0.1:7002\n"
                 "             (one node: single-instance lock; N nodes: Redlock, quorum N/2+1)\n"
                 "  --stock    coupons for sale, 0..%ld\n"
                 "  --buyers   buyer processes to start, 1..%ld\n"
                 "  --dir      where the stock file and sales log go (default: a new temp dir,\n"
                 "             removed after a successful sale)\n"
                 "  --no-lock  sell without the lock, to see the overselling it prevents\n",
                 problem.c_str(), max_stock, max_buyers);
    std::exit(status);
}

std::optional<long> parse_number(std::string_view s)
{
    long v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) {
        return std::nullopt;
    }
    return v;
}

std::vector<std::string> split_urls(const std::string& list)
{
    std::vector<std::string> out;
    std::string_view rest = list;
    while (true) {
        const auto comma = rest.find(',');
        out.emplace_back(rest.substr(0, comma));
        if (comma == std::string_view::npos) {
            break;
        }
        rest.remove_prefix(comma + 1);
    }
    return out;
}

arguments parse_arguments(int argc, char** argv)
{
    arguments a;
    auto number = [](std::string_view flag, const char* value, long lo, long hi) {
        auto v = parse_number(value);
        if (!v || *v < lo || *v > hi) {
            usage(std::string(flag) + " wants a whole number in " + std::to_string(lo) + ".." +
                  std::to_string(hi) + ", not '" + value + "'");
        }
        return *v;
    };
    for (int i = 1; i < argc; ++i) {
        const std::string_view flag = argv[i];
        if (flag == "--help" || flag == "-h") {
            usage("sells a limited stock of coupons from several processes under one lock", 0);
        }
        if (flag == "--no-lock") {
            a.no_lock = true;
            continue;
        }
        if (flag != "--nodes" && flag != "--stock" && flag != "--buyers" && flag != "--dir" &&
            flag != "--buyer") {
            usage("unknown argument '" + std::string(flag) + "'");
        }
        if (i + 1 >= argc) {
            usage(std::string(flag) + " needs a value");
        }
        const char* value = argv[++i];
        if (flag == "--nodes") {
            a.nodes = value;
        } else if (flag == "--stock") {
            a.stock = number(flag, value, 0, max_stock);
        } else if (flag == "--buyers") {
            a.buyers = number(flag, value, 1, max_buyers);
        } else if (flag == "--dir") {
            a.dir = value;
            if (a.dir.empty()) {
                usage("--dir needs a non-empty path");
            }
        } else {
            a.buyer_id = number(flag, value, 1, max_buyers);
        }
    }
    if (a.nodes.empty()) {
        usage("--nodes is required");
    }
    if (a.stock < 0) {
        usage("--stock is required");
    }
    if (a.buyers < 0) {
        usage("--buyers is required");
    }
    if (a.buyer_id > a.buyers) {
        usage("--buyer must be in 1..--buyers");
    }
    if (a.buyer_id != 0 && a.dir.empty()) {
        usage("--buyer needs --dir");
    }
    a.urls = split_urls(a.nodes);
    // Parse and check the nodes here, so that a typo is a usage error, not B failing buyers.
    try {
        const redlock::config cfg = redlock::config::from_urls(a.urls);
        if (std::string problem = redlock::validate(cfg); !problem.empty()) {
            usage("--nodes: " + problem);
        }
    } catch (const boost::system::system_error& e) {
        usage(std::string("--nodes: ") + e.what());
    }
    return a;
}

// ---- the shop: a stock file and a sales log, with no protection of their own ----

fs::path stock_file(const std::string& dir)
{
    return fs::path(dir) / "stock";
}

fs::path sales_log(const std::string& dir)
{
    return fs::path(dir) / "sales.log";
}

long read_stock(const fs::path& file)
{
    std::ifstream in(file);
    std::string text;
    if (!in || !std::getline(in, text)) {
        throw std::runtime_error("cannot read " + file.string());
    }
    auto v = parse_number(text);
    if (!v || *v < 0) {
        throw std::runtime_error(file.string() + " holds '" + text + "', not a stock count");
    }
    return *v;
}

// Each read and each write of the count is atomic (a write goes to a temporary file that is
// renamed over the stock file, so a reader never sees half a number), as with a database row;
// the read-modify-write as a whole is not.
void write_stock(const fs::path& file, long count)
{
    const fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << count << '\n';
        out.flush();
        if (!out) {
            throw std::runtime_error("cannot write " + tmp.string());
        }
    }
    fs::rename(tmp, file);
}

// One write(2) on an O_APPEND descriptor: even racing buyers never mix up their lines.
void append_sale(const fs::path& file, long buyer, long coupon)
{
    const std::string line = std::to_string(buyer) + ' ' + std::to_string(coupon) + '\n';
    const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        throw std::system_error(errno, std::generic_category(), "open " + file.string());
    }
    const ssize_t n = ::write(fd, line.data(), line.size());
    const int err = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(line.size())) {
        throw std::system_error(n < 0 ? err : EIO, std::generic_category(),
                                "append to " + file.string());
    }
}

// ---- a buyer process ----

struct buyer_result
{
    long bought = 0;
    bool ok = true;
};

std::string with_report(const std::string& what, const redlock::report& report)
{
    std::string text = what;
    if (!report.nodes.empty()) {
        text += "\n  per node (attempt " + std::to_string(report.attempts) + "):\n";
        std::istringstream lines(report.to_string());
        for (std::string line; std::getline(lines, line);) {
            text += "    " + line + "\n";
        }
    }
    return text;
}

asio::awaitable<buyer_result> buy(const arguments& args, redlock::client& client)
{
    const std::string me = "buyer " + std::to_string(args.buyer_id);
    const fs::path stock = stock_file(args.dir);
    const fs::path log = sales_log(args.dir);
    redlock::mutex mutex = client.make_mutex(lock_name, {.expiry = 2s});
    asio::steady_timer timer(co_await asio::this_coro::executor);
    std::mt19937 rng(std::random_device{}());
    std::uniform_int_distribution<int> think(0, max_think_ms);
    buyer_result result;
    int failures = 0;

    // A safety net for --no-lock: a buyer never sells more than the whole stock.
    while (result.bought < args.stock) {
        redlock::guard guard;
        if (!args.no_lock) {
            boost::system::error_code ec;
            try {
                guard = co_await mutex.acquire();
            } catch (const boost::system::system_error& e) {
                ec = e.code();
            }
            if (ec) {
                // The guard a failed acquire completes with carries the same report, but
                // co_await turns the error into an exception and drops it; the mutex keeps it.
                say(with_report(me + ": acquire failed: " + ec.message(), mutex.last_report()));
                if (ec == redlock::error::taken) {
                    continue;  // the others are selling: the stock shrinks, keep trying
                }
                if (++failures >= max_failures) {
                    say(me + ": giving up after " + std::to_string(failures) +
                        " failed acquires in a row");
                    result.ok = false;
                    break;
                }
                continue;
            }
            failures = 0;
        }

        const long count = read_stock(stock);
        const bool sold_out = count == 0;
        if (!sold_out) {
            timer.expires_after(work_time);  // the work that makes the read-modify-write racy
            co_await timer.async_wait(asio::deferred);
            if (!args.no_lock && std::chrono::steady_clock::now() >= guard.until()) {
                // Past until() another buyer may hold the lock already: writing now would be
                // exactly the lost update the lock is for. Let this sale go.
                say(me + ": lock validity ran out before the write; sale of coupon " +
                    std::to_string(count) + " abandoned");
            } else {
                write_stock(stock, count - 1);
                append_sale(log, args.buyer_id, count);
                ++result.bought;
            }
        }

        if (!args.no_lock) {
            boost::system::error_code ec;
            try {
                co_await guard.release();
            } catch (const boost::system::system_error& e) {
                ec = e.code();
            }
            if (ec) {
                // Anything written above was written within the validity; the keys expired or
                // were lost since (e.g. a node restarted without persistence).
                say(with_report(me + ": release failed: " + ec.message(), guard.last_report()));
            }
        }
        if (sold_out) {
            break;
        }
        timer.expires_after(std::chrono::milliseconds(think(rng)));  // the next customer
        co_await timer.async_wait(asio::deferred);
    }
    co_return result;
}

int run_buyer(const arguments& args)
{
    asio::io_context io;
    redlock::client client(io.get_executor(), redlock::config::from_urls(args.urls));
    const std::string me = "buyer " + std::to_string(args.buyer_id);
    buyer_result result;
    std::exception_ptr failure;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            try {
                result = co_await buy(args, client);
            } catch (...) {
                failure = std::current_exception();
            }
            // Waits for releases that guard destructors may have scheduled.
            co_await client.async_shutdown(asio::deferred);
        },
        asio::detached);
    io.run();
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            say(me + ": stopped: " + e.what() + " (bought " + std::to_string(result.bought) + ")");
        }
        return 1;
    }
    say(me + ": bought " + std::to_string(result.bought) + " coupon" +
        (result.bought == 1 ? "" : "s"));
    return result.ok ? 0 : 1;
}

// ---- the coordinator ----

pid_t spawn_buyer(const arguments& args, long id)
{
    std::vector<std::string> strings = {"flash_sale",
                                        "--buyer",
                                        std::to_string(id),
                                        "--nodes",
                                        args.nodes,
                                        "--stock",
                                        std::to_string(args.stock),
                                        "--buyers",
                                        std::to_string(args.buyers),
                                        "--dir",
                                        args.dir};
    if (args.no_lock) {
        strings.emplace_back("--no-lock");
    }
    std::vector<char*> argv;
    for (auto& s : strings) {
        argv.push_back(s.data());
    }
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::execv("/proc/self/exe", argv.data());
        const char msg[] = "flash_sale: cannot exec /proc/self/exe for a buyer\n";
        [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
        ::_exit(127);
    }
    if (pid < 0) {
        throw std::system_error(errno, std::generic_category(), "fork");
    }
    return pid;
}

std::string describe_exit(int status)
{
    if (WIFEXITED(status)) {
        return "exited with status " + std::to_string(WEXITSTATUS(status));
    }
    if (WIFSIGNALED(status)) {
        return std::string("killed by signal ") + strsignal(WTERMSIG(status));
    }
    return "ended with wait status " + std::to_string(status);
}

int run_coordinator(arguments args)
{
    bool own_dir = false;
    if (args.dir.empty()) {
        std::string tmpl = (fs::temp_directory_path() / "flash-sale-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) {
            throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
        }
        args.dir = tmpl;
        own_dir = true;
    } else {
        fs::create_directories(args.dir);
    }
    const fs::path stock = stock_file(args.dir);
    const fs::path log = sales_log(args.dir);
    write_stock(stock, args.stock);
    std::ofstream(log, std::ios::trunc).close();

    const std::size_t n = args.urls.size();
    say("flash sale: " + std::to_string(args.stock) + " coupons, " + std::to_string(args.buyers) +
        " buyer processes, lock \"" + lock_name + "\" on " + std::to_string(n) + " node" +
        (n == 1 ? " (single instance)" : "s (Redlock, quorum " + std::to_string(n / 2 + 1) + ")") +
        (args.no_lock ? ", LOCK DISABLED (--no-lock)" : "") + "\nshop files in " + args.dir);

    std::vector<std::string> problems;
    std::vector<pid_t> pids;
    try {
        for (long id = 1; id <= args.buyers; ++id) {
            pids.push_back(spawn_buyer(args, id));
        }
    } catch (const std::exception& e) {
        problems.push_back(std::string("cannot start all buyers: ") + e.what());
    }
    for (std::size_t i = 0; i < pids.size(); ++i) {
        int status = 0;
        while (::waitpid(pids[i], &status, 0) < 0) {
            if (errno != EINTR) {
                throw std::system_error(errno, std::generic_category(), "waitpid");
            }
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            problems.push_back("buyer " + std::to_string(i + 1) + " " + describe_exit(status));
        }
    }

    // Check the sales log: one line per sale, each coupon number 1..stock at most once.
    std::map<long, long> per_buyer;
    for (long id = 1; id <= args.buyers; ++id) {
        per_buyer[id] = 0;
    }
    std::map<long, std::vector<long>> buyers_of;  // coupon -> who sold it
    long sold = 0;
    std::ifstream in(log);
    std::size_t line_no = 0;
    for (std::string line; std::getline(in, line);) {
        ++line_no;
        std::istringstream fields(line);
        long buyer = 0;
        long coupon = 0;
        std::string extra;
        if (!(fields >> buyer >> coupon) || (fields >> extra) || !per_buyer.contains(buyer) ||
            coupon < 1 || coupon > args.stock) {
            problems.push_back("sales log line " + std::to_string(line_no) + " is malformed: '" +
                               line + "'");
            continue;
        }
        ++per_buyer[buyer];
        buyers_of[coupon].push_back(buyer);
        ++sold;
    }
    for (const auto& [coupon, sellers] : buyers_of) {
        if (sellers.size() > 1) {
            std::string who;
            for (long b : sellers) {
                who += (who.empty() ? "" : ", ") + std::to_string(b);
            }
            problems.push_back("coupon " + std::to_string(coupon) + " sold " +
                               std::to_string(sellers.size()) + " times (buyers " + who + ")");
        }
    }
    const long left = read_stock(stock);

    std::string summary = "summary:\n";
    for (const auto& [buyer, count] : per_buyer) {
        summary += "  buyer " + std::to_string(buyer) + ": " + std::to_string(count) + "\n";
    }
    summary += "  total sold: " + std::to_string(sold) + ", stock: " + std::to_string(args.stock) +
               ", left in stock file: " + std::to_string(left) + "\n";
    if (sold == args.stock) {
        summary += "sold == stock: OK\n";
    } else {
        summary += "sold == stock: FAILED (sold " + std::to_string(sold) + " of " +
                   std::to_string(args.stock) + (sold > args.stock ? ": oversold)" : ")") + "\n";
    }
    if (left != 0) {
        problems.push_back("the stock file ends at " + std::to_string(left) + ", not 0");
    }
    const std::size_t shown = 10;
    for (std::size_t i = 0; i < problems.size() && i < shown; ++i) {
        summary += "FAILED: " + problems[i] + "\n";
    }
    if (problems.size() > shown) {
        summary += "FAILED: ... and " + std::to_string(problems.size() - shown) + " more\n";
    }
    const bool ok = sold == args.stock && problems.empty();
    if (ok && own_dir) {
        std::error_code ignored;
        fs::remove_all(args.dir, ignored);
    } else if (!ok) {
        summary += "shop files kept in " + args.dir + "\n";
    }
    say(summary);
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv)
{
    const arguments args = parse_arguments(argc, argv);
    try {
        return args.buyer_id != 0 ? run_buyer(args) : run_coordinator(args);
    } catch (const std::exception& e) {
        say(std::string(args.buyer_id != 0 ? "buyer " + std::to_string(args.buyer_id)
                                           : "flash_sale") +
            ": " + e.what());
        return 1;
    }
}
