// SPDX-License-Identifier: BSL-1.0
#pragma once

// A byte stream to one node: a plain socket (TCP or unix) or TLS over it. The node and pub/sub
// connections read and write through this, so they need not know which one it is.

#include "core/node_error.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

namespace redlock::detail {

class stream
{
  public:
    using socket_type = boost::asio::generic::stream_protocol::socket;
    using io_result = std::tuple<boost::system::error_code, std::size_t>;

    explicit stream(const boost::asio::any_io_executor& ex) : socket_(ex) {}
    stream(stream&&) noexcept = default;
    stream& operator=(stream&&) noexcept = default;

    /// The socket underneath, to connect before `start_tls`.
    socket_type& socket() noexcept { return tls_ ? tls_->next_layer() : socket_; }

    /// Runs the TLS client handshake over the connected socket, checking the server's
    /// certificate against `server_name` when the context verifies peers. Returns what
    /// failed (`tls_failed`, `tls_mismatch`, or `connection_lost` when the connection broke
    /// off), no failure on success.
    boost::asio::awaitable<node_failure> start_tls(boost::asio::ssl::context& ctx,
                                                   const std::string& server_name,
                                                   bool verify_name);

    boost::asio::awaitable<io_result> read_some(boost::asio::mutable_buffer buffer);
    boost::asio::awaitable<io_result> write_all(boost::asio::const_buffer buffer);
    /// With `discard_unsent`, the kernel resets the connection and drops what it has not
    /// delivered yet, instead of sending it on (also after this process closed it).
    void close(bool discard_unsent = false) noexcept;

    /// The same as `read_some` and `write_all`, completing `handler` (on the stream's
    /// executor unless it has one of its own) instead of resuming a coroutine.
    template <class Handler>
    void async_read_some(boost::asio::mutable_buffer buffer, Handler&& handler)
    {
        if (tls_) {
            tls_->async_read_some(buffer, std::forward<Handler>(handler));
        } else {
            socket_.async_read_some(buffer, std::forward<Handler>(handler));
        }
    }
    template <class Handler>
    void async_write_all(boost::asio::const_buffer buffer, Handler&& handler)
    {
        if (tls_) {
            boost::asio::async_write(*tls_, buffer, std::forward<Handler>(handler));
        } else {
            boost::asio::async_write(socket_, buffer, std::forward<Handler>(handler));
        }
    }

  private:
    socket_type socket_;
    std::unique_ptr<boost::asio::ssl::stream<socket_type>> tls_;
};

/// A client TLS context from the config's TLS settings. Throws `std::runtime_error` naming
/// the file that could not be loaded.
std::shared_ptr<boost::asio::ssl::context> make_tls_context(const std::string& ca_file,
                                                            const std::string& cert_file,
                                                            const std::string& key_file,
                                                            bool verify_peer);

}  // namespace redlock::detail
