// SPDX-License-Identifier: BSL-1.0
#pragma once

// RESP without I/O: commands out as arrays of bulk strings, replies in. RESP3 replies are read
// as a RESP2 server would send the same data (see `decoder`), so that one reply type serves
// both.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
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

/// The bytes a length header takes: an array's of `n` elements ("*3\r\n"), or a bulk string's
/// of `n` bytes.
std::size_t length_size(std::size_t n);
/// The bytes `arg` takes as a bulk string, header included.
std::size_t bulk_size(std::string_view arg);
/// Appends `arg` as one bulk string (binary-safe).
void append_bulk(std::string& out, std::string_view arg);
/// Where the first argument of a command of `count` words named `name` begins in its encoding
/// (`append_command`): behind the array's header and the name.
std::size_t first_argument_at(std::size_t count, std::string_view name);

/// Appends one command as a RESP array of bulk strings; arguments are binary-safe.
void append_command(std::string& out, std::initializer_list<std::string_view> args);
/// \overload: three leading arguments, then a run of further ones.
void append_command(std::string& out, std::string_view a, std::string_view b, std::string_view c,
                    std::span<const std::string_view> rest);

/// The protocol a connection speaks: RESP2 until a HELLO 3 switches it to RESP3.
enum class protocol { resp2, resp3 };

/// Incremental reply decoder: feed bytes as they arrive, take complete replies out.
///
/// RESP2 replies decode as they are. On a RESP2 connection a RESP3 type is a protocol error
/// (the server answers in a protocol nobody asked for). On a RESP3 one, replies decode as a
/// RESP2 server would send the same data: null is `nil`, a boolean the integer 1 or 0, a double
/// or big number a bulk string of its text, a blob error an error, a verbatim string a bulk
/// string without its format, a map (key, value, key, value...), a set or a push an array;
/// attributes are dropped. Streamed strings and aggregates, which Redis does not send, are
/// protocol errors.
class decoder
{
  public:
    /// Bytes buffered beyond this are a protocol error, so that a hostile bulk length cannot
    /// make the client allocate without bound. A reply, once decoded, may take as much, or
    /// 64 KiB when that is more (a value takes more memory than its wire bytes).
    static constexpr std::size_t default_max_buffer = std::size_t{64} * 1024 * 1024;
    /// The longest line (status, error, integer, or a length header) accepted.
    static constexpr std::size_t max_line = std::size_t{64} * 1024;
    /// The deepest nesting of arrays (maps, sets...) accepted.
    static constexpr std::size_t max_depth = 16;

    explicit decoder(std::size_t max_buffer = default_max_buffer,
                     protocol speaks = protocol::resp2);

    /// Adds received bytes. Returns false on a protocol error (see `error()`).
    bool feed(const char* data, std::size_t size);
    /// The next complete reply, if one is buffered. Returns nullopt and sets `error()` on
    /// a protocol error.
    std::optional<reply> next();
    /// A description of the protocol error, empty if none happened.
    const std::string& error() const noexcept { return error_; }
    /// True when bytes are buffered that no reply taken out so far has consumed.
    bool has_buffered() const noexcept { return pos_ < buffer_.size() || !open_.empty(); }
    /// Bytes fed since construction or `reset()` that the replies taken out so far span.
    std::size_t consumed() const noexcept { return consumed_; }
    /// Drops buffered bytes and any error: for a fresh connection.
    void reset();

  private:
    /// A value read whole, or an aggregate whose elements are still to come.
    struct item
    {
        reply value;
        /// The elements an aggregate still waits for.
        std::size_t missing = 0;
        /// Attributes describe the value after them; they are read and dropped.
        bool attribute = false;
    };

    bool fail(std::string why);
    bool charge(std::size_t bytes);
    void advance(std::size_t to);
    void drop_read_bytes();
    std::size_t line_end();
    bool read_item(item& out);
    bool read_line_value(char type, std::string_view line, reply& out);
    bool read_blob(char type, std::string_view line, std::size_t body, reply& out);
    bool read_aggregate(char type, std::string_view line, std::size_t after, item& out);
    bool complete(item& done);

    std::size_t max_buffer_;
    protocol protocol_;
    /// The most a reply under construction may take.
    std::size_t max_built_;
    std::string error_;
    /// Bytes fed and not yet dropped; those before `pos_` are read.
    std::string buffer_;
    std::size_t pos_ = 0;
    /// Where the search for the end of the line at `pos_` goes on: a line that arrives in
    /// pieces is searched once, not from its start on every call.
    std::size_t scan_from_ = 0;
    /// The aggregates being read, outermost first.
    std::vector<item> open_;
    /// What the reply under construction takes: its strings and its elements' slots.
    std::size_t built_ = 0;
    /// Bytes dropped from the front of `buffer_` since construction or `reset()`.
    std::size_t dropped_ = 0;
    std::size_t consumed_ = 0;
};

}  // namespace redlock::detail::resp
