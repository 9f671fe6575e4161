// SPDX-License-Identifier: BSL-1.0
#pragma once

// Owner values: random, unguessable, printable.

#include <span>
#include <string>

namespace redlock::detail {

/// Standard base64 with padding.
std::string base64_encode(std::span<const unsigned char> bytes);

/// 16 bytes from the OS CSPRNG (getrandom, drawn 512 bytes at a time per thread and never
/// shared with a forked child), base64-encoded: 24 characters. Throws `std::system_error` if
/// the OS has no entropy to give.
std::string random_owner_value();

/// 8 random hex digits, from the same source: a client's channel tag (client_impl.hpp).
std::string random_channel_tag();

}  // namespace redlock::detail
