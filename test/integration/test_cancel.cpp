// SPDX-License-Identifier: Apache-2.0
// Cancelling the blocking calls with a std::stop_token (client::acquire,
// try_acquire, campaign; redlock::mutex::lock): a stop request from another
// thread ends the call with operation_aborted, and nothing of the attempt is
// left on any master (its grants, its place on the wake lists or in the fair
// queue). A token already stopped sends nothing.
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

/// Requests a stop on `source` from a thread of its own once `ready` holds
/// (polled; the masters' state, or a time), and records when. Read `at` and
/// `was_ready` after join().
struct stop_when {
  template <typename Ready>
  explicit stop_when(Ready ready)
      : thread([this, ready] {
          was_ready = eventually(ready, 10000ms);
          at = clock_type::now();
          source.request_stop();
        }) {}
  explicit stop_when(std::chrono::milliseconds after)
      : stop_when([t = clock_type::now() + after] { return clock_type::now() >= t; }) {}
  void join() { thread.join(); }
  std::stop_source source;
  bool was_ready = false;
  clock_type::time_point at{};
  std::jthread thread;
};

/// What `f` throws: the redlock::error's code and report (attempts), or no code.
struct thrown {
  boost::system::error_code code;
  unsigned attempts = 0;
};
template <typename F>
thrown thrown_by(F&& f) {
  try {
    f();
  } catch (const redlock::error& e) {
    return {e.code(), e.report() ? e.report()->attempts : 0u};
  }
  return {};
}

// Far beyond how long a cancelled call may take (a node timeout, when an
// attempt is in flight): the calls below would otherwise last their wait.
constexpr auto long_wait = 20000ms;
constexpr auto prompt = 4000ms;

/// Every master has `n` waiters in the fair queue of `name`.
bool queue_is(masters& m, const std::string& name, std::size_t n) {
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i].command({"ZCARD", keys::queue(name)}) != std::to_string(n)) return false;
  return true;
}

std::chrono::milliseconds since(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t);
}

}  // namespace

// One master paused and another holding the name for someone else: the
// attempt waits for the paused master until its node timeout. Stopped
// meanwhile, the call returns once the round is decided (not after its
// wait), having released the grant of the master that said yes and, behind
// the attempt on its connection, whatever the paused master grants when it
// runs again.
BOOST_AUTO_TEST_CASE(a_stop_mid_round_with_a_master_paused_leaves_no_key) {
  masters m(3);
  redlock::client c(m.options(1000ms));
  c.status("mid-round");  // connected to every master before one stops
  m[1].command({"SET", "mid-round", "someone-else"});
  auto calls_before = redlock::testing::lock_calls(m[2]);
  m[2].pause();
  stop_when stop([&] { return m[0].command({"EXISTS", "mid-round"}) == "1"; });
  auto got = thrown_by([&] {
    c.acquire("mid-round", {.ttl = 30000ms, .wait = long_wait, .retry_delay = 5000ms}, stop.source.get_token());
  });
  BOOST_TEST(got.code == asio::error::operation_aborted);
  BOOST_TEST(got.attempts == 1u);  // stopped during the first round
  stop.join();
  BOOST_TEST(stop.was_ready);
  BOOST_TEST(since(stop.at) < prompt);
  BOOST_TEST(eventually([&] { return m[0].command({"EXISTS", "mid-round"}) == "0"; }));
  m[2].resume();
  // The attempt ran there (behind it on that connection: its release).
  BOOST_TEST(eventually([&] { return redlock::testing::lock_calls(m[2]) > calls_before; }));
  BOOST_TEST(eventually([&] { return m[2].command({"EXISTS", "mid-round"}) == "0"; }));
  BOOST_TEST(m[1].command({"GET", "mid-round"}) == "someone-else");
  BOOST_TEST(eventually([&] { return wake_list_is(m, "mid-round", 0); }));
}

// Refused, and waiting on the retry timer and the wake lists: stopped, it
// returns at once and leaves the wake lists.
BOOST_AUTO_TEST_CASE(a_stop_while_waiting_leaves_the_wake_lists) {
  masters m(3);
  redlock::client holder(m.options());
  redlock::client waiter(m.options());
  auto held = holder.acquire("waiting", {.ttl = 30000ms});
  stop_when stop([&] { return wake_list_is(m, "waiting", 1); });
  auto got = thrown_by([&] {
    waiter.acquire("waiting", {.ttl = 30000ms, .wait = long_wait, .retry_delay = 5000ms}, stop.source.get_token());
  });
  BOOST_TEST(got.code == asio::error::operation_aborted);
  BOOST_TEST(got.attempts == 1u);
  stop.join();
  BOOST_TEST(stop.was_ready);
  BOOST_TEST(since(stop.at) < prompt);
  BOOST_TEST(eventually([&] { return wake_list_is(m, "waiting", 0); }));
  for (std::size_t i = 0; i < m.size(); ++i) BOOST_TEST(m[i].command({"GET", "waiting"}) == held.token());
  holder.release(held);
}

// The error_code form and a semaphore: the same, through `ec`.
BOOST_AUTO_TEST_CASE(a_stopped_permit_wait_reports_through_ec_and_leaves_no_permit) {
  masters m(3);
  redlock::client holder(m.options());
  redlock::client waiter(m.options());
  redlock::acquire_options permit{.ttl = 30000ms, .kind = redlock::lock_kind::semaphore, .permits = 1};
  auto held = holder.acquire("permits", permit);
  auto waiting = permit;
  waiting.wait = long_wait;
  waiting.retry_delay = 5000ms;
  stop_when stop([&] { return wake_list_is(m, "permits", 1); });
  boost::system::error_code ec;
  auto got = waiter.acquire("permits", waiting, stop.source.get_token(), ec);
  BOOST_TEST(ec == asio::error::operation_aborted);
  BOOST_TEST(!got);
  stop.join();
  BOOST_TEST(stop.was_ready);
  BOOST_TEST(since(stop.at) < prompt);
  BOOST_TEST(eventually([&] { return wake_list_is(m, "permits", 0); }));
  for (std::size_t i = 0; i < m.size(); ++i)
    BOOST_TEST(m[i].command({"GET", keys::permit("permits", 0)}) == held.token());
  holder.release(held);
}

// A fair waiter stopped while in line leaves the queue: the lock passes on
// to whoever is behind it, not to a waiter that is gone.
BOOST_AUTO_TEST_CASE(a_stopped_fair_waiter_leaves_the_queue) {
  masters m(3);
  redlock::client holder(m.options());
  redlock::client waiter(m.options());
  auto held = holder.acquire("line", {.ttl = 30000ms, .kind = redlock::lock_kind::fair, .owner = "first"});
  stop_when stop([&] { return queue_is(m, "line", 1); });
  auto got = thrown_by([&] {
    waiter.acquire("line",
                   {.ttl = 30000ms, .wait = long_wait, .retry_delay = 5000ms, .kind = redlock::lock_kind::fair,
                    .owner = "second", .queue_timeout = 20000ms},
                   stop.source.get_token());
  });
  BOOST_TEST(got.code == asio::error::operation_aborted);
  stop.join();
  BOOST_TEST(stop.was_ready);
  BOOST_TEST(since(stop.at) < prompt);
  BOOST_TEST(eventually([&] { return queue_is(m, "line", 0); }));
  holder.release(held);
  BOOST_TEST(eventually([&] { return m.holding("line") == 0u; }));
}

BOOST_AUTO_TEST_CASE(a_stopped_campaign_leaves_the_leader_alone) {
  masters m(3);
  redlock::client leader(m.options());
  redlock::client rival(m.options());
  auto leading = leader.campaign("office", {.ttl = 30000ms});
  stop_when stop([&] { return wake_list_is(m, "office", 1); });
  auto got = thrown_by([&] {
    rival.campaign("office", {.ttl = 30000ms, .wait = long_wait, .retry_delay = 5000ms}, stop.source.get_token());
  });
  BOOST_TEST(got.code == asio::error::operation_aborted);
  stop.join();
  BOOST_TEST(stop.was_ready);
  BOOST_TEST(since(stop.at) < prompt);
  BOOST_TEST(eventually([&] { return wake_list_is(m, "office", 0); }));
  auto who = rival.leader("office");
  BOOST_TEST_REQUIRE(who.has_value());
  BOOST_TEST(who->token == leading.token());
  leader.resign(leading);
}

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

BOOST_AUTO_TEST_CASE(a_mutex_lock_ends_false_on_a_stop_and_true_when_held) {
  masters m(3);
  redlock::client holder(m.options());
  redlock::client c(m.options());
  auto held = holder.acquire("jobs", {.ttl = 30000ms});
  redlock::mutex jobs(c, "jobs", {.ttl = 30000ms, .retry_delay = 5000ms});
  {
    stop_when stop([&] { return wake_list_is(m, "jobs", 1); });
    BOOST_TEST(!jobs.lock(stop.source.get_token()));
    stop.join();
  BOOST_TEST(stop.was_ready);
  BOOST_TEST(since(stop.at) < prompt);
  }
  BOOST_TEST(!jobs.owns_lock());
  BOOST_TEST(eventually([&] { return wake_list_is(m, "jobs", 0); }));
  holder.release(held);
  std::stop_source never;
  BOOST_TEST(jobs.lock(never.get_token()));
  BOOST_TEST(jobs.owns_lock());
  jobs.unlock();
  BOOST_TEST(eventually([&] { return m.holding("jobs") == 0u; }));
}

// Stopped before the call: it returns at once, and no master hears of it.
BOOST_AUTO_TEST_CASE(a_token_stopped_before_the_call_sends_nothing) {
  masters m(3);
  redlock::client c(m.options());
  std::stop_source stopped;
  stopped.request_stop();
  auto token = stopped.get_token();
  std::vector<long> before;
  for (std::size_t i = 0; i < m.size(); ++i) before.push_back(redlock::testing::lock_calls(m[i]));

  BOOST_TEST(thrown_by([&] { c.acquire("early", {}, token); }).code == asio::error::operation_aborted);
  BOOST_TEST(thrown_by([&] { c.try_acquire("early", {}, token); }).code == asio::error::operation_aborted);
  BOOST_TEST(thrown_by([&] { c.campaign("early", {}, token); }).code == asio::error::operation_aborted);
  boost::system::error_code ec;
  BOOST_TEST(!c.acquire("early", {}, token, ec));
  BOOST_TEST(ec == asio::error::operation_aborted);
  BOOST_TEST(!c.campaign("early", {}, token, ec));
  BOOST_TEST(ec == asio::error::operation_aborted);
  redlock::mutex early(c, "early");
  BOOST_TEST(!early.lock(token));

  for (std::size_t i = 0; i < m.size(); ++i) BOOST_TEST(redlock::testing::lock_calls(m[i]) == before[i]);
  BOOST_TEST(m.holding("early") == 0u);
}

// Bad options are still reported as such, stopped or not.
BOOST_AUTO_TEST_CASE(bad_options_are_reported_before_a_stop) {
  masters m(1);
  redlock::client c(m.options());
  std::stop_source stopped;
  stopped.request_stop();
  BOOST_TEST(thrown_by([&] { c.acquire("", {}, stopped.get_token()); }).code == redlock::errc::empty_name);
}
