// SPDX-License-Identifier: BSL-1.0
#pragma once

// What the fault suite reads of the processes it starts: their logs as they grow, and how
// they ended.

#include <sys/wait.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace redlock::faults {

/// The complete lines appended to a file since the last call; a line still being written
/// waits for its newline.
class log_reader
{
  public:
    explicit log_reader(std::string path) : path_(std::move(path)) {}

    std::vector<std::string> new_lines()
    {
        std::ifstream in(path_, std::ios::binary);
        in.seekg(static_cast<std::streamoff>(offset_));
        std::ostringstream s;
        s << in.rdbuf();
        const std::string text = s.str();
        offset_ += text.size();
        partial_ += text;
        std::vector<std::string> out;
        std::size_t begin = 0;
        for (std::size_t nl; (nl = partial_.find('\n', begin)) != std::string::npos; begin = nl + 1)
            out.push_back(partial_.substr(begin, nl - begin));
        partial_.erase(0, begin);
        return out;
    }

  private:
    std::string path_;
    std::uintmax_t offset_ = 0;
    std::string partial_;
};

/// How a child ended, in words, from its wait status; "still running" if it has not.
inline std::string describe_exit(bool exited, int status)
{
    if (!exited)
        return "still running";
    if (WIFEXITED(status))
        return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return std::string("killed by ") + ::strsignal(WTERMSIG(status));
    return "status " + std::to_string(status);
}

}  // namespace redlock::faults
