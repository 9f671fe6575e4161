// SPDX-License-Identifier: BSL-1.0
#include <redlock/error.hpp>

#include <boost/system/system_error.hpp>
#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

using redlock::error;

BOOST_AUTO_TEST_SUITE(error_category)

BOOST_AUTO_TEST_CASE(category_is_named_redlock)
{
    BOOST_TEST(std::string(redlock::error_category().name()) == "redlock");
}

BOOST_AUTO_TEST_CASE(every_error_has_its_own_message)
{
    const error all[] = {error::taken,        error::failed,        error::not_held,
                         error::expired,      error::extend_failed, error::invalid_argument,
                         error::shut_down,    error::lost,          error::stale_token,
                         error::misconfigured};
    std::set<std::string> messages;
    for (error e : all) {
        std::string m = make_error_code(e).message();
        BOOST_TEST(!m.empty());
        BOOST_TEST(m.find("unknown") == std::string::npos, m);
        messages.insert(m);
    }
    BOOST_TEST(messages.size() == std::size(all));
}

BOOST_AUTO_TEST_CASE(misconfigured_points_at_the_per_node_report)
{
    const std::string m = make_error_code(error::misconfigured).message();
    BOOST_TEST(m.find("retrying cannot fix") != std::string::npos, m);
    BOOST_TEST(m.find("per-node report") != std::string::npos, m);
}

BOOST_AUTO_TEST_CASE(not_held_names_a_guard_released_already_as_well_as_a_lost_value)
{
    // A second release completes with not_held without touching Redis: its message must not
    // claim only that the lock expired.
    const std::string m = make_error_code(error::not_held).message();
    BOOST_TEST(m.find("released already") != std::string::npos, m);
    BOOST_TEST(m.find("expired or was taken over") != std::string::npos, m);
}

BOOST_AUTO_TEST_CASE(error_codes_compare_with_the_enum)
{
    boost::system::error_code ec = error::taken;
    BOOST_TEST(ec.failed());
    BOOST_TEST(ec.value() == 1);
    BOOST_TEST((ec.category() == redlock::error_category()));
    BOOST_TEST((ec == error::taken));
    BOOST_TEST((ec != error::failed));
    BOOST_TEST((redlock::make_error_code(error::shut_down) == error::shut_down));
    // The same value in another category is a different error.
    boost::system::error_code other(1, boost::system::generic_category());
    BOOST_TEST((other != error::taken));
    BOOST_TEST((boost::system::error_code{} != error::taken));
}

BOOST_AUTO_TEST_CASE(system_error_carries_the_code)
{
    try {
        throw boost::system::system_error(error::invalid_argument, "options.tries is 0");
    } catch (const boost::system::system_error& e) {
        BOOST_TEST((e.code() == error::invalid_argument));
        BOOST_TEST(std::string(e.what()).find("options.tries is 0") != std::string::npos);
    }
}

BOOST_AUTO_TEST_SUITE_END()
