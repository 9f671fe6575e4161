// SPDX-License-Identifier: BSL-1.0
#include "processes.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace bench {

std::vector<pid_t> fork_workers(int n, const std::function<int(int)>& body)
{
    std::vector<pid_t> children;
    for (int i = 0; i < n; ++i) {
        // Whatever this process buffered must not be written again by each child.
        std::fflush(nullptr);
        const pid_t pid = ::fork();
        if (pid < 0) {
            break;
        }
        if (pid == 0) {
            int status = 1;
            // An exception must not leave the child: it would go on as a copy of the parent.
            try {
                status = body(i);
            } catch (...) {
                status = 1;
            }
            std::fflush(nullptr);
            ::_exit(status);
        }
        children.push_back(pid);
    }
    return children;
}

int wait_workers(const std::vector<pid_t>& children)
{
    int failed = 0;
    for (pid_t pid : children) {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0) {
            if (errno != EINTR) {
                status = -1;
                break;
            }
        }
        if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            ++failed;
        }
    }
    return failed;
}

}  // namespace bench
