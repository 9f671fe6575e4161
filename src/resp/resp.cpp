// SPDX-License-Identifier: BSL-1.0
#include "resp/resp.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <span>
#include <string>
#include <system_error>

namespace redlock::detail::resp {

std::size_t length_size(std::size_t n)
{
    std::size_t digits = 1;
    while (n >= 10) {
        n /= 10;
        ++digits;
    }
    return 1 + digits + 2;
}

std::size_t bulk_size(std::string_view arg)
{
    return length_size(arg.size()) + arg.size() + 2;
}

namespace {

char* put_length(char* p, char prefix, std::size_t n)
{
    *p++ = prefix;
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
    (void)ec;
    const auto count = static_cast<std::size_t>(end - digits);
    std::memcpy(p, digits, count);
    p += count;
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

char* put_bulk(char* p, std::string_view arg)
{
    p = put_length(p, '$', arg.size());
    if (!arg.empty()) {
        std::memcpy(p, arg.data(), arg.size());
    }
    p += arg.size();
    *p++ = '\r';
    *p++ = '\n';
    return p;
}

// Writes the command as one block: its size is computed first, so that the string grows
// once.
template <class Args>
void write_command(std::string& out, std::size_t count, const Args& each_arg)
{
    std::size_t size = length_size(count);
    each_arg([&size](std::string_view arg) { size += bulk_size(arg); });
    const std::size_t old = out.size();
    out.resize(old + size);
    char* p = put_length(out.data() + old, '*', count);
    each_arg([&p](std::string_view arg) { p = put_bulk(p, arg); });
}

}  // namespace

std::size_t first_argument_at(std::size_t count, std::string_view name)
{
    return length_size(count) + bulk_size(name);
}

void append_bulk(std::string& out, std::string_view arg)
{
    const std::size_t old = out.size();
    out.resize(old + bulk_size(arg));
    put_bulk(out.data() + old, arg);
}

void append_command(std::string& out, std::initializer_list<std::string_view> args)
{
    write_command(out, args.size(), [&args](const auto& f) {
        for (std::string_view arg : args) {
            f(arg);
        }
    });
}

void append_command(std::string& out, std::string_view a, std::string_view b, std::string_view c,
                    std::span<const std::string_view> rest)
{
    write_command(out, 3 + rest.size(), [&](const auto& f) {
        f(a);
        f(b);
        f(c);
        for (std::string_view arg : rest) {
            f(arg);
        }
    });
}

namespace {

// The first byte of each reply type: RESP2's, then RESP3's.
constexpr std::string_view resp2_types = "+-:$*";
constexpr std::string_view resp3_types = "+-:$*_#,(!=%~>|";

std::optional<std::int64_t> parse_integer(std::string_view text)
{
    std::int64_t value = 0;
    const char* end = text.data() + text.size();
    auto [stop, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc{} || stop != end) {
        return std::nullopt;
    }
    return value;
}

// A RESP3 double: what strtod reads (inf, -inf and nan included), with an optional '+'.
bool is_double(std::string_view text)
{
    if (text.size() > 1 && text[0] == '+' && text[1] != '-') {
        text.remove_prefix(1);
    }
    double value = 0;
    const char* end = text.data() + text.size();
    auto [stop, ec] = std::from_chars(text.data(), end, value);
    return !text.empty() && stop == end &&
           (ec == std::errc{} || ec == std::errc::result_out_of_range);
}

// A RESP3 big number: an integer of any size.
bool is_big_number(std::string_view text)
{
    if (!text.empty() && text[0] == '-') {
        text.remove_prefix(1);
    }
    return !text.empty() &&
           std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

// A byte as a message may quote it: "h", or 0x0d when it is not printable.
std::string quoted_byte(char ch)
{
    constexpr char digits[] = "0123456789abcdef";
    const auto byte = static_cast<unsigned char>(ch);
    if (byte >= 0x20 && byte < 0x7f) {
        return {'"', ch, '"'};
    }
    return {'0', 'x', digits[byte >> 4], digits[byte & 0xf]};
}

std::string line_too_long()
{
    return "a reply line longer than " + std::to_string(decoder::max_line) + " bytes";
}

std::string larger_than(std::size_t cap)
{
    return "reply larger than " + std::to_string(cap) + " bytes";
}

}  // namespace

decoder::decoder(std::size_t max_buffer, protocol speaks)
    : max_buffer_(max_buffer),
      protocol_(speaks),
      max_built_(std::max<std::size_t>(max_buffer, std::size_t{64} * 1024))
{
}

void decoder::reset()
{
    *this = decoder(max_buffer_, protocol_);
}

bool decoder::feed(const char* data, std::size_t size)
{
    if (!error_.empty()) {
        return false;
    }
    if (size > max_buffer_ - (buffer_.size() - pos_)) {
        return fail(larger_than(max_buffer_));
    }
    drop_read_bytes();
    buffer_.append(data, size);
    return true;
}

// Bytes read go before new ones come: those of an unfinished value then stand at the front
// while the rest of it arrives, and move no more.
void decoder::drop_read_bytes()
{
    if (pos_ == buffer_.size() && buffer_.capacity() > max_line) {
        buffer_ = std::string();  // the memory of a large reply goes with it
    } else {
        buffer_.erase(0, pos_);
    }
    dropped_ += pos_;
    scan_from_ = scan_from_ > pos_ ? scan_from_ - pos_ : 0;
    pos_ = 0;
}

std::optional<reply> decoder::next()
{
    if (!error_.empty()) {
        return std::nullopt;
    }
    item read;
    while (read_item(read)) {
        if (read.missing == 0) {
            if (complete(read)) {
                return std::move(read.value);
            }
        } else if (open_.size() == max_depth) {
            fail("replies nested deeper than " + std::to_string(max_depth) + " levels");
            return std::nullopt;
        } else {
            open_.push_back(std::move(read));
        }
    }
    return std::nullopt;
}

// Puts a value read whole into the aggregates open around it; true once the outermost is
// complete, which is then `done`.
bool decoder::complete(item& done)
{
    while (!done.attribute) {
        if (open_.empty()) {
            consumed_ = dropped_ + pos_;
            built_ = 0;
            return true;
        }
        item& parent = open_.back();
        parent.value.elements.push_back(std::move(done.value));
        if (--parent.missing > 0) {
            break;
        }
        done = std::move(parent);
        open_.pop_back();
    }
    return false;
}

bool decoder::fail(std::string why)
{
    error_ = std::move(why);
    return false;
}

// Counts `bytes` more of the reply under construction; false past the cap.
bool decoder::charge(std::size_t bytes)
{
    if (bytes > max_built_ - built_) {
        return fail(larger_than(max_built_) + " decoded");
    }
    built_ += bytes;
    return true;
}

void decoder::advance(std::size_t to)
{
    pos_ = to;
    scan_from_ = to;
}

// Where the "\r\n" that ends the line at `pos_` begins; npos while it has not arrived, or when
// the line is too long (then with the error).
std::size_t decoder::line_end()
{
    constexpr auto none = std::string::npos;
    for (std::size_t from = std::max(pos_ + 1, scan_from_); from < buffer_.size();) {
        const std::size_t lf = std::string_view(buffer_).find('\n', from);
        if (lf == none) {
            break;
        }
        if (buffer_[lf - 1] != '\r') {
            from = lf + 1;
            continue;
        }
        const std::size_t cr = lf - 1;
        if (cr - (pos_ + 1) > max_line) {  // the line between the type byte and "\r\n"
            fail(line_too_long());
            return none;
        }
        return cr;
    }
    scan_from_ = buffer_.size();
    // The line is longer than max_line whatever comes next (a '\r' at the end may end it).
    if (buffer_.size() - pos_ > max_line + 2) {
        fail(line_too_long());
    }
    return none;
}

// One value at `pos_`, or the header of an aggregate; false until its bytes have all arrived,
// and on a protocol error.
bool decoder::read_item(item& out)
{
    if (pos_ == buffer_.size()) {
        return false;
    }
    const char type = buffer_[pos_];
    const auto types = protocol_ == protocol::resp3 ? resp3_types : resp2_types;
    if (types.find(type) == std::string_view::npos) {
        return fail("unexpected byte " + quoted_byte(type) + " where a reply begins");
    }
    const std::size_t end = line_end();
    if (end == std::string::npos) {
        return false;
    }
    const std::string_view line(buffer_.data() + pos_ + 1, end - (pos_ + 1));
    out.value.type = kind::nil;
    out.value.integer = 0;
    out.value.text.clear();
    out.value.elements.clear();
    out.missing = 0;
    out.attribute = false;
    switch (type) {
        case '$':
        case '!':
        case '=':
            return read_blob(type, line, end + 2, out.value);
        case '*':
        case '%':
        case '~':
        case '>':
        case '|':
            return read_aggregate(type, line, end + 2, out);
        default:
            if (!read_line_value(type, line, out.value)) {
                return false;
            }
            advance(end + 2);
            return true;
    }
}

// A value that is all in its line: a simple string, an error, an integer, a null, a boolean,
// a double or a big number.
bool decoder::read_line_value(char type, std::string_view line, reply& out)
{
    switch (type) {
        case ':':
            if (const auto value = parse_integer(line)) {
                out.type = kind::integer;
                out.integer = *value;
                return true;
            }
            return fail("malformed integer reply");
        case '#':
            if (line != "t" && line != "f") {
                return fail("malformed boolean reply");
            }
            out.type = kind::integer;
            out.integer = line == "t" ? 1 : 0;
            return true;
        case '_':
            return line.empty() || fail("malformed null reply");
        case ',':
            if (!is_double(line)) {
                return fail("malformed double reply");
            }
            break;
        case '(':
            if (!is_big_number(line)) {
                return fail("malformed big number reply");
            }
            break;
    }
    out.type = type == '+' ? kind::simple_string : type == '-' ? kind::error : kind::bulk_string;
    out.text.assign(line);
    return charge(line.size());
}

// A bulk string, blob error or verbatim string: its length in `line`, then as many bytes from
// `body` on, then "\r\n".
bool decoder::read_blob(char type, std::string_view line, std::size_t body, reply& out)
{
    const auto length = parse_integer(line);
    if (!length || *length < -1 || (*length == -1 && type != '$')) {
        return fail("malformed length of a bulk string");
    }
    if (*length == -1) {  // RESP2's null
        advance(body);
        return true;
    }
    // Refused as soon as the length is known: the value could never be buffered whole.
    const auto size = static_cast<std::uint64_t>(*length);
    const std::size_t framing = body - pos_ + 2;
    if (size > max_buffer_ || max_buffer_ - size < framing) {
        return fail(larger_than(max_buffer_) + " (a bulk string of " + std::to_string(size) +
                    " bytes)");
    }
    if (buffer_.size() - body < size + 2) {
        return false;
    }
    if (buffer_.compare(body + size, 2, "\r\n") != 0) {
        return fail("a bulk string longer than its length");
    }
    std::string_view text(buffer_.data() + body, size);
    if (type == '=') {
        if (size < 4 || text[3] != ':') {
            return fail("a verbatim string without its format");
        }
        text.remove_prefix(4);
    }
    out.type = type == '!' ? kind::error : kind::bulk_string;
    out.text.assign(text);
    advance(body + size + 2);
    return charge(text.size());
}

// The header of an array, map, set, push or attributes: the count in `line`. Its elements'
// slots are counted against the cap at once, so that a hostile count is refused before
// anything is allocated.
bool decoder::read_aggregate(char type, std::string_view line, std::size_t after, item& out)
{
    const auto count = parse_integer(line);
    if (!count || *count < -1 || (*count == -1 && type != '*')) {
        return fail("malformed length of an aggregate");
    }
    advance(after);
    if (*count == -1) {  // RESP2's null
        return true;
    }
    const std::size_t per_entry = type == '%' || type == '|' ? 2 : 1;
    const auto entries = static_cast<std::uint64_t>(*count);
    if (entries > (max_built_ - built_) / sizeof(reply) / per_entry) {
        return fail(larger_than(max_built_) + " decoded (an aggregate of " +
                    std::to_string(entries) + " entries)");
    }
    out.missing = static_cast<std::size_t>(entries) * per_entry;
    built_ += out.missing * sizeof(reply);
    out.value.type = kind::array;
    out.value.elements.reserve(out.missing);
    out.attribute = type == '|';
    return true;
}

}  // namespace redlock::detail::resp
