// SPDX-License-Identifier: BSL-1.0
#pragma once

/// \file
/// The storage side of fencing: a check that refuses requests made under a lock that has
/// since passed to another owner.

#include <cstdint>
#include <string>
#include <string_view>

namespace redlock {

/// Remembers the newest fencing token a resource has seen and refuses older ones: the check
/// a protected resource runs on every read and write (Kleppmann's fencing). Pure and
/// in-process; `fenced_store` runs the same rule inside Redis.
///
/// A request is admitted when its token is greater than the newest seen, or equal to it and
/// from the same owner (one lock holder makes many requests with its one token). An equal
/// token from another owner is refused: two acquisitions can only share a token when their
/// locks overlapped, and then neither may be trusted over the other. Checking reads as well as
/// writes is what makes a read-modify-write safe: once a newer owner has read, an older
/// owner's write is refused, so no update is lost.
///
/// Not thread-safe: guard it like the resource it protects.
class fence
{
  public:
    /// Admits (and remembers) `token` from `owner`, or refuses it. Token 0 (no fencing) is
    /// always refused.
    bool admit(std::uint64_t token, std::string_view owner);
    /// The newest token admitted so far; 0 before the first.
    std::uint64_t newest() const noexcept { return newest_; }
    /// The owner that the newest token was admitted for.
    const std::string& newest_owner() const noexcept { return owner_; }

  private:
    std::uint64_t newest_ = 0;
    std::string owner_;
};

/// True when a request with `token` from `owner` may pass a resource whose newest admitted
/// token is `newest`, admitted for `newest_owner`. The rule behind `fence::admit`.
constexpr bool fence_admits(std::uint64_t token, std::string_view owner, std::uint64_t newest,
                            std::string_view newest_owner) noexcept
{
    return token != 0 && (token > newest || (token == newest && owner == newest_owner));
}

}  // namespace redlock
