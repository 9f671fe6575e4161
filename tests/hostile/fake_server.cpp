// SPDX-License-Identifier: BSL-1.0
#include "fake_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace redlock::test {

namespace asio = boost::asio;
using asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

fake_session::fake_session(tcp::socket socket, fake_server& server, std::size_t index)
    : socket_(std::move(socket)), server_(server), index_(index)
{
}

int fake_session::parse(command_args& out)
{
    // A command is "*<n>\r\n" followed by n bulk strings "$<len>\r\n<bytes>\r\n".
    std::size_t pos = 0;
    auto read_number = [&](char prefix, long long& n) -> int {
        if (pos >= buffer_.size()) {
            return 0;
        }
        if (buffer_[pos] != prefix) {
            return -1;
        }
        auto eol = buffer_.find("\r\n", pos);
        if (eol == std::string::npos) {
            return buffer_.size() - pos > 32 ? -1 : 0;
        }
        auto [end, ec] = std::from_chars(buffer_.data() + pos + 1, buffer_.data() + eol, n);
        if (ec != std::errc() || end != buffer_.data() + eol || n < 0) {
            return -1;
        }
        pos = eol + 2;
        return 1;
    };
    long long count = 0;
    if (int r = read_number('*', count); r != 1) {
        return r;
    }
    command_args args;
    for (long long i = 0; i < count; ++i) {
        long long len = 0;
        if (int r = read_number('$', len); r != 1) {
            return r;
        }
        if (buffer_.size() - pos < static_cast<std::size_t>(len) + 2) {
            return 0;
        }
        args.emplace_back(buffer_, pos, static_cast<std::size_t>(len));
        pos += static_cast<std::size_t>(len) + 2;
    }
    buffer_.erase(0, pos);
    out = std::move(args);
    return 1;
}

asio::awaitable<std::optional<command_args>> fake_session::read_command()
{
    std::array<char, 4096> chunk;
    for (;;) {
        command_args cmd;
        int r = parse(cmd);
        if (r == 1) {
            std::lock_guard lock(server_.mutex_);
            server_.commands_.push_back(cmd);
            co_return cmd;
        }
        if (r < 0) {
            close();
            co_return std::nullopt;
        }
        auto [ec, n] = co_await socket_.async_read_some(asio::buffer(chunk), use_tuple);
        if (ec) {
            co_return std::nullopt;
        }
        buffer_.append(chunk.data(), n);
    }
}

asio::awaitable<bool> fake_session::send(std::string_view bytes)
{
    auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(bytes), use_tuple);
    server_.sent_ += n;
    co_return !ec;
}

asio::awaitable<bool> fake_session::send_slowly(std::string_view bytes,
                                                std::chrono::milliseconds gap)
{
    for (char c : bytes) {
        co_await sleep(gap);
        if (!co_await send(std::string_view(&c, 1))) {
            co_return false;
        }
    }
    co_return true;
}

asio::awaitable<void> fake_session::ignore_all()
{
    std::array<char, 4096> chunk;
    for (;;) {
        auto [ec, n] = co_await socket_.async_read_some(asio::buffer(chunk), use_tuple);
        if (ec) {
            co_return;
        }
    }
}

asio::awaitable<void> fake_session::sleep(std::chrono::milliseconds d)
{
    asio::steady_timer t(socket_.get_executor(), d);
    co_await t.async_wait(use_tuple);
}

void fake_session::close()
{
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
}

fake_server::fake_server(script s) : script_(std::move(s))
{
    io_.emplace();
    acceptor_.emplace(*io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port_ = acceptor_->local_endpoint().port();
    asio::co_spawn(*io_, accept_loop(), asio::detached);
    thread_ = std::thread([this] { io_->run(); });
}

fake_server::~fake_server()
{
    io_->stop();
    thread_.join();
    // Destroys the suspended scripts, and with them their sockets.
    acceptor_.reset();
    io_.reset();
}

asio::awaitable<void> fake_server::accept_loop()
{
    for (;;) {
        auto [ec, socket] = co_await acceptor_->async_accept(use_tuple);
        if (ec) {
            co_return;
        }
        boost::system::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        auto session = std::make_shared<fake_session>(std::move(socket), *this, accepted_++);
        asio::co_spawn(
            *io_, [this, session]() { return script_(*session); },
            [this](std::exception_ptr e) {
                if (!e) {
                    return;
                }
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& x) {
                    std::lock_guard lock(mutex_);
                    failures_.emplace_back(x.what());
                }
            });
    }
}

redlock::node fake_server::node() const
{
    redlock::node n;
    n.host = "127.0.0.1";
    n.port = port_;
    return n;
}

std::string fake_server::endpoint() const
{
    return "127.0.0.1:" + std::to_string(port_);
}

std::vector<command_args> fake_server::commands() const
{
    std::lock_guard lock(mutex_);
    return commands_;
}

std::size_t fake_server::count(std::string_view name) const
{
    auto same = [name](const std::string& s) {
        return std::equal(s.begin(), s.end(), name.begin(), name.end(), [](char a, char b) {
            return std::toupper(static_cast<unsigned char>(a)) ==
                   std::toupper(static_cast<unsigned char>(b));
        });
    };
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(
        std::count_if(commands_.begin(), commands_.end(),
                      [&](const command_args& c) { return !c.empty() && same(c[0]); }));
}

std::vector<std::string> fake_server::script_failures() const
{
    std::lock_guard lock(mutex_);
    return failures_;
}

fake_server::script answer_each(std::function<std::string(const command_args&)> reply)
{
    // The function lives in the returned closure, which the server keeps for its lifetime.
    return [reply = std::move(reply)](fake_session& s) -> asio::awaitable<void> {
        while (auto cmd = co_await s.read_command()) {
            std::string out = reply(*cmd);
            if (!out.empty() && !co_await s.send(out)) {
                co_return;
            }
        }
    };
}

std::string bulk(std::string_view s)
{
    return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

std::string integer(long long n)
{
    return ":" + std::to_string(n) + "\r\n";
}

std::string mini_redis::answer(const command_args& cmd)
{
    if (cmd.empty()) {
        return "-ERR empty command\r\n";
    }
    std::string name = cmd[0];
    for (char& c : name) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    std::lock_guard lock(mutex_);
    if (name == "SET" && cmd.size() >= 3) {
        bool nx = std::find(cmd.begin() + 3, cmd.end(), "NX") != cmd.end();
        if (nx && keys_.count(cmd[1]) != 0) {
            return "$-1\r\n";
        }
        keys_[cmd[1]] = cmd[2];
        return "+OK\r\n";
    }
    if (name == "GET" && cmd.size() == 2) {
        auto it = keys_.find(cmd[1]);
        return it == keys_.end() ? "$-1\r\n" : bulk(it->second);
    }
    const std::size_t keys = cmd.size() > 2 ? std::strtoul(cmd[2].c_str(), nullptr, 10) : 0;
    const std::size_t args = cmd.size() > 3 + keys ? cmd.size() - 3 - keys : 0;
    if ((name == "EVALSHA" || name == "EVAL") && (keys == 1 || keys == 3) && args >= 1) {
        // KEYS[1] = cmd[3], ARGV[1] its value. A release has no other argument (quiet) or the
        // publish command as ARGV[2] (and, with 3 keys, the registry of waiting clients, which
        // is not modelled); an extend has ARGV[2] (ms) and ARGV[3] (recreate).
        const std::string& key = cmd[3];
        const std::string& value = cmd[3 + keys];
        const bool release = args == 1 || cmd[4 + keys].ends_with("PUBLISH");
        auto it = keys_.find(key);
        if (it == keys_.end()) {
            if (!release && args == 3 && cmd[5 + keys] == "1") {
                keys_[key] = value;
                return integer(1);
            }
            return integer(0);
        }
        if (it->second != value) {
            return integer(-1);
        }
        if (release) {
            keys_.erase(it);
        }
        return integer(1);
    }
    if ((name == "EVALSHA" || name == "EVAL") && keys == 2 && args == 1) {
        return integer(1);  // a client leaves the registry of waiting clients: not modelled
    }
    if (name == "PING") {
        return "+PONG\r\n";
    }
    if (name == "AUTH" || name == "SELECT") {
        return "+OK\r\n";
    }
    return "-ERR unknown command '" + cmd[0] + "'\r\n";
}

std::optional<std::string> mini_redis::get(const std::string& key) const
{
    std::lock_guard lock(mutex_);
    auto it = keys_.find(key);
    if (it == keys_.end()) {
        return std::nullopt;
    }
    return it->second;
}

namespace {

std::size_t status_field(std::string_view field)
{
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line)) {
        if (line.starts_with(field) && line.size() > field.size() && line[field.size()] == ':') {
            return std::stoull(line.substr(field.size() + 1)) * 1024;  // "   1234 kB"
        }
    }
    return 0;
}

}  // namespace

std::size_t resident_bytes()
{
    return status_field("VmRSS");
}
std::size_t virtual_bytes()
{
    return status_field("VmSize");
}
std::size_t peak_resident_bytes()
{
    return status_field("VmHWM");
}

void reset_peak_resident()
{
    // "5" resets the peak resident set size (Linux >= 4.0).
    std::ofstream("/proc/self/clear_refs") << "5";
}

}  // namespace redlock::test
