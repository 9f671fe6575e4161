// SPDX-License-Identifier: BSL-1.0
#include "node/sentinel/sentinel_link.hpp"

#include "core/error_reply.hpp"

#include <boost/asio/post.hpp>

namespace redlock::detail {

namespace asio = boost::asio;

namespace {

// The server the Sentinels named has become a replica since (a failover): not a
// misconfiguration, but a master to ask the Sentinels for again.
bool names_a_replica(const resp::reply& refusal) noexcept
{
    return refusal.is_error() && classify_error_reply(refusal.text) == node_errc::not_a_master;
}

}  // namespace

// One request on its way to the master: its outcome is read by the link before its owner
// hears of it.
struct sentinel_link::followed final : request_owner
{
    void deliver(std::uint32_t index, exec_result result) override
    {
        if (auto l = link.lock()) {
            l->delivered(*this, index, std::move(result));
        } else {
            owner->deliver(index, std::move(result));
        }
    }
    bool given_up(std::uint32_t index) const noexcept override { return owner->given_up(index); }
    bool acts_on(const resp::reply& refusal) const noexcept override
    {
        return names_a_replica(refusal) || owner->acts_on(refusal);
    }

    std::weak_ptr<sentinel_link> link;
    std::shared_ptr<request_owner> owner;
    const command* cmd = nullptr;
};

sentinel_link::sentinel_link(asio::any_io_executor strand, node n, connection_settings settings)
    : strand_(std::move(strand)),
      node_(std::move(n)),
      settings_(std::move(settings)),
      link_(std::make_shared<connection>(strand_, node_, settings_))
{
}

sentinel_link::~sentinel_link()
{
    // A client destroyed without async_shutdown: the watch must not keep the io_context busy
    // for a link that is gone. It lives on the strand.
    if (watch_) {
        asio::post(strand_, [w = std::move(watch_)] { w->stop(); });
    }
}

void sentinel_link::submit(std::shared_ptr<request_owner> owner, std::uint32_t index,
                           const command& cmd)
{
    auto f = std::make_shared<followed>();
    f->link = weak_from_this();
    f->owner = std::move(owner);
    f->cmd = &cmd;
    link_->submit(std::move(f), index, cmd);
}

void sentinel_link::delivered(const followed& request, std::uint32_t index, exec_result result)
{
    if (result.status == exec_result::outcome::replied) {
        note_master();
        if (const resp::reply& own = own_reply(*request.cmd, result.reply); names_a_replica(own)) {
            const node_failure why{node_errc::master_switched,
                                   link_->reached() + ", the master '" + node_.master_name +
                                       "' the Sentinels named, has become a replica (" + own.text +
                                       "): asking the Sentinels again"};
            request.owner->deliver(
                index, exec_result{exec_result::outcome::failed, {}, why.detail, why.code});
            link_->leave(why);  // and the requests behind it
            return;
        }
    }
    request.owner->deliver(index, std::move(result));
}

// Once the master answers: the log says which server it is, when that changed, and the watch
// for failovers starts (it keeps a read pending, so a client whose Sentinel node never
// answered keeps no work).
void sentinel_link::note_master()
{
    if (link_->reached() != named_) {
        named_ = link_->reached();
        if (settings_.log) {
            settings_.log(log_level::info, name() + ": the master is " + named_);
        }
    }
    if (!watch_) {
        std::weak_ptr<sentinel_link> weak = weak_from_this();
        watch_ = std::make_shared<sentinel_watch>(strand_, node_, settings_,
                                                  [weak](const server_address& master) {
                                                      if (auto l = weak.lock()) {
                                                          l->master_switched(master);
                                                      }
                                                  });
        watch_->start();
    }
}

void sentinel_link::master_switched(const server_address& master)
{
    const std::string now = node_at(node_, master).endpoint();
    // Whatever the old master still accepts is lost once it turns into a replica.
    link_->leave_unless_at(
        now, node_failure{node_errc::master_switched, "the Sentinels switched the master '" +
                                                          node_.master_name + "' to " + now});
}

void sentinel_link::close(const std::string& why)
{
    link_->close(why);
    if (watch_) {
        watch_->stop();
    }
}

}  // namespace redlock::detail
