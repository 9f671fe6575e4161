// SPDX-License-Identifier: BSL-1.0
#include "engine/runner.hpp"

#include <boost/asio/buffer.hpp>

#include <array>
#include <utility>

namespace redlock::detail {

namespace asio = boost::asio;

struct runner::socket_state
{
    explicit socket_state(stream s) : io(std::move(s)) {}

    stream io;
    std::array<char, std::size_t{16} * 1024> read_buffer{};
    std::string write_buffer;
};

void runner::attach(stream s, std::weak_ptr<void> life)
{
    close();
    life_ = std::move(life);
    socket_ = std::make_shared<socket_state>(std::move(s));
    mux_.connected();
    write();
}

void runner::write()
{
    const std::shared_ptr<socket_state> s = socket_;
    if (!s) {
        return;
    }
    auto life = life_.lock();
    if (!life || mux_.prepare_write(s->write_buffer) == 0) {
        return;
    }
    s->io.async_write_all(asio::buffer(s->write_buffer),
                          [this, s, life = std::move(life)](const boost::system::error_code& ec,
                                                            std::size_t) { on_written(s, ec); });
    if (mux_.begin_read()) {
        read(s);
    }
}

void runner::on_written(const std::shared_ptr<socket_state>& s, const boost::system::error_code& ec)
{
    if (s != socket_) {
        return;
    }
    mux_.commit_write();
    if (ec) {
        fail(socket_failure{.where = socket_failure::stage::writing, .error = ec});
        return;
    }
    write();
    tell_if_idle();
}

// The reader: takes the multiplexer's steps until it says read (one read under way at a
// time) or park (nothing owed: an idle client keeps no read pending, so that
// io_context::run can return).
void runner::read(const std::shared_ptr<socket_state>& s)
{
    for (;;) {
        reader_action step = mux_.next();
        switch (step.what) {
            case reader_action::type::read:
                s->io.async_read_some(
                    asio::buffer(s->read_buffer),
                    [this, s, life = life_.lock()](const boost::system::error_code& ec,
                                                   std::size_t n) { on_read(s, ec, n); });
                return;
            case reader_action::type::park:
                tell_if_idle();
                return;
            case reader_action::type::deliver:
            case reader_action::type::drop:
                user_.on_reply(step);
                break;
            case reader_action::type::resend:
                write();
                break;
            case reader_action::type::push:
                user_.on_push(step.reply);
                break;
            case reader_action::type::fail:
                fail(socket_failure{.where = socket_failure::stage::matching,
                                    .error = step.error,
                                    .diagnostics = std::move(step.diagnostics)});
                return;
        }
        if (s != socket_) {
            return;  // whoever was told gave the socket up
        }
    }
}

void runner::on_read(const std::shared_ptr<socket_state>& s, const boost::system::error_code& ec,
                     std::size_t n)
{
    if (s != socket_) {
        return;
    }
    if (ec) {
        fail(socket_failure{.where = socket_failure::stage::reading, .error = ec});
        return;
    }
    mux_.feed(std::string_view(s->read_buffer.data(), n));
    read(s);
}

void runner::fail(const socket_failure& failure)
{
    close();
    user_.on_failure(failure);
}

void runner::tell_if_idle()
{
    if (socket_ && !mux_.writing() && !mux_.reading()) {
        user_.on_idle();
    }
}

void runner::close(bool discard_unsent) noexcept
{
    if (auto s = std::exchange(socket_, nullptr)) {
        s->io.close(discard_unsent);
    }
}

stream runner::detach()
{
    stream s = std::move(std::exchange(socket_, nullptr)->io);
    return s;
}

}  // namespace redlock::detail
