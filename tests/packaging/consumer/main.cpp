// Links against redlock and runs one operation: an acquire against a port where nothing
// listens must fail with error::failed and a per-node report naming the refusal.
#include <redlock/redlock.hpp>

#include <boost/asio.hpp>

#include <iostream>

namespace asio = boost::asio;

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::cerr << "usage: consumer redis://127.0.0.1:PORT\n";
        return 2;
    }
    asio::io_context io;
    redlock::client c(io.get_executor(), redlock::config::from_urls({argv[1]}));
    auto m = c.make_mutex("consumer", {.tries = 1});
    int status = 1;
    m.async_acquire([&](boost::system::error_code ec, redlock::guard g) {
        std::cout << ec.message() << "\n" << g.last_report().to_string();
        status = ec == redlock::error::failed ? 0 : 1;
    });
    io.run();
    return status;
}
