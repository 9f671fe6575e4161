// SPDX-License-Identifier: BSL-1.0
// blocking_workers: distributed locks in a program without coroutines or an io_context, with
// redlock::blocking and the standard lock types.
//
//   blocking_workers URL [URL...]    e.g. blocking_workers redis://127.0.0.1:7001 ...
//
// Two clients stand for two instances of a service. Each runs worker threads that sell from
// one stock under the lock "stock:widget" (std::unique_lock), while a reporting thread reads
// the stock when it can get the lock within 20 ms (try_lock_for) and skips a round when it
// cannot. Fencing tokens grow with each sale. Exit status 0 when exactly the stock was sold
// and the tokens grew, 1 otherwise, 2 for bad arguments.

#include <redlock/blocking.hpp>

#include <boost/system/system_error.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <iostream>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

constexpr int initial_stock = 40;
constexpr int workers_per_instance = 3;

// The shared stock. Here both "instances" live in one process, so it is in memory, as atomics
// for the C++ memory model; each sale reads and then writes it separately, so that two
// sellers at once would sell one item twice and the final check would fail.
std::atomic<int> stock{initial_stock};
std::atomic<int> sold{0};
std::atomic<std::uint64_t> last_token{0};
std::atomic<bool> tokens_grew{true};

// The first exception of a thread, reported by main.
std::mutex errors_mutex;
std::string first_error;

void note(const std::exception& e)
{
    std::lock_guard lock(errors_mutex);
    if (first_error.empty()) {
        first_error = e.what();
    }
}

void sell(redlock::blocking::mutex lock)
{
    for (;;) {
        std::unique_lock held(lock);  // lock(): retries per options, throws on failure
        const int left = stock.load(std::memory_order_relaxed);
        if (left == 0) {
            return;
        }
        // Hand the token to whatever the lock protects, so it can refuse a stale holder.
        const std::uint64_t token = lock.fencing_token();
        if (token <= last_token.exchange(token)) {
            tokens_grew = false;
        }
        std::this_thread::sleep_for(1ms);  // the work of a sale
        stock.store(left - 1, std::memory_order_relaxed);
        ++sold;
    }  // ~unique_lock: unlock() releases on the nodes and waits for their answer
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::cerr << "usage: blocking_workers URL [URL...]\n";
        return 2;
    }
    try {
        const redlock::config cfg =
            redlock::config::from_urls(std::vector<std::string>(argv + 1, argv + argc));
        // Each client runs its own io thread; destroying it releases what is still held.
        redlock::blocking::client first(cfg);
        redlock::blocking::client second(cfg);
        // lock() waits up to 30 s however many attempts that takes; every sale gets a token.
        const redlock::options opts{
            .expiry = 5s, .tries = std::numeric_limits<int>::max(), .wait = 30s, .fencing = true};

        std::vector<std::thread> threads;
        for (redlock::blocking::client* instance : {&first, &second}) {
            for (int i = 0; i < workers_per_instance; ++i) {
                threads.emplace_back([lock = instance->make_mutex("stock:widget", opts)] {
                    try {
                        sell(lock);
                    } catch (const std::exception& e) {
                        note(e);
                    }
                });
            }
        }
        std::atomic<bool> selling{true};
        std::thread reporter([&, lock = first.make_mutex("stock:widget", opts)]() mutable {
            int skipped = 0;
            try {
                while (selling) {
                    {
                        std::unique_lock held(lock, 20ms);  // try_lock_for: false when busy
                        if (held) {
                            std::cout << "stock: " << stock.load() << "\n";
                        } else {
                            ++skipped;
                        }
                    }
                    std::this_thread::sleep_for(10ms);
                }
            } catch (const std::exception& e) {
                note(e);  // the nodes could not answer: not the same as busy
            }
            std::cout << "reporter: skipped " << skipped << " busy rounds\n";
        });
        for (auto& t : threads) {
            t.join();
        }
        selling = false;
        reporter.join();

        std::cout << "sold " << sold.load() << " of " << initial_stock << ", last fencing token "
                  << last_token.load() << "\n";
        if (!first_error.empty()) {
            std::cerr << "blocking_workers: " << first_error << "\n";
            return 1;
        }
        if (sold.load() != initial_stock || stock.load() != 0 || !tokens_grew) {
            std::cerr << "FAILED: sold " << sold.load() << ", stock left " << stock.load()
                      << (tokens_grew ? "" : ", a fencing token did not grow") << "\n";
            return 1;
        }
        return 0;
    } catch (const boost::system::system_error& e) {
        // lock() and make_mutex throw these; what() names the lock and each node's answer.
        std::cerr << "blocking_workers: " << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "blocking_workers: " << e.what() << "\n";
        return 1;
    }
}
