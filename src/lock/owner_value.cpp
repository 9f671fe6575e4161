// SPDX-License-Identifier: BSL-1.0
#include "lock/owner_value.hpp"

#include <pthread.h>
#include <sys/random.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace redlock::detail {

std::string base64_encode(std::span<const unsigned char> bytes)
{
    static constexpr char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        unsigned v = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += alphabet[(v >> 6) & 63];
        out += alphabet[v & 63];
    }
    std::size_t rest = bytes.size() - i;
    if (rest > 0) {
        unsigned v = bytes[i] << 16;
        if (rest == 2) {
            v |= bytes[i + 1] << 8;
        }
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += rest == 2 ? alphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

namespace {

// Random bytes are drawn from the OS a block at a time: a getrandom call for each lock
// value was one system call of the ~20 an uncontended lock cycle makes. Each thread keeps
// its own block; a forked child discards what its parent had drawn, or parent and child
// would hand out the same owner values.
std::atomic<unsigned> fork_generation{0};

void after_fork_in_child()
{
    fork_generation.fetch_add(1, std::memory_order_relaxed);
}

void fill_from_os(std::span<unsigned char> out)
{
    std::size_t filled = 0;
    while (filled < out.size()) {
        ssize_t n = ::getrandom(out.data() + filled, out.size() - filled, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw std::system_error(errno, std::generic_category(), "getrandom for a lock value");
        }
        filled += static_cast<std::size_t>(n);
    }
}

class random_block
{
  public:
    void take(std::span<unsigned char> out)
    {
        static const int registered = ::pthread_atfork(nullptr, nullptr, after_fork_in_child);
        (void)registered;
        const unsigned generation = fork_generation.load(std::memory_order_relaxed);
        if (generation != generation_ || used_ + out.size() > bytes_.size()) {
            fill_from_os(bytes_);
            generation_ = generation;
            used_ = 0;
        }
        std::memcpy(out.data(), bytes_.data() + used_, out.size());
        // Bytes handed out are not kept.
        std::memset(bytes_.data() + used_, 0, out.size());
        used_ += out.size();
    }

  private:
    std::array<unsigned char, 512> bytes_{};
    std::size_t used_ = bytes_.size();
    unsigned generation_ = 0;
};

thread_local random_block random_bytes;

}  // namespace

std::string random_owner_value()
{
    std::array<unsigned char, 16> bytes{};
    random_bytes.take(bytes);
    return base64_encode(bytes);
}

std::string random_channel_tag()
{
    static constexpr char digits[] = "0123456789abcdef";
    std::array<unsigned char, 4> bytes{};
    random_bytes.take(bytes);
    std::string tag;
    for (unsigned char b : bytes) {
        tag += digits[b >> 4];
        tag += digits[b & 0xf];
    }
    return tag;
}

}  // namespace redlock::detail
