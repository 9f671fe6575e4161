// SPDX-License-Identifier: BSL-1.0
#pragma once

// A fake Redis server for hostile-input tests: an Asio TCP acceptor on 127.0.0.1 (port 0),
// run on its own thread, whose every connection is handled by a script. Scripts read the
// client's commands and answer with whatever bytes the test wants, including bytes a real
// Redis never sends.

#include <redlock/node.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace redlock::test {

/// One command as the client sent it: its arguments, binary-safe.
using command_args = std::vector<std::string>;

class fake_server;

/// One accepted connection, as a script sees it. Everything runs on the server's thread.
class fake_session
{
  public:
    fake_session(boost::asio::ip::tcp::socket socket, fake_server& server, std::size_t index);

    /// 0 for the first connection the server accepted, then 1, 2, ...
    std::size_t index() const noexcept { return index_; }

    /// The next command the client sent; nullopt once the client closed the connection (or
    /// sent something that is not a RESP array of bulk strings). Recorded in the server.
    boost::asio::awaitable<std::optional<command_args>> read_command();
    /// Writes `bytes`; false once the client is gone.
    boost::asio::awaitable<bool> send(std::string_view bytes);
    /// Writes `bytes` one byte at a time, waiting `gap` before each.
    boost::asio::awaitable<bool> send_slowly(std::string_view bytes, std::chrono::milliseconds gap);
    /// Reads and drops everything until the client closes: a server that never answers.
    boost::asio::awaitable<void> ignore_all();
    boost::asio::awaitable<void> sleep(std::chrono::milliseconds d);
    /// Closes the connection (both directions) at once.
    void close();

  private:
    // Takes one complete command out of buffer_: 1 done, 0 need more bytes, -1 malformed.
    int parse(command_args& out);

    boost::asio::ip::tcp::socket socket_;
    fake_server& server_;
    std::size_t index_;
    std::string buffer_;
};

/// The fake server. Starts listening in the constructor; the destructor stops its thread and
/// drops every connection.
class fake_server
{
  public:
    using script = std::function<boost::asio::awaitable<void>(fake_session&)>;

    explicit fake_server(script s);
    ~fake_server();
    fake_server(const fake_server&) = delete;
    fake_server& operator=(const fake_server&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    /// The node to put into a redlock::config.
    redlock::node node() const;
    /// "127.0.0.1:port", as reports name the node.
    std::string endpoint() const;

    /// Every command received so far, over all connections, in order of arrival.
    std::vector<command_args> commands() const;
    /// How many received commands are named `name` (case-insensitive).
    std::size_t count(std::string_view name) const;
    /// Connections accepted so far.
    std::size_t connections() const noexcept { return accepted_.load(); }
    /// Bytes written to clients so far.
    std::uint64_t bytes_sent() const noexcept { return sent_.load(); }
    /// Exceptions that escaped a script (a test bug rather than a client bug).
    std::vector<std::string> script_failures() const;

  private:
    friend class fake_session;
    boost::asio::awaitable<void> accept_loop();

    script script_;
    std::optional<boost::asio::io_context> io_;
    std::optional<boost::asio::ip::tcp::acceptor> acceptor_;
    std::uint16_t port_ = 0;
    std::thread thread_;
    mutable std::mutex mutex_;
    std::vector<command_args> commands_;
    std::vector<std::string> failures_;
    std::atomic<std::size_t> accepted_{0};
    std::atomic<std::uint64_t> sent_{0};
};

/// A script that answers every command with `reply(command)`, sent in one write; an empty
/// answer sends nothing for that command.
fake_server::script answer_each(std::function<std::string(const command_args&)> reply);

/// What a real Redis answers to the lock protocol, from an in-memory table: SET key value NX
/// PX ms, GET, and the release and extend scripts (EVALSHA or EVAL, told apart by their
/// number of arguments). TTLs and the registry of waiting clients are not modelled.
/// Thread-safe.
class mini_redis
{
  public:
    std::string answer(const command_args& cmd);
    std::optional<std::string> get(const std::string& key) const;

  private:
    mutable std::mutex mutex_;
    std::map<std::string, std::string> keys_;
};

/// Wire forms of replies.
std::string bulk(std::string_view s);
std::string integer(long long n);

/// Memory of this process, from /proc/self/status.
std::size_t resident_bytes();
std::size_t virtual_bytes();
/// Peak resident set since the last `reset_peak_resident()`.
std::size_t peak_resident_bytes();
void reset_peak_resident();

}  // namespace redlock::test
