// SPDX-License-Identifier: Apache-2.0
#define BOOST_TEST_MODULE unit_validity
#include <boost/test/unit_test.hpp>

#include "quorum/validity.hpp"

using namespace std::chrono_literals;
using redlock::detail::drift_allowance;
using redlock::detail::quorum_of;
using redlock::detail::validity_left;

BOOST_AUTO_TEST_CASE(quorum_is_a_strict_majority) {
  BOOST_TEST(quorum_of(1) == 1u);
  BOOST_TEST(quorum_of(2) == 2u);
  BOOST_TEST(quorum_of(3) == 2u);
  BOOST_TEST(quorum_of(4) == 3u);
  BOOST_TEST(quorum_of(5) == 3u);
  BOOST_TEST(quorum_of(7) == 4u);
  // Any two quorums intersect: 2 * quorum > N for every N.
  for (std::size_t n = 1; n < 64; ++n) BOOST_TEST(2 * quorum_of(n) > n);
}

BOOST_AUTO_TEST_CASE(drift_is_ttl_times_factor_plus_two_ms) {
  BOOST_TEST(drift_allowance(10000ms, 0.01).count() == (100ms + 2ms).count() * 1000);
  BOOST_TEST(drift_allowance(10000ms, 0.0).count() == std::chrono::microseconds(2ms).count());
  // Rounded up, never down: 333 ms * 0.01 = 3.33 ms -> 3330 us.
  BOOST_TEST(drift_allowance(333ms, 0.01).count() == 3330 + 2000);
}

BOOST_AUTO_TEST_CASE(validity_subtracts_elapsed_and_drift) {
  auto left = validity_left(10000ms, std::chrono::microseconds(1500), 0.01);
  BOOST_TEST(left.count() == 10'000'000 - 1'500 - 102'000);
  // Slow rounds leave nothing: the caller must then refuse the lock.
  BOOST_TEST(validity_left(100ms, std::chrono::microseconds(99'000), 0.01).count() < 0);
  BOOST_TEST(validity_left(100ms, std::chrono::microseconds(97'000), 0.01).count() == 100'000 - 97'000 - 3'000);
}
