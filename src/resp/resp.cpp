// SPDX-License-Identifier: BSL-1.0
#include "resp/resp.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace redlock::detail::resp {

namespace {

// The bytes a length header ("*3\r\n", "$5\r\n") takes.
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

void append_command(std::string& out, std::initializer_list<std::string_view> args)
{
    write_command(out, args.size(), [&args](const auto& f) {
        for (std::string_view arg : args) {
            f(arg);
        }
    });
}

void append_command(std::string& out, std::string_view a, std::string_view b, std::string_view c,
                    const std::vector<std::string_view>& rest)
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

reply convert(const redisReply& r)
{
    reply out;
    switch (r.type) {
        case REDIS_REPLY_STRING:
            out.type = kind::bulk_string;
            out.text.assign(r.str, r.len);
            break;
        case REDIS_REPLY_STATUS:
            out.type = kind::simple_string;
            out.text.assign(r.str, r.len);
            break;
        case REDIS_REPLY_ERROR:
            out.type = kind::error;
            out.text.assign(r.str, r.len);
            break;
        case REDIS_REPLY_INTEGER:
            out.type = kind::integer;
            out.integer = r.integer;
            break;
        case REDIS_REPLY_ARRAY:
            out.type = kind::array;
            out.elements.reserve(r.elements);
            for (std::size_t i = 0; i < r.elements; ++i) {
                out.elements.push_back(convert(*r.element[i]));
            }
            break;
        default:
            out.type = kind::nil;
            break;
    }
    return out;
}

}  // namespace

// hiredis builds a reply's objects as it parses, before the reply is complete; the decoder
// counts what they take (the string bytes, a pointer per announced array element, and a
// little per object) and refuses to build past its cap. Without that, an array header of
// 2^31 elements reserves 16 GiB at once, and a server streaming elements grows the client
// without bound (tests/hostile/test_memory.cpp).
struct decoder::impl
{
    // The objects may take as much as the buffer, but at least 64 KiB, so that a small
    // buffer cap still admits small replies (an object costs more than its wire bytes).
    explicit impl(std::size_t max_buffer)
        : max_bytes(std::max<std::size_t>(max_buffer, std::size_t{64} * 1024))
    {
        if (reader != nullptr) {
            reader->fn = &counted_functions();
            reader->privdata = this;
        }
    }
    ~impl() { redisReaderFree(reader); }
    impl(const impl&) = delete;
    impl& operator=(const impl&) = delete;

    redisReader* reader = redisReaderCreate();
    std::size_t max_bytes;
    /// What the objects of the reply under construction take.
    std::size_t built = 0;
    /// A reply object was refused for the cap.
    bool refused = false;

    static constexpr std::size_t object_overhead = 48;

    // False when `bytes` more would exceed the cap.
    static bool charge(const redisReadTask* task, std::size_t bytes)
    {
        auto* self = static_cast<impl*>(task->privdata);
        if (bytes > self->max_bytes - self->built) {
            self->refused = true;
            return false;
        }
        self->built += bytes;
        return true;
    }

    static const redisReplyObjectFunctions& hiredis_functions()
    {
        static const redisReplyObjectFunctions original = [] {
            redisReader* r = redisReaderCreate();
            redisReplyObjectFunctions copy = *r->fn;
            redisReaderFree(r);
            return copy;
        }();
        return original;
    }

    static redisReplyObjectFunctions& counted_functions()
    {
        static redisReplyObjectFunctions counted = [] {
            redisReplyObjectFunctions f = hiredis_functions();
            f.createString = [](const redisReadTask* t, char* str, size_t len) -> void* {
                return charge(t, len + object_overhead)
                           ? hiredis_functions().createString(t, str, len)
                           : nullptr;
            };
            f.createArray = [](const redisReadTask* t, int elements) -> void* {
                const auto n = static_cast<std::size_t>(elements < 0 ? 0 : elements);
                return charge(t, n * sizeof(void*) + object_overhead)
                           ? hiredis_functions().createArray(t, elements)
                           : nullptr;
            };
            f.createInteger = [](const redisReadTask* t, long long value) -> void* {
                return charge(t, object_overhead) ? hiredis_functions().createInteger(t, value)
                                                  : nullptr;
            };
            f.createNil = [](const redisReadTask* t) -> void* {
                return charge(t, object_overhead) ? hiredis_functions().createNil(t) : nullptr;
            };
            return f;
        }();
        return counted;
    }
};

decoder::decoder(std::size_t max_buffer)
    : impl_(std::make_unique<impl>(max_buffer)), max_buffer_(max_buffer)
{
}

decoder::~decoder() = default;

bool decoder::feed(const char* data, std::size_t size)
{
    if (!error_.empty()) {
        return false;
    }
    redisReader* r = impl_->reader;
    if (r->len - r->pos + size > max_buffer_) {
        error_ = "reply larger than " + std::to_string(max_buffer_) + " bytes";
        return false;
    }
    if (r == nullptr || redisReaderFeed(r, data, size) != REDIS_OK) {
        error_ =
            r != nullptr && r->errstr[0] != '\0' ? r->errstr : "out of memory buffering a reply";
        return false;
    }
    note_line_ends(data, size);
    fed_ += size;
    return true;
}

std::optional<reply> decoder::next()
{
    if (!error_.empty()) {
        return std::nullopt;
    }
    // hiredis looks for the "\r\n" of an unfinished line from the line's start on every
    // call, so an endless line would cost time quadratic in its length. Lines are short in
    // Redis (status, error, integer, length headers): one without an end is refused early.
    const std::size_t unparsed = impl_->reader->len - impl_->reader->pos;
    if (unparsed <= since_line_end_ && unparsed > max_line) {
        error_ = "a reply line longer than " + std::to_string(max_line) + " bytes";
        return std::nullopt;
    }
    void* raw = nullptr;
    if (redisReaderGetReply(impl_->reader, &raw) != REDIS_OK) {
        if (impl_->refused) {
            error_ = "reply larger than " + std::to_string(max_buffer_) + " bytes";
        } else {
            error_ = impl_->reader->errstr[0] != '\0' ? impl_->reader->errstr : "malformed reply";
        }
        return std::nullopt;
    }
    if (raw == nullptr) {
        // A bulk string longer than the cap is refused as soon as its length is known, rather
        // than after the cap's worth of its bytes has been read.
        if (const std::size_t announced = pending_bulk_length(); announced > max_buffer_) {
            error_ = "reply larger than " + std::to_string(max_buffer_) +
                     " bytes (a bulk string of " + std::to_string(announced) + " bytes)";
        }
        return std::nullopt;
    }
    // Right after a complete reply hiredis has nothing half-read (inside an item it may
    // already have passed the type byte), so what it has not parsed is what is left.
    consumed_ = fed_ - (impl_->reader->len - impl_->reader->pos);
    impl_->built = 0;
    std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(raw),
                                                       freeReplyObject);
    return convert(*owned);
}

void decoder::note_line_ends(const char* data, std::size_t size)
{
    // The last "\r\n" of the new bytes (its '\r' may be the previous feed's last byte).
    for (std::size_t i = size; i-- > 0;) {
        if (data[i] == '\n' && (i > 0 ? data[i - 1] == '\r' : last_was_cr_)) {
            since_line_end_ = size - 1 - i;
            last_was_cr_ = data[size - 1] == '\r';
            return;
        }
    }
    since_line_end_ += size;
    if (size > 0) {
        last_was_cr_ = data[size - 1] == '\r';
    }
}

std::size_t decoder::pending_bulk_length() const noexcept
{
    // While hiredis waits for a bulk string's bytes, it has read the '$' and stands at the
    // length's digits (they are parsed again on each call).
    const redisReader* r = impl_->reader;
    if (r == nullptr || r->ridx < 0 || r->rstack[r->ridx].type != REDIS_REPLY_STRING) {
        return 0;
    }
    const char* begin = r->buf + r->pos;
    const char* end = begin + std::min<std::size_t>(r->len - r->pos, 24);
    std::size_t length = 0;
    auto [stop, ec] = std::from_chars(begin, end, length);
    if (ec != std::errc{} || stop == end || *stop != '\r') {
        return 0;  // negative (nil), malformed or incomplete: hiredis decides
    }
    return length;
}

std::size_t decoder::consumed() const noexcept
{
    return consumed_;
}

bool decoder::has_buffered() const noexcept
{
    const redisReader* r = impl_->reader;
    return r != nullptr && (r->len > r->pos || r->ridx >= 0);
}

void decoder::reset()
{
    impl_ = std::make_unique<impl>(max_buffer_);
    error_.clear();
    fed_ = 0;
    consumed_ = 0;
    since_line_end_ = 0;
    last_was_cr_ = false;
}

}  // namespace redlock::detail::resp
