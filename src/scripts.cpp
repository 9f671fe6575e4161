#include "detail/scripts.hpp"

#include "detail/subscriber.hpp"

#include <boost/uuid/detail/sha1.hpp>

#include <cstdio>

namespace redlock::detail {
namespace {

// The release script also publishes on the key's release channel, to wake waiters.
// Both scripts answer 1 when the key held our value (and was changed), 0 when the key was
// missing, -1 when it held another owner's value: the report tells these apart.
constexpr std::string_view release_script = R"lua(
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], '')
  return 1
end
if v == false then return 0 end
return -1
)lua";

constexpr std::string_view extend_script = R"lua(
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if v == false then
  if ARGV[3] == '1' then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 1
  end
  return 0
end
return -1
)lua";

const std::string& release_sha()
{
    static const std::string sha = script_sha1(release_script);
    return sha;
}

const std::string& extend_sha()
{
    static const std::string sha = script_sha1(extend_script);
    return sha;
}

std::string unexpected(const resp::reply& r)
{
    if (r.is_error()) {
        return "Redis error: " + r.text;
    }
    switch (r.type) {
        case resp::kind::nil:
            return "unexpected nil reply";
        case resp::kind::integer:
            return "unexpected integer reply " + std::to_string(r.integer);
        case resp::kind::array:
            return "unexpected array reply";
        default:
            return "unexpected reply '" + r.text.substr(0, 64) + "'";
    }
}

}  // namespace

std::string script_sha1(std::string_view script)
{
    boost::uuids::detail::sha1 h;
    h.process_bytes(script.data(), script.size());
    boost::uuids::detail::sha1::digest_type digest;
    h.get_digest(digest);
    std::string hex;
    char part[9];
    for (unsigned word : digest) {
        std::snprintf(part, sizeof part, "%08x", word);
        hex += part;
    }
    return hex;
}

command acquire_command(std::string_view key, std::string_view value,
                        std::chrono::milliseconds expiry)
{
    command c;
    resp::append_command(c.payload,
                         {"SET", key, value, "NX", "PX", std::to_string(expiry.count())});
    return c;
}

command release_command(std::string_view key, std::string_view value)
{
    command c;
    // Waiting acquirers of this key are subscribed to the channel (see subscriber.hpp).
    const std::string channel = release_channel(key);
    resp::append_command(c.payload, {"EVALSHA", release_sha(), "1", key, value, channel});
    resp::append_command(c.fallback, {"EVAL", release_script, "1", key, value, channel});
    return c;
}

command extend_command(std::string_view key, std::string_view value,
                       std::chrono::milliseconds expiry, bool recreate)
{
    command c;
    std::string ms = std::to_string(expiry.count());
    std::string_view flag = recreate ? "1" : "0";
    resp::append_command(c.payload, {"EVALSHA", extend_sha(), "1", key, value, ms, flag});
    resp::append_command(c.fallback, {"EVAL", extend_script, "1", key, value, ms, flag});
    return c;
}

command get_command(std::string_view key)
{
    command c;
    resp::append_command(c.payload, {"GET", key});
    return c;
}

node_status read_acquire_reply(const resp::reply& r, std::string_view, std::string& detail)
{
    if (r.type == resp::kind::simple_string && r.text == "OK") {
        return node_status::ok;
    }
    if (r.type == resp::kind::nil) {
        return node_status::taken;
    }
    detail = unexpected(r);
    return node_status::error;
}

node_status read_script_reply(const resp::reply& r, std::string_view, std::string& detail)
{
    if (r.type == resp::kind::integer) {
        if (r.integer == 1) {
            return node_status::ok;
        }
        if (r.integer == 0) {
            return node_status::missing;
        }
        if (r.integer == -1) {
            return node_status::taken;
        }
    }
    detail = unexpected(r);
    return node_status::error;
}

node_status read_get_reply(const resp::reply& r, std::string_view value, std::string& detail)
{
    if (r.type == resp::kind::nil) {
        return node_status::missing;
    }
    if (r.type == resp::kind::bulk_string) {
        return r.text == value ? node_status::ok : node_status::taken;
    }
    detail = unexpected(r);
    return node_status::error;
}

}  // namespace redlock::detail
