// SPDX-License-Identifier: Apache-2.0
#define BOOST_TEST_MODULE unit_cli_duration
#include <boost/test/unit_test.hpp>

#include "duration.hpp"

using namespace std::chrono_literals;
using redlock::cli::parse_duration;

BOOST_AUTO_TEST_CASE(durations_take_units) {
  BOOST_TEST(parse_duration("500ms")->count() == 500);
  BOOST_TEST(parse_duration("10s")->count() == 10000);
  BOOST_TEST(parse_duration("2m")->count() == 120000);
  BOOST_TEST(parse_duration("1h")->count() == 3600000);
  BOOST_TEST(parse_duration("0")->count() == 0);
  BOOST_TEST(parse_duration("0s")->count() == 0);
}

BOOST_AUTO_TEST_CASE(bad_durations_are_refused) {
  for (auto bad : {"", "10", "s", "-1s", "1.5s", "10zz", "10 s", "99999999999999999999h", "9223372036854775807h"})
    BOOST_TEST_CONTEXT(bad) { BOOST_TEST(!parse_duration(bad).has_value()); }
}

BOOST_AUTO_TEST_CASE(lists_split_on_commas_and_drop_empty_items) {
  using redlock::cli::split_list;
  BOOST_TEST((split_list("a,b,,c") == std::vector<std::string>{"a", "b", "c"}));
  BOOST_TEST((split_list(",redis://h:1,") == std::vector<std::string>{"redis://h:1"}));
  BOOST_TEST(split_list("").empty());
  BOOST_TEST(split_list(",,").empty());
  BOOST_TEST((split_list("x/y", '/') == std::vector<std::string>{"x", "y"}));
}
