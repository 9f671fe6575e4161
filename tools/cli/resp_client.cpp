#include "resp_client.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

namespace redlock_cli {
namespace {

using clock = std::chrono::steady_clock;

constexpr std::size_t max_bulk = 64 * 1024 * 1024;
constexpr long long max_elements = 1 << 20;
constexpr int max_depth = 8;

std::string errno_text(int err)
{
    return std::strerror(err);
}

// The reason of OpenSSL's latest error, for messages.
std::string openssl_reason()
{
    const unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0) {
        return "unknown TLS error";
    }
    const char* reason = ERR_reason_error_string(e);
    return reason != nullptr ? reason : "TLS error " + std::to_string(e);
}

// Parses one reply starting at `pos`; nullopt when `in` does not hold all of it yet.
std::optional<resp_value> parse(const std::string& in, std::size_t& pos, int depth)
{
    if (depth > max_depth) {
        throw resp_error("protocol error: replies nested too deeply");
    }
    const auto eol = in.find("\r\n", pos);
    if (eol == std::string::npos) {
        return std::nullopt;
    }
    const char type = in[pos];
    const std::string_view line(in.data() + pos + 1, eol - pos - 1);
    const auto number = [&]() {
        long long n = 0;
        auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), n);
        if (line.empty() || ec != std::errc{} || end != line.data() + line.size()) {
            throw resp_error("protocol error: bad number in a reply");
        }
        return n;
    };
    resp_value v;
    switch (type) {
        case '+':
        case '-':
            v.type = type == '+' ? resp_value::kind::simple : resp_value::kind::error;
            v.text = std::string(line);
            pos = eol + 2;
            return v;
        case ':':
            v.type = resp_value::kind::integer;
            v.integer = number();
            pos = eol + 2;
            return v;
        case '$': {
            const long long n = number();
            if (n < 0) {
                v.type = resp_value::kind::nil;
                pos = eol + 2;
                return v;
            }
            if (static_cast<unsigned long long>(n) > max_bulk) {
                throw resp_error("protocol error: a reply is larger than 64 MiB");
            }
            const std::size_t size = static_cast<std::size_t>(n);
            if (in.size() < eol + 2 + size + 2) {
                return std::nullopt;
            }
            v.type = resp_value::kind::bulk;
            v.text = in.substr(eol + 2, size);
            pos = eol + 2 + size + 2;
            return v;
        }
        case '*': {
            const long long n = number();
            std::size_t at = eol + 2;
            if (n < 0) {
                v.type = resp_value::kind::nil;
                pos = at;
                return v;
            }
            if (n > max_elements) {
                throw resp_error("protocol error: a reply has too many elements");
            }
            v.type = resp_value::kind::array;
            for (long long i = 0; i < n; ++i) {
                auto element = parse(in, at, depth + 1);
                if (!element) {
                    return std::nullopt;
                }
                v.elements.push_back(std::move(*element));
            }
            pos = at;
            return v;
        }
        default:
            throw resp_error("protocol error: unexpected reply type (is this a Redis server?)");
    }
}

}  // namespace

resp_connection::resp_connection(const redlock::node& n, const redlock::tls_settings& tls,
                                 clock::time_point deadline)
    : deadline_(deadline)
{
    try {
        open(n, tls);
    } catch (...) {
        close();
        throw;
    }
}

void resp_connection::close() noexcept
{
    if (ssl_ != nullptr) {
        SSL_free(ssl_);
        ssl_ = nullptr;
    }
    if (ctx_ != nullptr) {
        SSL_CTX_free(ctx_);
        ctx_ = nullptr;
    }
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

template <class F>
int resp_connection::tls_io(F call, const char* what)
{
    while (true) {
        ERR_clear_error();
        errno = 0;
        const int r = call();
        if (r > 0) {
            return r;
        }
        switch (SSL_get_error(ssl_, r)) {
            case SSL_ERROR_WANT_READ:
                wait_for(POLLIN);
                break;
            case SSL_ERROR_WANT_WRITE:
                wait_for(POLLOUT);
                break;
            case SSL_ERROR_ZERO_RETURN:
                throw resp_error("connection closed by the server");
            case SSL_ERROR_SYSCALL:
                throw resp_error(
                    std::string(what) + " failed: " +
                    (errno != 0 ? errno_text(errno) : "connection closed by the server"));
            default:
                throw resp_error(std::string(what) + " failed: " + openssl_reason());
        }
    }
}

// The TLS handshake on the connected socket: the server's certificate must chain to the CA
// (--tls-ca, or the system's) and name the URL's host, as the library requires.
void resp_connection::start_tls(const redlock::node& n, const redlock::tls_settings& tls)
{
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (ctx_ == nullptr) {
        throw resp_error("TLS set-up failed: " + openssl_reason());
    }
    if (!tls.ca_file.empty()) {
        if (SSL_CTX_load_verify_locations(ctx_, tls.ca_file.c_str(), nullptr) != 1) {
            throw resp_error("cannot load the TLS CA file '" + tls.ca_file +
                             "': " + openssl_reason());
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx_) != 1) {
        throw resp_error("cannot load the system's TLS CA certificates: " + openssl_reason());
    }
    if (!tls.cert_file.empty() &&
        SSL_CTX_use_certificate_chain_file(ctx_, tls.cert_file.c_str()) != 1) {
        throw resp_error("cannot load the TLS certificate '" + tls.cert_file +
                         "': " + openssl_reason());
    }
    if (!tls.key_file.empty() &&
        SSL_CTX_use_PrivateKey_file(ctx_, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
        throw resp_error("cannot load the TLS private key '" + tls.key_file +
                         "': " + openssl_reason());
    }
    SSL_CTX_set_verify(ctx_, tls.verify_peer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);

    ssl_ = SSL_new(ctx_);
    if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
        throw resp_error("TLS set-up failed: " + openssl_reason());
    }
    in6_addr address;
    const bool is_ip = ::inet_pton(AF_INET, n.host.c_str(), &address) == 1 ||
                       ::inet_pton(AF_INET6, n.host.c_str(), &address) == 1;
    if (is_ip) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), n.host.c_str());
    } else {
        SSL_set_tlsext_host_name(ssl_, n.host.c_str());
        SSL_set1_host(ssl_, n.host.c_str());
    }
    try {
        tls_io([this] { return SSL_connect(ssl_); }, "TLS handshake");
    } catch (const resp_error&) {
        if (const long v = SSL_get_verify_result(ssl_); v != X509_V_OK) {
            throw resp_error(std::string("TLS handshake failed: certificate verify failed (") +
                             X509_verify_cert_error_string(v) + ")");
        }
        throw;
    }
}

void resp_connection::open(const redlock::node& n, const redlock::tls_settings& tls)
{
    int last_error = 0;
    const auto try_connect = [&](const sockaddr* addr, socklen_t len, int family) {
        fd_ = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd_ < 0) {
            last_error = errno;
            return false;
        }
        if (::connect(fd_, addr, len) == 0) {
            return true;
        }
        if (errno == EINPROGRESS) {
            wait_for(POLLOUT);
            int err = 0;
            socklen_t err_len = sizeof err;
            if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &err_len) == 0 && err == 0) {
                return true;
            }
            last_error = err;
        } else {
            last_error = errno;
        }
        ::close(fd_);
        fd_ = -1;
        return false;
    };

    if (!n.unix_path.empty()) {
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        if (n.unix_path.size() >= sizeof addr.sun_path) {
            throw resp_error("unix socket path too long");
        }
        std::memcpy(addr.sun_path, n.unix_path.c_str(), n.unix_path.size() + 1);
        if (!try_connect(reinterpret_cast<const sockaddr*>(&addr), sizeof addr, AF_UNIX)) {
            throw resp_error("connect failed: " + errno_text(last_error));
        }
    } else {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        const std::string port = std::to_string(n.port);
        if (int rc = ::getaddrinfo(n.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
            throw resp_error("cannot resolve host '" + n.host + "': " + ::gai_strerror(rc));
        }
        bool connected = false;
        try {
            for (addrinfo* a = found; a != nullptr && !connected; a = a->ai_next) {
                connected = try_connect(a->ai_addr, a->ai_addrlen, a->ai_family);
            }
        } catch (...) {
            ::freeaddrinfo(found);
            throw;
        }
        ::freeaddrinfo(found);
        if (!connected) {
            throw resp_error("connect failed: " + errno_text(last_error));
        }
        if (n.tls) {
            start_tls(n, tls);
        }
    }

    if (!n.password.empty()) {
        resp_value r = n.username.empty() ? command({"AUTH", n.password})
                                          : command({"AUTH", n.username, n.password});
        if (r.type == resp_value::kind::error) {
            throw resp_error("AUTH failed: " + r.text);
        }
    }
    if (n.db != 0) {
        resp_value r = command({"SELECT", std::to_string(n.db)});
        if (r.type == resp_value::kind::error) {
            throw resp_error("SELECT " + std::to_string(n.db) + " failed: " + r.text);
        }
    }
}

resp_connection::~resp_connection()
{
    close();
}

resp_value resp_connection::command(std::initializer_list<std::string_view> args)
{
    // Appended piece by piece: g++ 12 at -O3 inlines `"*" + std::to_string(n)` (an insert at
    // the front of a temporary) into a memcpy it wrongly flags as overlapping (-Wrestrict).
    std::string out = "*";
    out += std::to_string(args.size());
    out += "\r\n";
    for (std::string_view a : args) {
        out += '$';
        out += std::to_string(a.size());
        out += "\r\n";
        out += a;
        out += "\r\n";
    }
    send_all(out);
    while (true) {
        std::size_t pos = 0;
        if (!in_.empty()) {
            if (auto reply = parse(in_, pos, 0)) {
                in_.erase(0, pos);
                return std::move(*reply);
            }
        }
        read_more();
    }
}

void resp_connection::wait_for(short events)
{
    while (true) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - clock::now());
        if (left.count() <= 0) {
            throw resp_error("timed out");
        }
        pollfd p{fd_, events, 0};
        const int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
        if (rc > 0) {
            return;
        }
        if (rc < 0 && errno != EINTR) {
            throw resp_error("poll failed: " + errno_text(errno));
        }
    }
}

void resp_connection::send_all(const std::string& data)
{
    if (ssl_ != nullptr) {
        // Without partial writes, SSL_write sends everything or fails.
        tls_io([&] { return SSL_write(ssl_, data.data(), static_cast<int>(data.size())); },
               "TLS send");
        return;
    }
    std::size_t sent = 0;
    while (sent < data.size()) {
        const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            wait_for(POLLOUT);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            throw resp_error("send failed: " + errno_text(errno));
        }
    }
}

void resp_connection::read_more()
{
    char buffer[16384];
    if (ssl_ != nullptr) {
        const int n = tls_io([&] { return SSL_read(ssl_, buffer, sizeof buffer); }, "TLS receive");
        in_.append(buffer, static_cast<std::size_t>(n));
        return;
    }
    while (true) {
        const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
        if (n > 0) {
            in_.append(buffer, static_cast<std::size_t>(n));
            return;
        }
        if (n == 0) {
            throw resp_error("connection closed by the server");
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            wait_for(POLLIN);
        } else if (errno != EINTR) {
            throw resp_error("receive failed: " + errno_text(errno));
        }
    }
}

}  // namespace redlock_cli
