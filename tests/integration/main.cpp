// SPDX-License-Identifier: BSL-1.0
#define BOOST_TEST_MODULE redlock_integration
#include <boost/test/unit_test.hpp>
