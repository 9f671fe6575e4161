#pragma once

// A tiny synchronous Redis client for `redlock status`: one connection over POSIX sockets
// (TLS through OpenSSL for rediss://), RESP2 requests and replies, one deadline for
// everything. It does not pipeline, and it is not part of the library (whose public API has
// no raw commands).

#include <redlock/config.hpp>
#include <redlock/node.hpp>

#include <chrono>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct ssl_ctx_st;
struct ssl_st;

namespace redlock_cli {

/// A failure talking to one node; the message never contains credentials.
class resp_error : public std::runtime_error
{
  public:
    using std::runtime_error::runtime_error;
};

/// One RESP2 reply.
struct resp_value
{
    enum class kind { simple, error, integer, bulk, nil, array };
    kind type = kind::nil;
    /// simple, error and bulk: the text.
    std::string text;
    /// integer: the value.
    long long integer = 0;
    /// array: the elements.
    std::vector<resp_value> elements;
};

class resp_connection
{
  public:
    /// Connects to `n` (TCP, TLS with `tls` for rediss://, or a unix socket) and
    /// authenticates / selects its database. Every step, and every later command, must be
    /// done by `deadline`. Throws resp_error.
    resp_connection(const redlock::node& n, const redlock::tls_settings& tls,
                    std::chrono::steady_clock::time_point deadline);
    ~resp_connection();
    resp_connection(const resp_connection&) = delete;
    resp_connection& operator=(const resp_connection&) = delete;

    /// Sends one command and returns its reply (error replies included). Throws resp_error
    /// on I/O failures, protocol errors or the deadline.
    resp_value command(std::initializer_list<std::string_view> args);

  private:
    void open(const redlock::node& n, const redlock::tls_settings& tls);
    void start_tls(const redlock::node& n, const redlock::tls_settings& tls);
    // Retries a TLS call while OpenSSL wants to read or write; returns its result, or throws
    // `what` with OpenSSL's reason.
    template <class F>
    int tls_io(F call, const char* what);
    void close() noexcept;
    void send_all(const std::string& data);
    void read_more();
    void wait_for(short events);

    int fd_ = -1;
    ssl_ctx_st* ctx_ = nullptr;
    ssl_st* ssl_ = nullptr;
    std::chrono::steady_clock::time_point deadline_;
    std::string in_;
};

}  // namespace redlock_cli
