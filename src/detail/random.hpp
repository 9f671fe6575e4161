#pragma once

// Randomness for timing and ordering (retry delays, node order), never for secrets: owner
// values come from the OS CSPRNG (owner_value.hpp).

#include <random>

namespace redlock::detail {

/// This thread's engine, seeded once from std::random_device: no lock, and no shared sequence
/// for contenders in one process to march in step with.
inline std::mt19937& thread_engine()
{
    thread_local std::mt19937 engine{std::random_device{}()};
    return engine;
}

}  // namespace redlock::detail
