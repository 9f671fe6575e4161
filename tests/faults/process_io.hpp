// SPDX-License-Identifier: BSL-1.0
#pragma once

// What the fault suite reads of the processes it starts: their logs as they grow, and how
// they ended.

#include <stdlib.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
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

/// A fresh directory under /tmp for a scenario's logs, named `prefix` and a random suffix;
/// removed at the end unless `keep` (a failed scenario's evidence) or REDLOCK_FAULTS_KEEP_LOGS
/// is set.
struct log_dir
{
    std::string path;
    bool keep = false;
    explicit log_dir(const std::string& prefix = "redlock-faults")
    {
        std::string name = "/tmp/" + prefix + "-XXXXXX";
        if (!::mkdtemp(name.data()))
            throw std::system_error(errno, std::generic_category(), "mkdtemp");
        path = name;
    }
    ~log_dir()
    {
        std::error_code ec;
        if (!keep && !std::getenv("REDLOCK_FAULTS_KEEP_LOGS"))
            std::filesystem::remove_all(path, ec);
    }
    log_dir(const log_dir&) = delete;
    log_dir& operator=(const log_dir&) = delete;
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
