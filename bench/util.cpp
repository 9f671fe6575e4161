// SPDX-License-Identifier: BSL-1.0
#include "util.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <numeric>
#include <sstream>

namespace bench {

void samples::merge(const samples& other)
{
    v_.insert(v_.end(), other.v_.begin(), other.v_.end());
    sorted_ = false;
}

double samples::percentile_us(double p)
{
    if (v_.empty()) {
        return 0.0;
    }
    if (!sorted_) {
        std::sort(v_.begin(), v_.end());
        sorted_ = true;
    }
    // Nearest rank: the smallest sample with at least p% of the samples at or below it.
    const auto n = static_cast<double>(v_.size());
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * n));
    rank = std::clamp<std::size_t>(rank, 1, v_.size());
    return static_cast<double>(v_[rank - 1]) / 1000.0;
}

double samples::mean_us() const
{
    if (v_.empty()) {
        return 0.0;
    }
    const long double sum = std::accumulate(v_.begin(), v_.end(), 0.0L);
    return static_cast<double>(sum / static_cast<long double>(v_.size()) / 1000.0L);
}

std::string json::number(double v)
{
    if (!std::isfinite(v)) {
        return "null";
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", v);
    return text;
}

std::string json::quote(std::string_view s)
{
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char esc[8];
                    std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
                    out += esc;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

json& json::raw(std::string_view key, const std::string& value)
{
    if (!body_.empty()) {
        body_ += ',';
    }
    body_ += quote(key);
    body_ += ':';
    body_ += value;
    return *this;
}

json& json::add(std::string_view key, std::string_view value)
{
    return raw(key, quote(value));
}

json& json::add(std::string_view key, bool value)
{
    return raw(key, value ? "true" : "false");
}

json& json::add(std::string_view key, const std::vector<std::int64_t>& values)
{
    std::string list = "[";
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i > 0) {
            list += ',';
        }
        list += std::to_string(values[i]);
    }
    return raw(key, list + "]");
}

json& json::add(std::string_view key, const std::vector<std::string>& values)
{
    std::string list = "[";
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i > 0) {
            list += ',';
        }
        list += quote(values[i]);
    }
    return raw(key, list + "]");
}

json latency_json(samples& s)
{
    json j;
    j.add("n", static_cast<std::int64_t>(s.size()))
        .add("p50", s.percentile_us(50))
        .add("p90", s.percentile_us(90))
        .add("p99", s.percentile_us(99))
        .add("p999", s.percentile_us(99.9))
        .add("max", s.max_us())
        .add("mean", s.mean_us());
    return j;
}

long rss_kib()
{
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0) {
            return std::strtol(line.c_str() + 6, nullptr, 10);
        }
    }
    return -1;
}

std::chrono::nanoseconds cpu_time()
{
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    auto tv = [](const timeval& t) {
        return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec);
    };
    return tv(ru.ru_utime) + tv(ru.ru_stime);
}

double process_cpu_seconds(int pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos || close + 2 > text.size()) {
        return -1.0;
    }
    std::istringstream fields(text.substr(close + 2));
    std::string field;
    double ticks = 0;
    // After the command name: state is field 3; utime and stime are fields 14 and 15.
    for (int i = 3; i <= 15 && fields >> field; ++i) {
        if (i == 14 || i == 15) {
            ticks += std::strtod(field.c_str(), nullptr);
        }
    }
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double machine_busy_seconds()
{
    std::ifstream in("/proc/stat");
    std::string cpu;
    in >> cpu;
    if (cpu != "cpu") {
        return -1.0;
    }
    // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
    double ticks = 0;
    for (int i = 0; i < 8; ++i) {
        double v = 0;
        if (!(in >> v)) {
            return -1.0;
        }
        if (i != 3 && i != 4) {
            ticks += v;
        }
    }
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double cpu_meter::servers_now() const
{
    double sum = 0;
    for (int pid : pids_) {
        const double s = process_cpu_seconds(pid);
        if (s < 0) {
            return -1.0;
        }
        sum += s;
    }
    return pids_.empty() ? -1.0 : sum;
}

void cpu_meter::start()
{
    wall0_ = clock::now();
    cpu0_ = cpu_time();
    srv0_ = servers_now();
    machine0_ = machine_busy_seconds();
}

void cpu_meter::stop()
{
    wall1_ = clock::now();
    cpu1_ = cpu_time();
    srv1_ = servers_now();
    machine1_ = machine_busy_seconds();
}

double cpu_meter::client_cores() const
{
    const double wall = seconds(wall1_ - wall0_);
    return wall > 0 ? std::chrono::duration<double>(cpu1_ - cpu0_).count() / wall : 0.0;
}

double cpu_meter::servers_cores() const
{
    const double wall = seconds(wall1_ - wall0_);
    if (srv0_ < 0 || srv1_ < 0 || wall <= 0) {
        return -1.0;
    }
    return (srv1_ - srv0_) / wall;
}

double cpu_meter::machine_cores() const
{
    const double wall = seconds(wall1_ - wall0_);
    if (machine0_ < 0 || machine1_ < 0 || wall <= 0) {
        return -1.0;
    }
    return (machine1_ - machine0_) / wall;
}

double cpu_meter::others_cores() const
{
    const double machine = machine_cores();
    const double servers = servers_cores();
    if (machine < 0 || servers < 0) {
        return -1.0;
    }
    return std::max(0.0, machine - client_cores() - servers);
}

void say(const std::string& line)
{
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

void result(const json& j)
{
    say("RESULT " + j.str());
}

namespace {
int failure_count = 0;
}

void note_failure(const std::string& what)
{
    ++failure_count;
    say("FAILED: " + what);
}

int failures()
{
    return failure_count;
}

std::string strf(const char* format, ...)
{
    va_list args;
    va_start(args, format);
    va_list again;
    va_copy(again, args);
    const int n = std::vsnprintf(nullptr, 0, format, args);
    va_end(args);
    std::string out(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
    std::vsnprintf(out.data(), out.size() + 1, format, again);
    va_end(again);
    return out;
}

std::string grouped(double v)
{
    if (!std::isfinite(v)) {
        return "-";
    }
    auto digits = std::to_string(static_cast<long long>(std::llround(std::fabs(v))));
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) {
            out += ',';
        }
        out += digits[i];
    }
    return (v < 0 ? "-" : "") + out;
}

double seconds(clock::duration d)
{
    return std::chrono::duration<double>(d).count();
}

double ratio(double a, double b)
{
    return b > 0 ? a / b : 0.0;
}

}  // namespace bench
