// SPDX-License-Identifier: BSL-1.0
#include "node/cluster/shard_subscribers.hpp"

#include "node/sentinel/sentinel.hpp"
#include "protocol/key_slot.hpp"

namespace redlock::detail {

shard_subscribers::shard_subscribers(boost::asio::any_io_executor strand, node cluster,
                                     connection_settings settings, release_listener on_release,
                                     std::string key_prefix,
                                     std::weak_ptr<const cluster_link> slots)
    : strand_(std::move(strand)),
      cluster_(std::move(cluster)),
      settings_(std::move(settings)),
      on_release_(std::move(on_release)),
      key_prefix_(std::move(key_prefix)),
      slots_(std::move(slots))
{
}

void shard_subscribers::watch(std::string_view key, std::string_view suffix)
{
    watched& w = keys_[{std::string(key), std::string(suffix)}];
    if (w.watches++ == 0) {
        // Every watch of a key goes where its first went, so that unwatches match them.
        const auto link = slots_.lock();
        const auto master = link ? link->master_of(key_slot(key)) : std::nullopt;
        if (master) {
            const std::string name = address_name(*master);
            auto it = masters_.find(name);
            if (it == masters_.end()) {
                it = masters_
                         .emplace(name, std::make_shared<subscriber>(
                                            strand_, node_at(cluster_, *master), settings_,
                                            on_release_, key_prefix_, true))
                         .first;
            }
            w.on = it->second;
        }
    }
    if (w.on) {
        w.on->watch(key, suffix);
    }
}

void shard_subscribers::unwatch(std::string_view key, std::string_view suffix)
{
    const auto it = keys_.find({std::string(key), std::string(suffix)});
    if (it == keys_.end()) {
        return;
    }
    if (it->second.on) {
        it->second.on->unwatch(key, suffix);
    }
    if (--it->second.watches == 0) {
        keys_.erase(it);
    }
}

void shard_subscribers::close()
{
    keys_.clear();
    for (auto& [name, s] : masters_) {
        s->close();
    }
}

}  // namespace redlock::detail
