#include "detail/resp.hpp"

#include <hiredis/hiredis.h>

#include <charconv>

namespace redlock::detail::resp {

namespace {

void append_length(std::string& out, char prefix, std::size_t n)
{
    char digits[24];
    out += prefix;
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
    (void)ec;
    out.append(digits, end);
    out += "\r\n";
}

void append_bulk(std::string& out, std::string_view arg)
{
    append_length(out, '$', arg.size());
    out.append(arg);
    out += "\r\n";
}

}  // namespace

void append_command(std::string& out, std::initializer_list<std::string_view> args)
{
    append_length(out, '*', args.size());
    for (std::string_view arg : args) {
        append_bulk(out, arg);
    }
}

void append_command(std::string& out, std::string_view a, std::string_view b, std::string_view c,
                    const std::vector<std::string_view>& rest)
{
    append_length(out, '*', 3 + rest.size());
    append_bulk(out, a);
    append_bulk(out, b);
    append_bulk(out, c);
    for (std::string_view arg : rest) {
        append_bulk(out, arg);
    }
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

struct decoder::impl
{
    redisReader* reader = redisReaderCreate();
    ~impl() { redisReaderFree(reader); }
};

decoder::decoder(std::size_t max_buffer) : impl_(std::make_unique<impl>()), max_buffer_(max_buffer)
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
    if (redisReaderFeed(r, data, size) != REDIS_OK) {
        error_ = r->errstr[0] != '\0' ? r->errstr : "out of memory buffering a reply";
        return false;
    }
    return true;
}

std::optional<reply> decoder::next()
{
    if (!error_.empty()) {
        return std::nullopt;
    }
    void* raw = nullptr;
    if (redisReaderGetReply(impl_->reader, &raw) != REDIS_OK) {
        error_ = impl_->reader->errstr[0] != '\0' ? impl_->reader->errstr : "malformed reply";
        return std::nullopt;
    }
    if (raw == nullptr) {
        return std::nullopt;
    }
    std::unique_ptr<redisReply, void (*)(void*)> owned(static_cast<redisReply*>(raw),
                                                       freeReplyObject);
    return convert(*owned);
}

void decoder::reset()
{
    impl_ = std::make_unique<impl>();
    error_.clear();
}

}  // namespace redlock::detail::resp
