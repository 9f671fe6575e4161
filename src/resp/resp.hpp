// SPDX-License-Identifier: BSL-1.0
#pragma once

// RESP2 encoding and decoding, without I/O. The decoder wraps hiredis's reader; no hiredis
// type is visible outside resp.cpp.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail::resp {

enum class kind { nil, integer, simple_string, bulk_string, error, array };

/// One decoded reply. `text` holds simple strings, bulk strings and error messages.
struct reply
{
    kind type = kind::nil;
    std::int64_t integer = 0;
    std::string text;
    std::vector<reply> elements;

    bool is_error() const noexcept { return type == kind::error; }
};

/// Appends one command as a RESP array of bulk strings; arguments are binary-safe.
void append_command(std::string& out, std::initializer_list<std::string_view> args);
/// \overload: three leading arguments, then a run of further ones.
void append_command(std::string& out, std::string_view a, std::string_view b, std::string_view c,
                    const std::vector<std::string_view>& rest);

/// Incremental reply decoder: feed bytes as they arrive, take complete replies out.
class decoder
{
  public:
    /// Buffered bytes beyond this are treated as a protocol error, so that a hostile bulk
    /// length cannot make the client allocate without bound.
    static constexpr std::size_t default_max_buffer = std::size_t{64} * 1024 * 1024;

    explicit decoder(std::size_t max_buffer = default_max_buffer);
    ~decoder();
    decoder(const decoder&) = delete;
    decoder& operator=(const decoder&) = delete;

    /// Adds received bytes. Returns false on a protocol error (see `error()`).
    bool feed(const char* data, std::size_t size);
    /// The next complete reply, if one is buffered. Returns nullopt and sets `error()` on
    /// a protocol error.
    std::optional<reply> next();
    /// A description of the protocol error, empty if none happened.
    const std::string& error() const noexcept { return error_; }
    /// True when bytes are buffered that no reply taken out so far has consumed.
    bool has_buffered() const noexcept;
    /// Bytes fed since construction or `reset()` that the replies taken out so far span.
    std::size_t consumed() const noexcept;

    /// The longest line (status, error, integer, or a length header) accepted.
    static constexpr std::size_t max_line = std::size_t{64} * 1024;
    /// Drops buffered bytes and any error: for a fresh connection.
    void reset();

  private:
    struct impl;
    std::unique_ptr<impl> impl_;
    void note_line_ends(const char* data, std::size_t size);
    /// The length of the bulk string hiredis is waiting for; 0 when none.
    std::size_t pending_bulk_length() const noexcept;

    std::size_t max_buffer_;
    std::string error_;
    std::size_t fed_ = 0;
    std::size_t consumed_ = 0;
    /// Bytes at the end of the buffer after its last "\r\n".
    std::size_t since_line_end_ = 0;
    bool last_was_cr_ = false;
};

}  // namespace redlock::detail::resp
