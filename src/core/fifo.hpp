// SPDX-License-Identifier: BSL-1.0
#pragma once

// A first-in first-out queue over one ring of slots that keeps its memory: a steady stream
// through it allocates nothing, where std::deque allocates and frees a block every few
// elements.

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace redlock::detail {

/// A queue of default-constructible, movable values. A slot is reset to `T{}` as its value
/// leaves (`pop_front`, `clear`), so that what a value owns goes with it. The ring grows by
/// doubling; it gives its memory back once it empties after holding more than
/// `kept_capacity` values, so that a burst does not pin memory for the rest of its life.
template <class T>
class fifo
{
  public:
    static constexpr std::size_t kept_capacity = 1024;

    bool empty() const noexcept { return size_ == 0; }
    std::size_t size() const noexcept { return size_; }

    /// The value `i` places behind the front (0: the front). `i` < size().
    T& operator[](std::size_t i) noexcept { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    const T& operator[](std::size_t i) const noexcept
    {
        return slots_[(head_ + i) & (slots_.size() - 1)];
    }
    T& front() noexcept { return slots_[head_]; }

    void push_back(T value)
    {
        if (size_ == slots_.size()) {
            grow();
        }
        (*this)[size_] = std::move(value);
        ++size_;
    }

    /// Takes the front value out. Not empty().
    T pop_front()
    {
        T out = std::move(slots_[head_]);
        drop_front();
        return out;
    }

    /// Removes the front value (whatever is left of it, when it was moved from). Not empty().
    void drop_front()
    {
        slots_[head_] = T{};
        head_ = (head_ + 1) & (slots_.size() - 1);
        if (--size_ == 0) {
            release_if_large();
        }
    }

    void clear()
    {
        for (std::size_t i = 0; i < size_; ++i) {
            (*this)[i] = T{};
        }
        size_ = 0;
        release_if_large();
    }

  private:
    // The slots stay a power of two, so that a position wraps with a mask.
    void grow()
    {
        std::vector<T> bigger(std::max<std::size_t>(8, slots_.size() * 2));
        for (std::size_t i = 0; i < size_; ++i) {
            bigger[i] = std::move((*this)[i]);
        }
        slots_.swap(bigger);
        head_ = 0;
    }

    void release_if_large()
    {
        head_ = 0;
        if (slots_.size() > kept_capacity) {
            slots_ = std::vector<T>();
        }
    }

    std::vector<T> slots_;
    std::size_t head_ = 0;
    std::size_t size_ = 0;
};

}  // namespace redlock::detail
