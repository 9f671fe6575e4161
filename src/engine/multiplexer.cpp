// SPDX-License-Identifier: BSL-1.0
#include "engine/multiplexer.hpp"

#include "engine/pubsub.hpp"

#include <boost/system/errc.hpp>

#include <utility>

namespace redlock::detail {

namespace {

// The error code a Redis error reply starts with ("NOSCRIPT No matching script..."): the
// server's own token, which code may decide on; the rest is words for people.
std::string_view error_code_word(const resp::reply& r) noexcept
{
    std::string_view text = r.text;
    return text.substr(0, text.find(' '));
}

constexpr std::string_view noscript = "NOSCRIPT";

// Redis answers each command once, in order: a reply beyond the last one owed means the
// stream can no longer be matched to requests.
constexpr std::string_view unrequested =
    "data after the last reply owed (a reply nobody asked for)";

}  // namespace

const resp::reply& own_reply(const command& cmd, const resp::reply& reply) noexcept
{
    if (cmd.replies > 1 && reply.type == resp::kind::array &&
        cmd.own_reply < reply.elements.size()) {
        return reply.elements[cmd.own_reply];
    }
    return reply;
}

multiplexer::multiplexer(socket_use use) : use_(use) {}

bool multiplexer::add(submission s)
{
    if (unresponsive_) {
        return false;
    }
    entries_.push_back(entry{std::move(s)});
    return true;
}

bool multiplexer::resume_writes() noexcept
{
    if (holds_ > 0) {
        --holds_;
    }
    return holds_ == 0;
}

std::size_t multiplexer::prepare_write(std::string& out)
{
    if (!up_ || writing_ || holds_ > 0 || queued() == 0) {
        return 0;
    }
    out.clear();
    const std::size_t count = queued();
    for (std::size_t i = written_; i < entries_.size(); ++i) {
        entry& e = entries_[i];
        choose_script_form(e);
        if (e.as_eval) {
            append_eval_form(out, *e.request.cmd);
        } else {
            out += e.request.cmd->payload;
        }
    }
    written_ = entries_.size();
    writing_ = true;
    return count;
}

// Sending the text on first use costs its bytes once per socket. Waiting for a NOSCRIPT
// instead would cost a round trip, and would send the request again behind later ones: a
// clean-up behind the next attempt with the same value, or never, when a stuck socket is
// given up before its NOSCRIPT is read.
void multiplexer::choose_script_form(entry& e)
{
    const lua_script* script = e.request.cmd->script;
    if (script == nullptr) {
        return;
    }
    if (!e.as_eval && !scripts_.test(script->index)) {
        e.as_eval = true;
    }
    if (e.as_eval) {
        scripts_.set(script->index);
    }
}

bool multiplexer::begin_read() noexcept
{
    if (reading_ || !up_ || !awaiting()) {
        return false;
    }
    reading_ = true;
    return true;
}

void multiplexer::feed(std::string_view bytes)
{
    // A refusal (a protocol error, a reply over the size cap) stays in the decoder, and
    // `next` reports it.
    decoder_.feed(bytes.data(), bytes.size());
    fed_ += bytes.size();
}

// Every path fills the one `action`, which is returned in place: a reply is moved once, into
// it, on its way from the decoder to the runner.
reader_action multiplexer::next()
{
    reader_action action;
    if (!broken_.empty()) {
        action = broken();
        return action;
    }
    while (auto reply = decoder_.next()) {
        if (on_reply(*reply, action)) {
            return action;
        }
    }
    if (!decoder_.error().empty()) {
        action = failure(decoder_.error());
    } else if (awaiting()) {
        action.what = reader_action::type::read;
    } else if (fed_ > decoder_.consumed()) {
        // Counted here rather than asked of the decoder, whose `has_buffered` also counts a
        // reply it merely began to look for.
        action = failure(std::string(unrequested));
    } else {
        reading_ = false;
        action.what = reader_action::type::park;
    }
    return action;
}

bool multiplexer::awaiting() const noexcept
{
    return written_ > 0 || (use_ == socket_use::pubsub && subscriptions() > 0);
}

reader_action multiplexer::failure(std::string diagnostics)
{
    broken_ = std::move(diagnostics);
    up_ = false;
    return broken();
}

reader_action multiplexer::broken() const
{
    return reader_action{.what = reader_action::type::fail,
                         .error = make_error_code(boost::system::errc::protocol_error),
                         .diagnostics = broken_};
}

bool multiplexer::on_reply(resp::reply& r, reader_action& out)
{
    heard_ = true;
    unresponsive_ = false;
    ++replies_read_;
    if (use_ == socket_use::pubsub) {
        if (auto action = on_pubsub_reply(r)) {
            out = std::move(*action);
            return true;
        }
    }
    if (written_ == 0) {
        out = failure(std::string(unrequested));
        return true;
    }
    return match(r, out);
}

// Messages come at any time; confirmations answer (un)subscribe requests, except an unasked
// unsubscribe. The count a confirmation carries is the server's, whoever asked for it.
std::optional<reader_action> multiplexer::on_pubsub_reply(resp::reply& r)
{
    const pubsub_reply kind = classify_pubsub(r);
    if (kind == pubsub_reply::other) {
        return std::nullopt;
    }
    if (kind == pubsub_reply::message) {
        return reader_action{.what = reader_action::type::push, .reply = std::move(r)};
    }
    const bool shard =
        kind == pubsub_reply::shard_subscribed || kind == pubsub_reply::shard_unsubscribed;
    (shard ? shard_channels_ : channels_) = r.elements[2].integer;
    const request_kind answers =
        kind == pubsub_reply::subscribed || kind == pubsub_reply::shard_subscribed
            ? request_kind::subscribe
            : request_kind::unsubscribe;
    if (written_ > 0 && entries_.front().request.kind == answers) {
        return std::nullopt;  // the reply to the request at the front
    }
    if (answers == request_kind::unsubscribe) {
        return reader_action{.what = reader_action::type::push, .reply = std::move(r)};
    }
    return failure("a subscription confirmed that no request asked for");
}

bool multiplexer::match(resp::reply& r, reader_action& out)
{
    entry& front = entries_.front();
    const std::size_t expected = front.request.cmd->replies > 1 ? front.request.cmd->replies : 1;
    // A refused (un)subscription gets one error, however many channels it names.
    const bool refused = front.request.kind != request_kind::command && r.is_error();
    if (refused) {
        front.gathered.clear();
    } else if (expected > 1) {
        front.gathered.push_back(std::move(r));
        if (front.gathered.size() < expected) {
            return false;
        }
        r = resp::reply{};
        r.type = resp::kind::array;
        r.elements = std::move(front.gathered);
    }
    settle(r, out);
    return true;
}

void multiplexer::drop_front()
{
    entries_.drop_front();
    --written_;
    if (given_up_prefix_ > 0) {
        --given_up_prefix_;
    }
}

// Settles the request at the front of the FIFO, in place: its submission moves once, into
// `out`.
void multiplexer::settle(resp::reply& whole, reader_action& out)
{
    entry& e = entries_.front();
    const resp::reply& own = own_reply(*e.request.cmd, whole);
    const lua_script* script = e.request.cmd->script;
    if (script != nullptr && own.is_error() && e.as_eval) {
        // An EVAL refused before it ran (a redirection, CLUSTERDOWN, OOM) loaded nothing: the
        // script's next use sends its text again. (After one that ran and failed, this costs
        // one EVAL more.)
        scripts_.reset(script->index);
    } else if (script != nullptr && own.is_error() && error_code_word(own) == noscript) {
        // The server lost the script (SCRIPT FLUSH, a restart behind a proxy): the same
        // request goes again as EVAL, behind what was written since, and even when given up,
        // since it was meant to run.
        scripts_.reset(script->index);
        entry again = std::move(e);
        drop_front();
        again.as_eval = true;
        again.gathered.clear();
        out.what = reader_action::type::resend;
        out.request = again.request;
        entries_.push_back(std::move(again));
        return;
    }
    const bool dropped = e.given_up();
    if (dropped && given_up_ > 0) {
        --given_up_;
    }
    out.what = dropped ? reader_action::type::drop : reader_action::type::deliver;
    out.request = std::move(e.request);
    out.reply = std::move(whole);
    drop_front();
}

bool multiplexer::went_silent(std::uint64_t mark) noexcept
{
    if (mark != replies_read_) {
        return false;
    }
    unresponsive_ = true;
    return true;
}

bool multiplexer::looks_stuck()
{
    // Only worth a scan with as many requests given up, queued or in flight, as in flight.
    if (written_ == 0 || given_up_ < written_) {
        return false;
    }
    while (given_up_prefix_ < written_ && entries_[given_up_prefix_].given_up()) {
        ++given_up_prefix_;
    }
    return given_up_prefix_ == written_;
}

void multiplexer::connected()
{
    reset_socket_state();
    up_ = true;
}

std::vector<submission> multiplexer::fail_all()
{
    // In flight first, then queued: the order they are kept in.
    std::vector<submission> wanted;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        if (!entries_[i].given_up()) {
            wanted.push_back(std::move(entries_[i].request));
        }
    }
    entries_.clear();
    written_ = 0;
    given_up_ = 0;
    reset_socket_state();
    return wanted;
}

void multiplexer::reset_socket_state()
{
    up_ = false;
    writing_ = false;
    reading_ = false;
    heard_ = false;
    unresponsive_ = false;
    given_up_prefix_ = 0;
    channels_ = 0;
    shard_channels_ = 0;
    broken_.clear();
    decoder_.reset();
    fed_ = 0;
    scripts_.reset();
}

}  // namespace redlock::detail
