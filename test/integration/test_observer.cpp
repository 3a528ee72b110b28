// SPDX-License-Identifier: Apache-2.0
#define BOOST_TEST_MODULE integration_observer
#include <boost/test/unit_test.hpp>

#include "masters.hpp"

#include <redlock/redlock.hpp>

#include <future>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using redlock::testing::masters;

namespace {
struct logging_counters : redlock::counters {
  std::mutex mu;
  std::vector<std::string> lines;
  void on_log(redlock::log_level level, std::string_view message) override {
    counters::on_log(level, message);
    std::lock_guard g(mu);
    lines.emplace_back(message);
  }
};
}  // namespace

BOOST_AUTO_TEST_CASE(observer_counts_attempts_latency_errors_renewals_and_lost_leases) {
  masters m(3);
  auto stats = std::make_shared<logging_counters>();
  auto o = m.options(50ms);
  o.observer = stats;
  redlock::client c(o);

  for (int i = 0; i < 10; ++i) c.release(c.acquire("observed"));
  BOOST_TEST(stats->acquire_attempts.load() == 10u);
  BOOST_TEST(stats->acquired.load() == 10u);
  std::this_thread::sleep_for(50ms);  // late replies of the last round
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST(stats->nodes[i].replies.load() >= 15u);  // ~20: acquire + release each
    BOOST_TEST(stats->nodes[i].latency_us_total.load() > 0u);
    BOOST_TEST(stats->nodes[i].errors.load() == 0u);
  }

  // A held lock: the second client's attempts fail at quorum.
  auto held = c.acquire("observed");
  redlock::client other(o);
  BOOST_TEST(!other.try_acquire("observed", {.max_attempts = 2, .retry_delay = 5ms, .retry_jitter = 0ms}));
  BOOST_TEST(stats->quorum_failures.load() == 1u);
  BOOST_TEST(stats->acquire_attempts.load() == 13u);
  c.release(held);

  // Renewals, then a lost lease when every master stops answering.
  std::promise<void> lost;
  redlock::acquire_options renewed;
  renewed.ttl = 300ms;
  renewed.renew = true;
  renewed.on_lost = [&](redlock::lost_reason) { lost.set_value(); };
  auto l = c.acquire("observed-lease", renewed);
  std::this_thread::sleep_for(450ms);
  BOOST_TEST(stats->renewals.load() >= 2u);
  for (std::size_t i = 0; i < 3; ++i) m[i].pause();
  BOOST_TEST((lost.get_future().wait_for(3s) == std::future_status::ready));
  BOOST_TEST(stats->lost_leases.load() == 1u);
  BOOST_TEST(stats->renewal_failures.load() >= 1u);
  std::uint64_t timeouts = 0;
  for (std::size_t i = 0; i < 3; ++i) timeouts += stats->nodes[i].timeouts.load();
  BOOST_TEST(timeouts >= 3u);
  for (std::size_t i = 0; i < 3; ++i) m[i].resume();

  // Connection events reach the logging hook.
  m[0].kill9();
  std::this_thread::sleep_for(50ms);
  c.try_acquire("after-kill");
  std::this_thread::sleep_for(50ms);
  std::lock_guard g(stats->mu);
  bool saw_close = false;
  for (auto& line : stats->lines) saw_close |= line.find("connection closed") != std::string::npos;
  BOOST_TEST(saw_close);
  BOOST_TEST(stats->log_warnings.load() >= 1u);
}
