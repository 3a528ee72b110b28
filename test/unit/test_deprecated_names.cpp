// SPDX-License-Identifier: Apache-2.0
// The old names kept for 0.x (CHANGELOG, issue 36 item 6) still name the
// same things as the new ones, so user code written against them keeps
// compiling and doing the same until 1.0 removes them. The only place in
// the tree that uses them.
#define BOOST_TEST_MODULE unit_deprecated_names
#include <boost/test/unit_test.hpp>

#include "client/options_check.hpp"
#include "lease/lock_state.hpp"

#include <redlock/election.hpp>
#include <redlock/error.hpp>
#include <redlock/node_vote.hpp>
#include <redlock/observer.hpp>
#include <redlock/options.hpp>
#include <redlock/status.hpp>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

using namespace std::chrono_literals;
using redlock::errc;
namespace d = redlock::detail;
using names = std::vector<std::string>;

static_assert(std::is_same_v<redlock::counters, redlock::counting_observer>);
static_assert(std::is_same_v<redlock::observation, redlock::leader_subscription>);
static_assert(std::is_same_v<redlock::node_result, redlock::node_vote>);
static_assert(std::is_same_v<redlock::node_status, redlock::node_lock_view>);
static_assert(std::is_same_v<redlock::node_scan, redlock::node_listing>);
static_assert(redlock::key_content::owners == redlock::key_content::reentrant);

BOOST_AUTO_TEST_CASE(key_content_owners_is_reentrant_and_keeps_its_word) {
  BOOST_TEST(redlock::key_content_name(redlock::key_content::owners) == "owners");
  BOOST_TEST(redlock::key_content_name(redlock::key_content::reentrant) == "owners");
}

BOOST_AUTO_TEST_CASE(holds_is_hold_count) {
  auto state = std::make_shared<d::lock_state>();
  state->holds = 3;
  auto l = d::lock_access::make(state);
  BOOST_TEST(l.holds() == 3);
  BOOST_TEST(l.hold_count() == 3);
}

// `together` is still read, in user code's designated initialisers (as the
// last field, where it was), by assignment, and by the library's checks.
BOOST_AUTO_TEST_CASE(acquire_options_together_is_other_names) {
  redlock::acquire_options old{.ttl = 5000ms, .together = {"b", "c"}};
  BOOST_TEST(d::other_names_of(old) == (names{"b", "c"}));
  BOOST_TEST(!d::check_acquire("a", old, 50ms, ""));
  BOOST_TEST(d::check_acquire("b", old, 50ms, "").code == errc::bad_option);  // 'b' twice: the library read it
  redlock::acquire_options assigned;
  assigned.together = names{"d"};
  BOOST_TEST(d::other_names_of(assigned) == (names{"d"}));
  redlock::acquire_options both{.other_names = {"b"}, .together = {"c"}};
  auto r = d::check_acquire("a", both, 50ms, "");
  BOOST_TEST(r.code == errc::bad_option);
  BOOST_TEST(r.message.find("together") != std::string::npos, r.message);
}

BOOST_AUTO_TEST_CASE(adopt_options_together_is_other_names) {
  const std::string set_token = "s:0123456789abcdef0123456789abcdef";
  redlock::adopt_options old{.together = {"q"}};
  BOOST_TEST(d::other_names_of(old) == (names{"q"}));
  BOOST_TEST(!d::check_adopt("r", set_token, 5000ms, old, 50ms, ""));
  BOOST_TEST(d::check_adopt("r", set_token, 5000ms, {.together = {"r"}}, 50ms, "").code == errc::bad_option);
  BOOST_TEST(d::check_adopt("r", set_token, 5000ms, {.other_names = {"q"}, .together = {"p"}}, 50ms, "").code ==
             errc::bad_option);
}
