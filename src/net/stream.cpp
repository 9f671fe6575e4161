// SPDX-License-Identifier: BSL-1.0
#include "net/stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <stdexcept>

namespace redlock::detail {

namespace asio = boost::asio;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

asio::awaitable<node_failure> stream::start_tls(asio::ssl::context& ctx,
                                                const std::string& server_name, bool verify_name)
{
    tls_ = std::make_unique<asio::ssl::stream<socket_type>>(std::move(socket_), ctx);
    // SNI, and the name the certificate must carry.
    if (!SSL_set_tlsext_host_name(tls_->native_handle(), server_name.c_str())) {
        co_return node_failure{node_errc::tls_failed,
                               "TLS: cannot set the server name '" + server_name + "'"};
    }
    if (verify_name) {
        tls_->set_verify_callback(asio::ssl::host_name_verification(server_name));
    }
    auto [ec] = co_await tls_->async_handshake(asio::ssl::stream_base::client, use_tuple);
    if (!ec) {
        co_return node_failure{};
    }
    if (ec == asio::ssl::error::stream_truncated ||
        ec.category() != asio::error::get_ssl_category()) {
        // The connection broke off (a reset, an early close): that may pass.
        co_return node_failure{node_errc::connection_lost,
                               "TLS handshake interrupted: " + ec.message()};
    }
    // The server's or our TLS refused the other side (a certificate, the protocol): that fails
    // again the same way on every try.
    const bool not_tls =
        ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_WRONG_VERSION_NUMBER;
    const std::string_view hint =
        not_tls ? tls_to_plain_hint
                : "check the CA file, the server's certificate and the node's host name";
    co_return node_failure{
        not_tls ? node_errc::tls_mismatch : node_errc::tls_failed,
        "TLS handshake failed: " + ec.message() + " (" + std::string(hint) + ")"};
}

asio::awaitable<stream::io_result> stream::read_some(asio::mutable_buffer buffer)
{
    if (tls_) {
        co_return co_await tls_->async_read_some(buffer, use_tuple);
    }
    co_return co_await socket_.async_read_some(buffer, use_tuple);
}

asio::awaitable<stream::io_result> stream::write_all(asio::const_buffer buffer)
{
    if (tls_) {
        co_return co_await asio::async_write(*tls_, buffer, use_tuple);
    }
    co_return co_await asio::async_write(socket_, buffer, use_tuple);
}

void stream::close(bool discard_unsent) noexcept
{
    boost::system::error_code ignored;
    if (discard_unsent) {
        // A linger time of 0: the close sends a reset and frees the send queue.
        socket().set_option(asio::socket_base::linger(true, 0), ignored);
    }
    // No TLS close_notify: the connection is being given up, not shut down politely.
    socket().close(ignored);
}

std::shared_ptr<asio::ssl::context> make_tls_context(const std::string& ca_file,
                                                     const std::string& cert_file,
                                                     const std::string& key_file, bool verify_peer)
{
    auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
    boost::system::error_code ec;
    if (!ca_file.empty()) {
        if (ctx->load_verify_file(ca_file, ec); ec) {
            throw std::runtime_error("cannot load the TLS CA file '" + ca_file +
                                     "': " + ec.message());
        }
    } else if (ctx->set_default_verify_paths(ec); ec) {
        throw std::runtime_error("cannot load the system's TLS CA certificates: " + ec.message());
    }
    if (!cert_file.empty()) {
        if (ctx->use_certificate_chain_file(cert_file, ec); ec) {
            throw std::runtime_error("cannot load the TLS certificate '" + cert_file +
                                     "': " + ec.message());
        }
    }
    if (!key_file.empty()) {
        if (ctx->use_private_key_file(key_file, asio::ssl::context::pem, ec); ec) {
            throw std::runtime_error("cannot load the TLS private key '" + key_file +
                                     "': " + ec.message());
        }
    }
    ctx->set_verify_mode(verify_peer ? asio::ssl::verify_peer : asio::ssl::verify_none);
    return ctx;
}

}  // namespace redlock::detail
