// SPDX-License-Identifier: Apache-2.0
// Cancellation: an operation cancelled ends with operation_aborted, and
// nothing of its attempt is left on any master.
#define BOOST_TEST_MODULE integration_cancel
#include <boost/test/unit_test.hpp>

#include "masters.hpp"

#include <redlock/mutex.hpp>
#include <redlock/redlock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <stop_token>
#include <thread>

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace keys = redlock::detail::keys;
using redlock::testing::eventually;
using redlock::testing::masters;
using redlock::testing::wake_list_is;

namespace {
using clock_type = std::chrono::steady_clock;
constexpr auto long_wait = 20000ms;
constexpr auto prompt = 4000ms;
}  // namespace

// The async campaign honours its handler's cancellation slot (the sync form
// above is built on it): it used to wait its whole wait out.
BOOST_AUTO_TEST_CASE(an_async_campaign_is_cancelled_through_its_slot) {
  masters m(3);
  asio::io_context io;
  redlock::async_client leader(io.get_executor(), m.options());
  redlock::async_client rival(io.get_executor(), m.options());
  redlock::lock leading;
  leader.async_campaign("office", {.ttl = 30000ms}, [&](boost::system::error_code ec, redlock::lock l) {
    BOOST_REQUIRE(!ec);
    leading = std::move(l);
  });
  while (!leading) io.run_one();
  asio::cancellation_signal cancel;
  std::optional<boost::system::error_code> result;
  rival.async_campaign("office", {.ttl = 30000ms, .wait = long_wait, .retry_delay = 100ms},
                       asio::bind_cancellation_slot(cancel.slot(), [&](boost::system::error_code ec, redlock::lock) {
                         result = ec;
                       }));
  asio::steady_timer t(io, 300ms);
  t.async_wait([&](auto) { cancel.emit(asio::cancellation_type::terminal); });
  auto deadline = clock_type::now() + 300ms + prompt;
  while (!result && io.run_one_until(deadline) > 0) {
  }
  BOOST_TEST_REQUIRE(result.has_value());
  BOOST_TEST(*result == asio::error::operation_aborted);
  io.run_for(100ms);
  BOOST_TEST(wake_list_is(m, "office", 0));
  for (std::size_t i = 0; i < m.size(); ++i) BOOST_TEST(m[i].command({"GET", "office"}) == leading.token());
}

