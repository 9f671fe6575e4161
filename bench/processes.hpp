// SPDX-License-Identifier: BSL-1.0
#pragma once

// Workers in processes of their own (forked), as separate services contending for one lock
// are, and the memory they share with the measuring process to count into.

#include <sys/mman.h>
#include <sys/types.h>

#include <cerrno>
#include <functional>
#include <new>
#include <system_error>
#include <vector>

namespace bench {

/// A `T` in an anonymous shared mapping: processes forked while it exists see and change the
/// same object. `T` must be usable that way (atomics and plain data, no pointers to the
/// heap). Destroyed and unmapped when it goes.
template <class T>
class shared_mapping
{
  public:
    shared_mapping()
    {
        void* p =
            ::mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            throw std::system_error(errno, std::generic_category(), "mmap");
        }
        object_ = new (p) T();
    }
    ~shared_mapping()
    {
        object_->~T();
        ::munmap(object_, sizeof(T));
    }
    shared_mapping(const shared_mapping&) = delete;
    shared_mapping& operator=(const shared_mapping&) = delete;
    T& operator*() const { return *object_; }
    T* operator->() const { return object_; }

  private:
    T* object_;
};

/// Forks `n` children; child i runs `body(i)` and ends (`_exit`, no destructors, no atexit
/// handlers of the parent's) with the status it returns, or 1 when it throws. Output is
/// flushed before each fork and before each child ends. The pids of the children started:
/// fewer than `n` when a fork failed (errno then says why).
std::vector<pid_t> fork_workers(int n, const std::function<int(int)>& body);

/// Waits for every child in `children`; how many did not exit with status 0.
int wait_workers(const std::vector<pid_t>& children);

}  // namespace bench
