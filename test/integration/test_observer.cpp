// SPDX-License-Identifier: Apache-2.0
#define BOOST_TEST_MODULE integration_observer
#include <boost/test/unit_test.hpp>

#include "masters.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

using namespace std::chrono_literals;
using redlock::testing::masters;

namespace {
struct logging_counters : redlock::counting_observer {
  std::mutex mu;
  std::vector<std::string> lines;
  void on_log(redlock::log_level level, std::string_view message) override {
    counting_observer::on_log(level, message);
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

namespace {
// Every acquisition's outcome, copied (the name is a view valid only in the hook).
struct outcome_recorder : redlock::observer {
  struct entry {
    std::string name;
    redlock::lock_kind kind;
    boost::system::error_code error;
    std::chrono::microseconds took;
    unsigned attempts;
    std::optional<std::chrono::microseconds> since_release;
  };
  std::mutex mu;
  std::vector<entry> outcomes;
  void on_acquire_result(const redlock::acquire_outcome& o) override {
    std::lock_guard g(mu);
    outcomes.push_back({std::string(o.name), o.kind, o.error, o.took, o.attempts, o.since_release});
  }
  entry last(const std::string& name) {
    std::lock_guard g(mu);
    for (auto it = outcomes.rbegin(); it != outcomes.rend(); ++it)
      if (it->name == name) return *it;
    BOOST_FAIL("no outcome for " << name);
    return {};
  }
};
}  // namespace

namespace {
// `a` holds fair lock `name`, `b` waits in line on every master (polling
// only every 2 s), and `a`'s release hands `b` the lock: b's lock. A queue
// timeout shorter than the ttl (5 s) makes it a short hand-over, which b
// confirms later (docs/algorithm.md, section 11).
redlock::lock handed_over(masters& m, redlock::client& a, redlock::client& b, const std::string& name,
                          std::chrono::milliseconds queue_timeout = 5s) {
  auto first = a.acquire(name, {.ttl = 5s, .kind = redlock::lock_kind::fair, .owner = "a"});
  auto waiter = std::async(std::launch::async, [&] {
    return b.acquire(name, {.ttl = 5s, .wait = 10s, .retry_delay = 2000ms, .retry_jitter = 0ms,
                            .kind = redlock::lock_kind::fair, .owner = "b", .queue_timeout = queue_timeout});
  });
  // In line and listening on every master (a master it has not reached may
  // rightly give the lock away instead of handing it over).
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_REQUIRE(redlock::testing::eventually([&] {
      return m[i].command({"ZCARD", "{" + name + "}:queue"}) == "1" &&
             !m[i].command({"PUBSUB", "CHANNELS", "{" + name + "}:released*"}).empty();
    }));
  a.release(first);
  return waiter.get();
}

// Every span, copied (its name is a view valid only in the hook).
struct span_log : redlock::observer {
  std::mutex mu;
  std::vector<std::pair<redlock::span_kind, std::string>> spans;
  void on_span(const redlock::span& s) override {
    if (s.error) return;
    std::lock_guard g(mu);
    spans.emplace_back(s.what, std::string(s.name));
  }
  std::size_t count(redlock::span_kind what, const std::string& name) {
    std::lock_guard g(mu);
    return static_cast<std::size_t>(std::count(spans.begin(), spans.end(), std::pair(what, name)));
  }
};
}  // namespace

BOOST_AUTO_TEST_CASE(acquire_outcome_names_the_kind_the_rounds_and_the_hand_off) {
  masters m(3);
  auto rec = std::make_shared<outcome_recorder>();
  auto o = m.options(50ms);
  o.observer = rec;
  redlock::client a(o), b(o);

  // Uncontended: one round, no hand-off.
  a.release(a.acquire("plain"));
  auto plain = rec->last("plain");
  BOOST_TEST((plain.kind == redlock::lock_kind::mutex));
  BOOST_TEST(!plain.error);
  BOOST_TEST(plain.attempts == 1u);
  BOOST_TEST(!plain.since_release.has_value());

  // Refused twice: the failure carries its rounds.
  auto held = a.acquire("busy", {.kind = redlock::lock_kind::reentrant, .owner = "a"});
  BOOST_TEST(!b.try_acquire("busy", {.max_attempts = 2, .retry_delay = 5ms, .retry_jitter = 0ms,
                                     .kind = redlock::lock_kind::reentrant, .owner = "b"}));
  auto refused = rec->last("busy");
  BOOST_TEST((refused.kind == redlock::lock_kind::reentrant));
  BOOST_TEST((refused.error == redlock::errc::not_acquired));
  BOOST_TEST(refused.attempts == 2u);
  a.release(held);

  // A fair waiter handed the lock by the holder's release: the hand-off is
  // timed from the release it heard, well before its next poll (2 s away).
  auto second = handed_over(m, a, b, "line");
  auto handed = rec->last("line");
  BOOST_TEST((handed.kind == redlock::lock_kind::fair));
  BOOST_TEST(!handed.error);
  BOOST_REQUIRE(handed.since_release.has_value());
  BOOST_TEST(handed.since_release->count() <= handed.took.count());
  BOOST_TEST(handed.took < 1900ms);  // woken by the release, not by its next poll
  b.release(second);
}

// A handed-over fair lock is confirmed by a round that extends it to the
// full ttl, and its window with it: an observer (a tracer, the fault
// suite's revival check) hears that round as an extend span, as it hears
// an extend or a renewal. Without it, the window moved with no round seen.
BOOST_AUTO_TEST_CASE(a_fair_hand_over_confirmation_is_reported_as_an_extend_span) {
  masters m(3);
  auto log = std::make_shared<span_log>();
  auto o = m.options(200ms);
  o.observer = log;
  redlock::client a(o), b(o);
  // (The queue timeout must exceed a waiter's longest gap between polls:
  // two node timeouts and its 2 s retry delay.)
  auto second = handed_over(m, a, b, "confirmed", 4000ms);
  BOOST_TEST(second.remaining_validity() < 4100ms);  // handed for the queue timeout only
  BOOST_TEST(redlock::testing::eventually([&] { return log->count(redlock::span_kind::extend, "confirmed") == 1u; }),
             "extend spans of 'confirmed': " << log->count(redlock::span_kind::extend, "confirmed"));
  BOOST_TEST(second.remaining_validity() > 4s);  // the full ttl (5 s), not the hand-over's
  b.release(second);
}

// An async operation refused for a bad argument completes with the code; the
// message naming the bad value reaches the observer's log.
BOOST_AUTO_TEST_CASE(async_refusals_log_the_message_naming_the_bad_value) {
  masters m(3);
  auto obs = std::make_shared<logging_counters>();
  auto o = m.options();
  o.observer = obs;
  redlock::client c(o);
  redlock::acquire_options bad{.ttl = 10ms};  // not above the node timeout
  auto acquired = c.async().async_acquire("logged", bad, boost::asio::use_future);
  BOOST_CHECK_EXCEPTION(acquired.get(), boost::system::system_error, [](const boost::system::system_error& e) {
    return e.code() == redlock::errc::node_timeout_too_large;
  });
  redlock::acquire_options no_owner{.kind = redlock::lock_kind::fair};
  auto refused = c.async().async_acquire("logged", no_owner, boost::asio::use_future);
  BOOST_CHECK_THROW(refused.get(), boost::system::system_error);
  std::lock_guard g(obs->mu);
  BOOST_REQUIRE(obs->lines.size() >= 2u);
  auto logged = [&](const std::string& part) {
    return std::any_of(obs->lines.begin(), obs->lines.end(),
                       [&](const std::string& l) { return l.find(part) != std::string::npos; });
  };
  BOOST_TEST(logged("async_acquire: "));
  BOOST_TEST(logged("10 ms"));
  BOOST_TEST(logged("acquire_options::owner is empty"));
  BOOST_TEST(obs->log_warnings.load() >= 2u);
}
