// SPDX-License-Identifier: BSL-1.0
#pragma once

// Small helpers of the benchmark: latency samples and their percentiles, a JSON object
// builder for the RESULT lines, process figures (RSS, CPU time) and output.

#include <chrono>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

using clock = std::chrono::steady_clock;

/// Latency samples, all kept (in nanoseconds); percentiles by nearest rank.
class samples
{
  public:
    void reserve(std::size_t n) { v_.reserve(n); }
    void add(clock::duration d)
    {
        v_.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
        sorted_ = false;
    }
    void merge(const samples& other);
    std::size_t size() const noexcept { return v_.size(); }
    bool empty() const noexcept { return v_.empty(); }

    /// The p-th percentile (p in [0, 100]) in microseconds; 0 when there are no samples.
    double percentile_us(double p);
    double mean_us() const;
    double max_us() { return percentile_us(100.0); }

  private:
    std::vector<std::int64_t> v_;
    bool sorted_ = false;
};

/// Builds one JSON object, members in the order added.
class json
{
  public:
    json& add(std::string_view key, std::string_view value);
    json& add(std::string_view key, const char* value) { return add(key, std::string_view(value)); }
    json& add(std::string_view key, const std::string& value)
    {
        return add(key, std::string_view(value));
    }
    json& add(std::string_view key, bool value);
    template <std::integral T>
    requires(!std::same_as<T, bool>) json& add(std::string_view key, T value)
    {
        return raw(key, std::to_string(value));
    }
    template <std::floating_point T>
    json& add(std::string_view key, T value)
    {
        return raw(key, number(static_cast<double>(value)));
    }
    json& add(std::string_view key, const json& value) { return raw(key, value.str()); }
    json& add(std::string_view key, const std::vector<std::int64_t>& values);
    json& add(std::string_view key, const std::vector<std::string>& values);
    /// A value that is JSON already (another program's output), taken as it is.
    json& add_verbatim(std::string_view key, std::string_view value)
    {
        return raw(key, std::string(value));
    }

    std::string str() const { return "{" + body_ + "}"; }

    /// A finite number with up to 6 significant digits, or null.
    static std::string number(double v);
    static std::string quote(std::string_view s);

  private:
    json& raw(std::string_view key, const std::string& value);
    std::string body_;
};

/// Latency figures of a sample set as a JSON object: p50, p90, p99, p99.9, max, mean (us).
json latency_json(samples& s);

/// VmRSS of this process in KiB (from /proc/self/status), or -1.
long rss_kib();
/// User + system CPU time of this process so far.
std::chrono::nanoseconds cpu_time();

/// CPU time (user + system) another process has used so far, from /proc/PID/stat; a
/// negative value when unknown.
double process_cpu_seconds(int pid);

/// CPU time the whole machine has been busy so far (every CPU, from /proc/stat: all but idle
/// and iowait); negative when unknown.
double machine_busy_seconds();

/// CPU used over a window, by this process and by the given server processes, in cores
/// (CPU seconds per wall-clock second), and by the whole machine.
class cpu_meter
{
  public:
    explicit cpu_meter(std::vector<int> server_pids) : pids_(std::move(server_pids)) {}
    void start();
    void stop();
    double client_cores() const;
    /// Summed over the servers; negative when no server pids are known (--nodes).
    double servers_cores() const;
    /// The whole machine; negative when unknown.
    double machine_cores() const;
    /// The machine but this process and the servers: other programs sharing the CPUs (a
    /// measurement they took cores from is slower) and kernel work charged to no process;
    /// negative when unknown.
    double others_cores() const;

  private:
    double servers_now() const;
    std::vector<int> pids_;
    clock::time_point wall0_{}, wall1_{};
    std::chrono::nanoseconds cpu0_{}, cpu1_{};
    double srv0_ = 0, srv1_ = 0;
    double machine0_ = -1, machine1_ = -1;
};

/// Prints a line to stdout and flushes it, so that progress shows through a pipe.
void say(const std::string& line);
/// `say("RESULT " + j.str())`.
void result(const json& j);

/// Notes that a measurement went wrong (lock errors, unexpected replies): its figures are
/// suspect, and the program ends with status 1.
void note_failure(const std::string& what);
/// How many failures were noted.
int failures();

/// printf into a std::string.
std::string strf(const char* format, ...) __attribute__((format(printf, 1, 2)));

/// A rate or count for people: 1234 -> "1,234".
std::string grouped(double v);
/// Seconds between two instants.
double seconds(clock::duration d);
/// a / b, or 0 when b is not positive (a figure that was not measured).
double ratio(double a, double b);

}  // namespace bench
