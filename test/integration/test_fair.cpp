// SPDX-License-Identifier: Apache-2.0
#define BOOST_TEST_MODULE integration_fair
#include <boost/test/unit_test.hpp>

#include "masters.hpp"
#include "scripts/keys.hpp"
#include "scripts/script.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <type_traits>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::lock_kind;
using redlock::testing::masters;
namespace keys = redlock::detail::keys;
using redlock::testing::eventually;
using steady = std::chrono::steady_clock;

namespace {

redlock::acquire_options fair(std::chrono::milliseconds wait = 0ms) {
  redlock::acquire_options o;
  o.ttl = 5000ms;
  o.kind = lock_kind::fair;
  o.wait = wait;
  o.retry_delay = 100ms;
  o.retry_jitter = 20ms;
  o.queue_timeout = 2000ms;
  return o;
}

// Options for a client whose attempts `stats` counts.
redlock::client_options counted(masters& m, const std::shared_ptr<redlock::counting_observer>& stats) {
  auto opts = m.options();
  opts.observer = stats;
  return opts;
}

// Runs `body` on its own thread. Boost.Test is not thread-safe, so the
// thread asserts nothing: it keeps what `body` returned, or the exception it
// threw, and get() hands that to the test's main thread after joining. The
// destructor joins too, so a failed BOOST_REQUIRE on the main thread unwinds
// instead of destroying a joinable std::thread (std::terminate).
template <typename T>
class background {
 public:
  template <typename F>
  explicit background(F body)
      : thread_([this, body = std::move(body)]() mutable {
          try {
            if constexpr (std::is_void_v<T>)
              body();
            else
              result_.emplace(body());
          } catch (...) {
            error_ = std::current_exception();
          }
        }) {}
  background(const background&) = delete;
  background& operator=(const background&) = delete;
  ~background() { join(); }

  void join() {
    if (thread_.joinable()) thread_.join();
  }
  /// Joins; rethrows what the body threw, else returns what it returned.
  T get() {
    join();
    if (error_) std::rethrow_exception(error_);
    if constexpr (!std::is_void_v<T>) return std::move(*result_);
  }

 private:
  std::conditional_t<std::is_void_v<T>, bool, std::optional<T>> result_{};
  std::exception_ptr error_;
  std::thread thread_;  // last: starts once the members it writes exist
};

// On its own thread: acquires `name` with a 3 s retry delay (so only a
// wake-up makes it quick), notes when it got the lock, and releases it.
struct timed_waiter {
  background<steady::time_point> run;

  timed_waiter(redlock::client& c, const std::string& name, redlock::acquire_options o)
      : run([&c, name, o]() mutable {
          o.retry_delay = 3000ms;
          o.retry_jitter = 0ms;
          auto l = c.acquire(name, o);
          auto at = steady::now();
          c.release(l);
          return at;
        }) {}
  /// Joins, then returns how long after `since` the lock was acquired (an
  /// error on the waiter's thread is rethrown here, on the test's thread).
  steady::duration acquired_after(steady::time_point since) { return run.get() - since; }
};

// The owner field holding a reentrant/fair lock on one master (the hash's
// other field, ':hold-id', is bookkeeping: docs/algorithm.md, section 7).
std::string holder_field(redlock::testing::redis_process& s, const std::string& key) {
  std::istringstream fields(s.command({"HKEYS", key}));
  for (std::string f; fields >> f;)
    if (!f.starts_with(':')) return f;
  return {};
}

// A hold id at least as large as any the test's clients drew: a release
// script run by hand with it may delete their holds.
const std::string any_hold_id = "1000000000";

std::size_t queued_on(redlock::testing::redis_process& s, const std::string& key) {
  auto n = s.command({"ZCARD", keys::queue(key)});
  return n.starts_with("ERR") ? 0 : std::stoul(n);
}

// K waiters enqueue one after the other behind a holder; then the holder
// releases and each takes and releases the lock in turn. Returns the order
// in which they acquired (waiter indexes) and the FIFO violations.
struct fifo_run {
  std::vector<int> order;
  int violations = 0;
  std::vector<std::string> errors;
};

fifo_run run_fifo(masters& m, const std::string& key, int waiters, const std::function<void()>& after_enqueue = {},
                  std::size_t watch_master = 0) {
  // Generous node timeout: order, not speed, is under test here.
  redlock::client holder_client(m.options(300ms));
  auto held = holder_client.acquire(key, fair());
  std::vector<std::unique_ptr<redlock::client>> clients;
  for (int i = 0; i < waiters; ++i) clients.push_back(std::make_unique<redlock::client>(m.options(300ms)));
  std::mutex mu;
  fifo_run run;
  std::vector<std::unique_ptr<background<void>>> waiters_done;
  for (int i = 0; i < waiters; ++i) {
    waiters_done.push_back(std::make_unique<background<void>>([&, i] {
      auto l = clients[i]->acquire(key, fair(20000ms));
      {
        std::lock_guard g(mu);
        run.order.push_back(i);
      }
      std::this_thread::sleep_for(10ms);
      clients[i]->release(l);
    }));
    // Known order: the next waiter starts once this one is queued.
    BOOST_REQUIRE(eventually([&] { return queued_on(m[watch_master], key) == std::size_t(i + 1); }));
    std::this_thread::sleep_for(2ms);  // distinct enqueue scores (ms resolution)
  }
  if (after_enqueue) after_enqueue();
  holder_client.release(held);
  for (int i = 0; i < waiters; ++i) {
    try {
      waiters_done[i]->get();
    } catch (const std::exception& e) {
      run.errors.push_back("waiter " + std::to_string(i) + ": " + e.what());
    }
  }
  for (auto& e : run.errors) BOOST_ERROR(e);
  for (std::size_t i = 0; i < run.order.size(); ++i)
    if (run.order[i] != int(i)) ++run.violations;
  return run;
}

}  // namespace

BOOST_AUTO_TEST_CASE(fair_waiters_acquire_in_enqueue_order) {
  masters m(3);
  auto run = run_fifo(m, "fifo", 5);
  BOOST_TEST(run.order.size() == 5u);
  BOOST_TEST(run.violations == 0);
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("fifo") == 0u; }));
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(eventually([&] { return queued_on(m[i], "fifo") == 0u; }));
}

BOOST_AUTO_TEST_CASE(fair_fifo_with_one_master_stopped) {
  masters m(5);
  m[4].pause();
  auto run = run_fifo(m, "fifo-stopped", 4);
  m[4].resume();
  BOOST_TEST(run.violations == 0);
}

BOOST_AUTO_TEST_CASE(fair_fifo_with_one_masters_queue_missing_an_entry) {
  masters m(3);
  auto run = run_fifo(m, "fifo-gap", 4, [&] {
    // Master 2 forgets the first waiter (e.g. restarted): the others still agree.
    auto first = m[0].command({"ZRANGE", keys::queue("fifo-gap"), "0", "0"});
    m[2].command({"ZREM", keys::queue("fifo-gap"), first});
  });
  BOOST_TEST(run.violations == 0);
}

BOOST_AUTO_TEST_CASE(fair_place_in_line_is_when_the_caller_asked) {
  // A asks first, but its client's executor only gets to the request after B
  // (a busy I/O thread). A is still served first: its place in line is the
  // moment it called, not when its client first reached the masters.
  masters m(3);
  redlock::client holder(m.options(300ms)), b(m.options(300ms));
  auto held = holder.acquire("asked", fair());
  boost::asio::io_context io_a;
  auto work = boost::asio::make_work_guard(io_a);
  redlock::async_client a(io_a.get_executor(), m.options(300ms));
  std::mutex mu;
  std::vector<std::string> order;
  std::atomic<bool> a_released{false};
  auto opts_a = fair(20000ms);
  opts_a.owner = "task-a";
  a.async_acquire("asked", opts_a, [&](boost::system::error_code ec, redlock::lock l) {
    {
      std::lock_guard g(mu);
      order.push_back(ec ? "a failed: " + ec.message() : "a");
    }
    if (ec) return a_released.store(true);
    a.async_release(l, [&](boost::system::error_code) { a_released = true; });
  });
  std::this_thread::sleep_for(20ms);  // B asks clearly later...
  background<void> tb([&] {
    auto l = b.acquire("asked", fair(20000ms));
    {
      std::lock_guard g(mu);
      order.push_back("b");
    }
    b.release(l);
  });
  for (std::size_t i = 0; i < 3; ++i)  // ...and is queued first
    BOOST_REQUIRE(eventually([&] { return queued_on(m[i], "asked") == 1u; }));
  // Runs A's executor; stopped and joined on every way out of the test.
  struct io_thread {
    boost::asio::io_context& io;
    std::thread thread{[this] { io.run(); }};
    ~io_thread() {
      io.stop();
      thread.join();
    }
  } ta{io_a};
  // Both in line everywhere (a master A has not reached yet may rightly
  // hand the lock to B).
  for (std::size_t i = 0; i < 3; ++i) BOOST_REQUIRE(eventually([&] { return queued_on(m[i], "asked") == 2u; }));
  holder.release(held);
  tb.get();
  BOOST_REQUIRE(eventually([&] {
    std::lock_guard g(mu);
    return order.size() == 2u;
  }));
  // Stop A's executor only once its release is done (A acquires last, and
  // its release must reach the masters before the test ends).
  BOOST_REQUIRE(eventually([&] { return a_released.load(); }));
  work.reset();
  BOOST_TEST(order == (std::vector<std::string>{"a", "b"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(fair_waiter_keeps_its_place_where_a_failed_attempt_was_granted) {
  // Another holder on masters 0 and 1; master 2 free with an empty queue. A
  // waiter's attempt is granted on master 2 only, misses its quorum and is
  // released there; it must still be in line on master 2 (it once was not,
  // so a later waiter could get ahead of it there).
  masters m(3);
  for (std::size_t i : {0u, 1u}) {
    m[i].command({"HSET", "place", "other-client:owner", "1"});
    m[i].command({"PEXPIRE", "place", "60000"});
  }
  redlock::client waiter(m.options());
  auto o = fair(1500ms);
  o.retry_delay = 1000ms;
  o.retry_jitter = 0ms;
  background<bool> acquired([&] { return waiter.try_acquire("place", o).has_value(); });
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(eventually([&] { return queued_on(m[i], "place") == 1u; }, 900ms));
  BOOST_TEST(eventually([&] { return m[2].command({"EXISTS", "place"}) == "0"; }));  // the failed attempt's grant was released
  BOOST_TEST(!acquired.get());
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(eventually([&] { return queued_on(m[i], "place") == 0u; }));
}

BOOST_AUTO_TEST_CASE(fair_requests_older_than_our_latest_poll_leave_our_place_alone) {
  // The scripts' side of the hold id for the queue (docs/algorithm.md,
  // section 7), by hand on one master: a poll or a leaving release of ours
  // that arrives after a later poll neither moves us back in line nor takes
  // us out of it; the later acquisition's own release does.
  masters m(1);
  m[0].command({"HSET", "line", "other:o", "1"});
  m[0].command({"PEXPIRE", "line", "60000"});
  auto poll = [&](const std::string& score, const std::string& id) {
    return m[0].command({"EVAL", std::string(redlock::detail::scripts::fair_acquire.body), "5", "line",
                         keys::fence("line"), keys::queue("line"), keys::queue_deadlines("line"), keys::queue_terms("line"), "c:o", "5000", "0",
                         "first", score, "10000", id, "1"});
  };
  auto leave = [&](const std::string& id) {
    return m[0].command({"EVAL", std::string(redlock::detail::scripts::reentrant_release.body), "4", "line",
                         keys::queue("line"), keys::queue_deadlines("line"), keys::queue_terms("line"), "c:o", keys::released_channel("line"), "1", "1",
                         "rel", id});
  };
  BOOST_TEST(poll("200", "5") == "-1");  // first in line, the lock held by another
  BOOST_TEST(poll("100", "3") == "(nil)");  // a late poll from an older acquisition
  BOOST_TEST(m[0].command({"ZSCORE", keys::queue("line"), "c:o"}) == "200");
  BOOST_TEST(m[0].command({"HGET", keys::queue_terms("line"), "c:o"}) == "5 5000");
  BOOST_TEST(leave("4") == "0");  // the older acquisition giving up, late
  BOOST_TEST(queued_on(m[0], "line") == 1u);
  BOOST_TEST(leave("5") == "0");  // this one giving up (it holds nothing)
  BOOST_TEST(queued_on(m[0], "line") == 0u);
  BOOST_TEST(m[0].command({"HEXISTS", "line", "other:o"}) == "1");  // never another owner's hold
}

BOOST_AUTO_TEST_CASE(fair_poll_with_a_short_queue_timeout_keeps_a_long_waiters_place) {
  // Waiters may use different queue timeouts on one lock. A poll with a
  // short one must not cut short the expiry of the line's keys: a waiter
  // with a long one, polling less often, would find its place gone (and be
  // put back with its old score only after others were granted meanwhile).
  masters m(1);
  m[0].command({"HSET", "mixed", "other:o", "1"});  // held, so both wait in line
  m[0].command({"PEXPIRE", "mixed", "60000"});
  auto poll = [&](const std::string& owner, const std::string& score, const std::string& queue_timeout) {
    return m[0].command({"EVAL", std::string(redlock::detail::scripts::fair_acquire.body), "5", "mixed",
                         keys::fence("mixed"), keys::queue("mixed"), keys::queue_deadlines("mixed"),
                         keys::queue_terms("mixed"), owner, "5000", "0", "first", score, queue_timeout, "7", "1"});
  };
  BOOST_TEST(poll("long:o", "100", "60000") == "-1");
  BOOST_TEST(poll("short:o", "200", "600") == "-2");
  for (auto& key : {keys::queue("mixed"), keys::queue_deadlines("mixed"), keys::queue_terms("mixed")}) {
    // The long waiter's drop-out deadline is 60 s after its poll: its keys
    // must outlive it.
    auto pttl = std::stoll(m[0].command({"PTTL", key}));
    BOOST_TEST(pttl > 59000, key << " expires in " << pttl << " ms");
  }
  // The short waiter polling on keeps them alive no longer than needed: no
  // key is left without an expiry.
  BOOST_TEST(poll("short:o", "200", "600") == "-2");
  BOOST_TEST(std::stoll(m[0].command({"PTTL", keys::queue("mixed")})) > 0);
}

BOOST_AUTO_TEST_CASE(fair_holder_leaves_the_queue_also_where_it_did_not_hold_the_lock) {
  // The holder's leave at grant time did not reach master 2 (and it does not
  // hold the lock there): its release must still take it out of that queue,
  // or it would stay first in line there until the stale-waiter sweep.
  masters m(3);
  redlock::client holder(m.options());
  auto held = holder.acquire("stale-head", fair());
  auto field = holder_field(m[0], "stale-head");
  // The holder leaves the queues by a round sent once it has its lock: wait
  // until it did, then plant the stale entry in one step (planted between
  // that round's two removals, half of it outlived the release).
  for (std::size_t i = 0; i < 3; ++i) BOOST_REQUIRE(eventually([&] { return queued_on(m[i], "stale-head") == 0u; }));
  m[2].command({"EVAL",
                "redis.call('DEL', KEYS[1]) redis.call('ZADD', KEYS[2], 1, ARGV[1]) "
                "redis.call('ZADD', KEYS[3], '99999999999999', ARGV[1])",
                "3", "stale-head", keys::queue("stale-head"), keys::queue_deadlines("stale-head"), field});
  BOOST_REQUIRE(queued_on(m[2], "stale-head") == 1u);
  holder.release(held);
  BOOST_TEST(eventually([&] { return queued_on(m[2], "stale-head") == 0u; }));
  BOOST_TEST(m[2].command({"ZSCORE", keys::queue_deadlines("stale-head"), field}) == "(nil)");
}

BOOST_AUTO_TEST_CASE(fair_crashed_waiter_is_swept_after_its_timeout) {
  // A "crashed" waiter: queued first on every master, never polls again.
  // Without hand-over terms (a fenced waiter) the release only names it;
  // with them the release hands it the lock, but only until its queue
  // deadline, not for its 5 s ttl.
  for (std::string may_be_handed : {"0", "1"}) {
    BOOST_TEST_CONTEXT("may be handed the lock: " << may_be_handed) {
      masters m(3);
      redlock::client holder(m.options()), waiter(m.options());
      auto held = holder.acquire("sweep", fair());
      for (std::size_t i = 0; i < 3; ++i)
        m[i].command({"EVAL", std::string(redlock::detail::scripts::fair_acquire.body), "5", "sweep", keys::fence("sweep"),
                      keys::queue("sweep"), keys::queue_deadlines("sweep"), keys::queue_terms("sweep"), "ghost:0", "5000", "0", "first", "1", "600",
                      "7", may_be_handed});
      BOOST_TEST(queued_on(m[0], "sweep") == 1u);
      holder.release(held);
      auto t0 = steady::now();
      auto l = waiter.acquire("sweep", fair(5000ms));  // behind the ghost until it is swept
      auto waited = steady::now() - t0;
      BOOST_TEST((waited >= 300ms));  // the ghost was first in line for a while
      BOOST_TEST((waited < 3000ms));  // but only about its timeout, not forever nor its ttl
      BOOST_TEST(m[0].command({"ZSCORE", keys::queue("sweep"), "ghost:0"}) == "(nil)");
      BOOST_TEST(m[0].command({"HGET", keys::queue_terms("sweep"), "ghost:0"}) == "(nil)");
      waiter.release(l);
    }
  }
}

BOOST_AUTO_TEST_CASE(fair_waiter_that_gives_up_leaves_the_queue) {
  masters m(3);
  redlock::client holder(m.options()), quitter(m.options());
  auto held = holder.acquire("quit", fair());
  BOOST_TEST(!quitter.try_acquire("quit", fair(300ms)).has_value());
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_TEST(eventually([&] { return queued_on(m[i], "quit") == 0u; }));
  holder.release(held);
}

BOOST_AUTO_TEST_CASE(fair_and_mutex_wakeups_beat_the_retry_delay) {
  for (auto kind : {lock_kind::mutex, lock_kind::reentrant, lock_kind::fair}) {
    BOOST_TEST_CONTEXT("kind " << int(kind)) {
      masters m(3);
      redlock::client holder(m.options()), waiter(m.options());
      redlock::acquire_options o;
      o.kind = kind;
      o.ttl = 5000ms;
      o.queue_timeout = 10000ms;
      auto held = holder.acquire("wake", o);
      o.wait = 8000ms;
      timed_waiter t(waiter, "wake", o);
      // Let the waiter fail once and subscribe (fair waiters listen on their
      // client's own channel, {wake}:released:<client id>) on every master:
      // a release published where the SUBSCRIBE had not yet arrived is lost,
      // and a mutex waiter named by only one master of three sleeps on.
      for (std::size_t i = 0; i < 3; ++i)
        BOOST_REQUIRE(eventually([&] { return !m[i].command({"PUBSUB", "CHANNELS", keys::released_channel("wake") + "*"}).empty(); }));
      auto released_at = steady::now();
      holder.release(held);
      auto handoff = t.acquired_after(released_at);
      BOOST_TEST((handoff < 1000ms), "hand-off took "
                                         << std::chrono::duration_cast<std::chrono::milliseconds>(handoff).count()
                                         << " ms with a 3000 ms retry delay");
      // Nobody waits any more: the channel is unsubscribed on every master.
      for (std::size_t i = 0; i < 3; ++i)
        BOOST_TEST(eventually([&] { return m[i].command({"PUBSUB", "CHANNELS", keys::released_channel("wake") + "*"}).empty(); }));
    }
  }
}

BOOST_AUTO_TEST_CASE(fair_subscriptions_do_not_leak_connections_or_channels) {
  masters m(3);
  redlock::client holder(m.options()), waiter(m.options());
  for (int round = 0; round < 10; ++round) {
    auto name = "leak-" + std::to_string(round);
    auto held = holder.acquire(name, fair());
    background<void> t([&] { waiter.release(waiter.acquire(name, fair(5000ms))); });
    BOOST_REQUIRE(eventually([&] { return queued_on(m[0], name) == 1u; }));
    holder.release(held);
    t.get();
  }
  // Two clients: each one request connection and at most one subscriber
  // connection per master, plus the probe's own.
  auto clients = m[0].command({"INFO", "clients"});
  auto at = clients.find("connected_clients:");
  BOOST_REQUIRE(at != std::string::npos);
  BOOST_TEST(std::stoi(clients.substr(at + 18)) <= 5);
  BOOST_TEST(eventually([&] { return m[0].command({"PUBSUB", "CHANNELS"}).empty(); }));
}

BOOST_AUTO_TEST_CASE(fair_and_mutex_wakeups_do_not_spin_on_failed_attempts) {
  // Someone else's key on 2 of 3 masters: every attempt fails and cleans up
  // its one grant. That clean-up must not wake the waiter itself (it once
  // did: thousands of attempts per second instead of one per retry delay).
  for (auto kind : {lock_kind::mutex, lock_kind::fair}) {
    BOOST_TEST_CONTEXT("kind " << int(kind)) {
      masters m(3);
      auto stats = std::make_shared<redlock::counting_observer>();
      auto opts = counted(m, stats);
      redlock::client c(opts);
      for (std::size_t i : {0u, 1u}) {
        if (kind == lock_kind::mutex)
          m[i].command({"SET", "spin", "someone-else", "PX", "60000"});
        else
          m[i].command({"HSET", "spin", "other-client:owner", "1"});  // another fair holder
      }
      redlock::acquire_options o;
      o.kind = kind;
      o.wait = 1000ms;
      o.retry_delay = 50ms;
      o.retry_jitter = 10ms;
      auto code = redlock::testing::code_of([&] { c.acquire("spin", o); });
      BOOST_TEST((code == errc::not_acquired));
      // About one attempt per 50 ms: 20, allow for jitter and a slow machine.
      BOOST_TEST(stats->acquire_attempts.load() <= 40u, stats->acquire_attempts.load() << " attempts in 1 s");
      BOOST_TEST(stats->acquire_attempts.load() >= 5u);
    }
  }
}

BOOST_AUTO_TEST_CASE(fair_waiters_far_back_poll_less_often) {
  // Only the head can be granted, and it is woken by name; a waiter further
  // back polls only to keep its place, less often the further back it is.
  masters m(3);
  redlock::client holder(m.options());
  auto held = holder.acquire("backoff", fair());
  std::vector<std::shared_ptr<redlock::counting_observer>> stats;
  std::vector<std::unique_ptr<redlock::client>> clients;
  std::vector<std::unique_ptr<background<bool>>> acquired;
  for (int i = 0; i < 4; ++i) {
    stats.push_back(std::make_shared<redlock::counting_observer>());
    auto opts = counted(m, stats.back());
    clients.push_back(std::make_unique<redlock::client>(opts));
    acquired.push_back(std::make_unique<background<bool>>([&, i] {
      auto o = fair(1500ms);
      o.retry_delay = 50ms;
      o.retry_jitter = 0ms;
      return clients[i]->try_acquire("backoff", o).has_value();
    }));
    BOOST_REQUIRE(eventually([&] { return queued_on(m[0], "backoff") == std::size_t(i + 1); }));
  }
  for (auto& a : acquired) BOOST_TEST(!a->get());
  auto head = stats.front()->acquire_attempts.load(), last = stats.back()->acquire_attempts.load();
  BOOST_TEST_MESSAGE("attempts in 1.5 s at a 50 ms retry delay: head " << head << ", fourth in line " << last);
  BOOST_TEST(head >= 15u);
  BOOST_TEST(last * 2 <= head);  // the fourth polls every 4 x 50 ms
  holder.release(held);
}

BOOST_AUTO_TEST_CASE(fair_head_that_gives_up_wakes_the_next_waiter) {
  // A head that gives up while the lock is free leaves no release behind to
  // announce the next head: leaving the queue tells it instead.
  masters m(3);
  redlock::client holder(m.options()), waiter(m.options());
  auto held = holder.acquire("giveup", fair());
  for (std::size_t i = 0; i < 3; ++i)  // a head that will give up, first in line everywhere
    m[i].command({"EVAL", std::string(redlock::detail::scripts::fair_acquire.body), "5", "giveup", keys::fence("giveup"),
                  keys::queue("giveup"), keys::queue_deadlines("giveup"), keys::queue_terms("giveup"), "quitter:0", "5000", "0", "first", "1",
                  "10000", "1", "0"});
  auto o = fair(8000ms);
  o.queue_timeout = 10000ms;
  timed_waiter t(waiter, "giveup", o);
  BOOST_REQUIRE(eventually([&] { return queued_on(m[0], "giveup") == 2u; }));
  holder.release(held);  // names the quitter, who is not listening
  std::this_thread::sleep_for(100ms);
  auto left_at = steady::now();
  for (std::size_t i = 0; i < 3; ++i)  // as a client that gives up leaves
    m[i].command({"EVAL", std::string(redlock::detail::scripts::reentrant_release.body), "4", "giveup",
                  keys::queue("giveup"), keys::queue_deadlines("giveup"), keys::queue_terms("giveup"), "quitter:0", keys::released_channel("giveup"), "1", "1",
                  "quitting", "1"});
  auto waited = t.acquired_after(left_at);
  BOOST_TEST((waited < 1500ms), "acquired " << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                                            << " ms after the head left, with a 3000 ms retry delay");
}

BOOST_AUTO_TEST_CASE(fair_release_hands_the_lock_to_the_head) {
  // The head does not poll again after the release: each master's release
  // gives it the lock there, and a quorum of those is the acquisition. The
  // masters hold it only until the head's queue deadline at first; leaving
  // the queue extends it to the ttl, and the reported validity with it.
  masters m(3);
  auto stats = std::make_shared<redlock::counting_observer>();
  auto opts = counted(m, stats);
  redlock::client holder(m.options()), waiter(opts);
  auto held = holder.acquire("handover", fair());
  auto o = fair(8000ms);
  o.ttl = 20000ms;
  o.queue_timeout = 4000ms;
  o.retry_delay = 3000ms;  // a poll would come this late
  o.retry_jitter = 0ms;
  o.description = "the head";  // written by the confirmation: the releaser's script cannot know it
  struct acquisition {
    redlock::lock lock;
    steady::time_point at;
  };
  background<acquisition> t([&] {
    auto l = waiter.acquire("handover", o);
    return acquisition{l, steady::now()};
  });
  BOOST_REQUIRE(eventually([&] { return !m[0].command({"PUBSUB", "CHANNELS", keys::wake_channel("handover", "*")}).empty(); }));
  auto released_at = steady::now();
  holder.release(held);
  auto [lock, acquired_at] = t.get();
  std::optional<redlock::lock> got = lock;
  auto handoff = acquired_at - released_at;
  BOOST_TEST((handoff < 1000ms), "hand-off took " << std::chrono::duration_cast<std::chrono::milliseconds>(handoff).count()
                                                   << " ms with a 3000 ms retry delay");
  BOOST_TEST(stats->acquire_attempts.load() == 1u);  // its first poll; no second one
  // Held on a quorum, first for about the queue timeout, then the ttl. (The
  // third master's release may run after the head left its queue there.)
  BOOST_TEST(got->remaining_validity() <= 20000ms);
  BOOST_TEST(eventually([&] { return got->remaining_validity() > 15000ms; }));
  BOOST_TEST(eventually([&] {
    int extended = 0;
    for (std::size_t i = 0; i < 3; ++i) extended += std::stoll(m[i].command({"PTTL", "handover"})) > 15000;
    return extended >= 2;
  }));
  BOOST_TEST(eventually([&] {
    std::size_t described = 0;
    for (auto& s : waiter.status("handover")) described += s.description == "the head";
    return described >= 2;
  }));
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST(queued_on(m[i], "handover") == 0u);
    BOOST_TEST(m[i].command({"EXISTS", keys::queue_terms("handover")}) == "0");
  }
  waiter.release(*got);
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(m[i].command({"EXISTS", "handover"}) == "0");
}

// `holder` holds `name`; `waiter` queues behind it with `o` on every master
// and listens; `before_release` runs; the holder releases, which hands the
// waiter the lock. Returns the waiter's lock.
redlock::lock handed_over(masters& m, redlock::client& holder, redlock::client& waiter, const std::string& name,
                          const redlock::acquire_options& o, const std::function<void()>& before_release = {}) {
  auto held = holder.acquire(name, fair());
  background<redlock::lock> t([&] { return waiter.acquire(name, o); });
  for (std::size_t i = 0; i < m.size(); ++i)
    BOOST_REQUIRE(eventually([&] {
      return queued_on(m[i], name) == 1u && !m[i].command({"PUBSUB", "CHANNELS", keys::wake_channel(name, "*")}).empty();
    }));
  if (before_release) before_release();
  holder.release(held);
  return t.get();
}

// A waiter whose polls come no sooner than `retry_delay`, held for `ttl`.
redlock::acquire_options slow_polling_head(std::chrono::milliseconds queue_timeout, std::chrono::milliseconds retry_delay) {
  auto o = fair(8000ms);
  o.ttl = 20000ms;
  o.queue_timeout = queue_timeout;
  o.retry_delay = retry_delay;
  o.retry_jitter = 0ms;
  return o;
}

// The same hand-over without a description, released before its
// confirmation is due: the masters took the head out of line when they
// handed it the lock, so the winner sends nothing but its release. (Before,
// every hand-over cost a leave-the-queue script on every master: 3 calls
// per master here instead of 2.)
BOOST_AUTO_TEST_CASE(a_hand_over_released_at_once_costs_no_confirmation) {
  masters m(3);
  redlock::client holder(m.options()), waiter(m.options());
  std::vector<long> before;
  auto got = handed_over(m, holder, waiter, "quick-handover", slow_polling_head(4000ms, 3000ms), [&] {
    for (std::size_t i = 0; i < 3; ++i) before.push_back(redlock::testing::script_calls(m[i]));
  });
  BOOST_TEST(got.remaining_validity() <= 4000ms);  // handed over: until the head's queue deadline
  BOOST_TEST(m.holding("quick-handover") >= 2u);
  waiter.release(got);
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST(eventually([&] { return m[i].command({"EXISTS", "quick-handover"}) == "0"; }));
    BOOST_TEST(queued_on(m[i], "quick-handover") == 0u);
    BOOST_TEST(m[i].command({"EXISTS", keys::queue_terms("quick-handover")}) == "0");
  }
  // Past the confirmation's time (a third of the 4 s handed window): the
  // release cancelled it.
  std::this_thread::sleep_for(1600ms);
  for (std::size_t i = 0; i < 3; ++i) {
    auto ran = redlock::testing::script_calls(m[i]) - before[i];
    BOOST_TEST(ran == 2, "master " << i << " ran " << ran << " scripts, not only the holder's release and the waiter's");
  }
}

// Held on: the confirmation comes when a third of the handed window has
// passed, and extends the hold to the ttl on the masters and in the
// reported validity.
BOOST_AUTO_TEST_CASE(a_hand_over_held_on_is_confirmed_to_the_ttl) {
  masters m(3);
  redlock::client holder(m.options()), waiter(m.options());
  auto got = handed_over(m, holder, waiter, "held-handover", slow_polling_head(3000ms, 2000ms));
  BOOST_TEST(got.remaining_validity() <= 3000ms);
  // Out of line where it was handed the lock (the third master's release may still be on its way).
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(eventually([&] { return queued_on(m[i], "held-handover") == 0u; }));
  BOOST_TEST(eventually([&] { return got.remaining_validity() > 15000ms; }, 2500ms));
  int extended = 0;
  for (std::size_t i = 0; i < 3; ++i) extended += std::stoll(m[i].command({"PTTL", "held-handover"})) > 15000;
  BOOST_TEST(extended >= 2);
  waiter.release(got);
}

// A queue timeout as long as the ttl: the hand-over holds the lock for the
// whole ttl, so the confirmation is sent only for the description, which
// the releaser's script could not write. It was sent and wrote nothing
// (fair_dequeue.lua wrote the description only with a ttl to extend to):
// the holder was never shown, and a script call per master was spent for
// nothing.
BOOST_AUTO_TEST_CASE(a_hand_over_for_the_whole_ttl_still_writes_the_description) {
  masters m(3);
  auto stats = std::make_shared<redlock::counting_observer>();
  auto waiting_client = counted(m, stats);
  waiting_client.node_timeout = 1000ms;  // its one poll must not time out on a loaded machine
  redlock::client holder(m.options()), waiter(waiting_client);
  auto o = slow_polling_head(20000ms, 3000ms);  // queue timeout = ttl
  o.description = "the head, handed";
  auto got = handed_over(m, holder, waiter, "whole-ttl-handover", o);
  BOOST_TEST(stats->acquire_attempts.load() == 1u);  // its first poll: handed over, not won by a poll
  BOOST_TEST(got.remaining_validity() > 4000ms);     // for the whole ttl
  BOOST_TEST(eventually([&] {
    std::size_t described = 0;
    for (auto& s : waiter.status("whole-ttl-handover")) described += s.description == "the head, handed";
    return described >= 2;
  }), "the description was not written on a quorum");
  waiter.release(got);
  BOOST_TEST(eventually([&] { return m.holding("whole-ttl-handover") == 0u; }));
  BOOST_TEST(eventually([&] { return m.holding(keys::holder("whole-ttl-handover")) == 0u; }));
}

// A handle may outlive its client, released or not: the timer of a
// confirmation still to come must not be destroyed after the client's
// io_context (it was, with the handle: heap-use-after-free under ASan).
BOOST_AUTO_TEST_CASE(handed_over_locks_outlive_their_client) {
  masters m(3);
  redlock::client holder(m.options());
  auto waiter = std::make_unique<redlock::client>(m.options());
  // The handles are destroyed at the end of the test, after their client.
  auto released = handed_over(m, holder, *waiter, "outlives-released", slow_polling_head(4000ms, 3000ms));
  auto held = handed_over(m, holder, *waiter, "outlives-held", slow_polling_head(4000ms, 3000ms));
  waiter->release(released);
  BOOST_TEST(held.remaining_validity() <= 4000ms);  // its confirmation is still to come
  waiter.reset();
  BOOST_TEST(m.holding("outlives-held") >= 2u);
  BOOST_TEST(eventually([&] { return m.holding("outlives-released") == 0u; }));
}

BOOST_AUTO_TEST_CASE(fair_grant_from_before_our_own_release_there_is_not_counted) {
  // The race a hand-over must survive, made deterministic. On master 0 a
  // release hands the waiter the lock, then the waiter's own clean-up of a
  // failed poll deletes it there; the grant's message arrives only after.
  // Counting it with master 1's real hand-over would make a "quorum" of one
  // hold. The waiter must poll instead, and hold a real quorum when it wins.
  masters m(3);
  redlock::client holder(m.options()), waiter(m.options());
  auto held = holder.acquire("stale-grant", fair());
  auto holder_owner = holder_field(m[0], "stale-grant");
  // Free on master 0 only: the waiter's first poll wins it there, fails
  // overall, and releases it there (keeping its place in line).
  m[0].command({"DEL", "stale-grant"});
  auto o = fair(8000ms);
  o.retry_delay = 3000ms;
  o.retry_jitter = 0ms;
  o.queue_timeout = 10000ms;
  background<redlock::lock> t([&] { return waiter.acquire("stale-grant", o); });
  BOOST_REQUIRE(eventually([&] { return !m[0].command({"PUBSUB", "CHANNELS", keys::wake_channel("stale-grant", "*")}).empty(); }));
  BOOST_REQUIRE(eventually([&] { return queued_on(m[1], "stale-grant") == 1u; }));
  BOOST_REQUIRE(eventually([&] { return m[0].command({"EXISTS", "stale-grant"}) == "0"; }));
  auto field = m[1].command({"ZRANGE", keys::queue("stale-grant"), "0", "0"});
  auto channel = keys::wake_channel("stale-grant", field.substr(0, field.find(':')));
  m[0].command({"PUBLISH", channel, "+1 " + field});  // names its first poll (id 1)
  // The holder's release reaches master 1 alone: a real hand-over there.
  m[1].command({"EVAL", std::string(redlock::detail::scripts::reentrant_release.body), "4", "stale-grant",
                keys::queue("stale-grant"), keys::queue_deadlines("stale-grant"), keys::queue_terms("stale-grant"), holder_owner,
                keys::released_channel("stale-grant"), "1", "1", "release-1", any_hold_id});
  std::optional<redlock::lock> got = t.get();
  int holding = 0;
  for (std::size_t i = 0; i < 3; ++i) holding += m[i].command({"HEXISTS", "stale-grant", field}) == "1";
  BOOST_TEST(holding >= 2, "the waiter won holding the lock on " << holding << " of 3 masters");
  waiter.release(*got);
}

BOOST_AUTO_TEST_CASE(fair_waiter_that_gives_up_returns_a_lock_handed_to_it) {
  // The holder's release reaches one master only: it hands the waiter the
  // lock there, short of a quorum. When the waiter gives up it must not
  // leave that hold behind (the next waiter would wait out its queue
  // timeout); its leaving hands the lock on instead.
  masters m(3);
  redlock::client holder(m.options()), waiter(m.options()), next(m.options());
  auto held = holder.acquire("gave-up", fair());
  auto holder_owner = holder_field(m[0], "gave-up");
  auto o = fair(1500ms);
  o.queue_timeout = 10000ms;
  // One poll, then it gives up: a second poll landing just after the
  // hand-over below would be granted there (the hold is its own), fail
  // overall, and its clean-up would delete that hold before the test looks
  // (seen once in a whole-module run).
  o.retry_delay = 3000ms;
  o.retry_jitter = 0ms;
  background<void> quitter([&] { waiter.acquire("gave-up", o); });
  BOOST_REQUIRE(eventually([&] { return queued_on(m[0], "gave-up") == 1u; }));
  background<void> second([&] { next.release(next.acquire("gave-up", fair(8000ms))); });
  BOOST_REQUIRE(eventually([&] { return queued_on(m[0], "gave-up") == 2u; }));
  auto quitter_field = m[0].command({"ZRANGE", keys::queue("gave-up"), "0", "0"});
  m[0].command({"EVAL", std::string(redlock::detail::scripts::reentrant_release.body), "4", "gave-up",
                keys::queue("gave-up"), keys::queue_deadlines("gave-up"), keys::queue_terms("gave-up"), holder_owner, keys::released_channel("gave-up"), "1",
                "1", "release-1", any_hold_id});
  BOOST_TEST(m[0].command({"HEXISTS", "gave-up", quitter_field}) == "1");  // handed over there
  BOOST_CHECK_THROW(quitter.get(), redlock::error);  // it gave up
  BOOST_TEST(eventually([&] { return m[0].command({"HEXISTS", "gave-up", quitter_field}) == "0"; }));
  BOOST_TEST(queued_on(m[1], "gave-up") == 1u);  // the quitter left; the next waiter is in line
  holder.release(held);  // masters 1 and 2 (master 0: not held any more)
  BOOST_CHECK_NO_THROW(second.get());  // the next waiter won (and released)
}

// docs/model/README.md's trail (issue 35), on real masters and in its order:
// a release hands the head the lock on master 0 while the head's poll is
// out (refused there just before, held up on master 2); the poll fails, and
// its clean-up gives that hold back. The head must keep its turn there: the
// hand-over took it out of line on master 0, and a caller who asked later,
// finding the lock free there and itself first in line, was granted it (and
// could so win a quorum while the head still waited).
BOOST_AUTO_TEST_CASE(fair_head_whose_poll_fails_keeps_its_turn_where_it_was_handed_the_lock) {
  masters m(3);
  const std::string name = "overtaken";
  redlock::client holder(m.options()), waiter(m.options(2000ms));  // its poll waits out master 2's pause
  auto held = holder.acquire(name, fair());
  auto holder_owner = holder_field(m[0], name);
  auto o = fair(20000ms);
  o.retry_delay = 10000ms;  // it polls again only when woken below
  o.retry_jitter = 0ms;
  o.queue_timeout = 20000ms;
  background<redlock::lock> head([&] { return waiter.acquire(name, o); });
  // Its first poll failed: in line everywhere, and listening.
  for (std::size_t i = 0; i < 3; ++i) BOOST_REQUIRE(eventually([&] { return queued_on(m[i], name) == 1u; }));
  BOOST_REQUIRE(eventually([&] { return !m[0].command({"PUBSUB", "CHANNELS", keys::wake_channel(name, "*")}).empty(); }));
  auto field = m[0].command({"ZRANGE", keys::queue(name), "0", "0"});
  auto terms_on = [&](std::size_t i) { return m[i].command({"HGET", keys::queue_terms(name), field}); };
  auto first_terms = terms_on(0);
  // Its second poll, woken by name: queued by masters 0 and 1, held up on 2.
  m[2].pause();
  m[0].command({"PUBLISH", keys::wake_channel(name, field.substr(0, field.find(':'))), field});
  BOOST_REQUIRE(eventually([&] { return terms_on(0) != first_terms && terms_on(1) != first_terms; }));
  // The holder's release reaches master 0 now: the head is handed the lock there.
  m[0].command({"EVAL", std::string(redlock::detail::scripts::reentrant_release.body), "4", name, keys::queue(name),
                keys::queue_deadlines(name), keys::queue_terms(name), holder_owner, keys::released_channel(name), "1",
                "1", "release-0", any_hold_id});
  BOOST_REQUIRE(m[0].command({"HEXISTS", name, field}) == "1");
  // Time for its '+<poll> <head>' message to be counted before the poll is
  // decided (if not, the clean-up leaves master 0 alone: no failure, on any code).
  std::this_thread::sleep_for(200ms);
  m[2].resume();  // refuses the poll (the holder holds there): it fails, and is cleaned up
  BOOST_REQUIRE(eventually([&] { return m[0].command({"EXISTS", name}) == "0"; }));  // the hold given back
  BOOST_TEST(m[0].command({"ZSCORE", keys::queue(name), field}) != "(nil)",
             "the head is neither holding nor in line on master 0");
  // A caller who asked after the head was in line on every master.
  auto later = std::to_string(std::stod(m[1].command({"ZSCORE", keys::queue(name), field})) + 1000);
  auto polled = m[0].command({"EVAL", std::string(redlock::detail::scripts::fair_acquire.body), "5", name,
                              keys::fence(name), keys::queue(name), keys::queue_deadlines(name),
                              keys::queue_terms(name), "later:0", "5000", "0", "first", later, "10000", "1", "1"});
  BOOST_TEST(polled != "OK", "a later caller was granted master 0 ahead of the head (" << polled << ")");
  holder.release(held);  // masters 1 and 2 hand the head the lock: a quorum
  std::optional<redlock::lock> got = head.get();
  BOOST_REQUIRE(got);
  waiter.release(*got);
}

namespace {

// fair_acquire.lua by hand on one master: a first acquisition's poll, with
// a queue timeout of 5 s.
std::string fair_poll(redlock::testing::redis_process& s, const std::string& name, const std::string& owner,
                      const std::string& score, const std::string& poll_id, const std::string& fenced = "0",
                      const std::string& ttl = "10000") {
  return s.command({"EVAL", std::string(redlock::detail::scripts::fair_acquire.body), "5", name, keys::fence(name),
                    keys::queue(name), keys::queue_deadlines(name), keys::queue_terms(name), owner, ttl, fenced,
                    "first", score, "5000", poll_id, "1"});
}

bool line_keys_exist(redlock::testing::redis_process& s, const std::string& name) {
  return s.command({"EXISTS", keys::queue(name), keys::queue_deadlines(name), keys::queue_terms(name)}) != "0";
}

}  // namespace

// Issue 38: the lock free and nobody in line, a fair acquisition is granted
// without standing in line (fair_acquire.lua's fast path), and a winner
// that stood in no line sends no leave-the-line script (fair_dequeue.lua).
// Before, it wrote the line's three keys on every master and left them with
// a third script call per master.
BOOST_AUTO_TEST_CASE(an_uncontended_fair_acquisition_stands_in_no_line) {
  masters m(3);
  redlock::client c(m.options(1000ms));  // every master answers in time on a loaded machine
  for (bool fenced : {false, true}) {
    BOOST_TEST_CONTEXT("fenced: " << fenced) {
      const std::string name = fenced ? "alone-fenced" : "alone";
      std::vector<long> before;
      for (std::size_t i = 0; i < 3; ++i) before.push_back(redlock::testing::script_calls(m[i]));
      auto o = fair();
      o.queue_timeout = o.ttl;  // the longest that keeps the grant out of line (fair_acquire.lua)
      o.fenced = fenced;
      o.description = "alone here";
      auto l = c.acquire(name, o);
      if (fenced) BOOST_TEST(l.fence().value_or(0) > 0u);
      std::size_t described = 0;
      for (auto& s : c.status(name)) described += s.description == "alone here";
      BOOST_TEST(described >= 2u);
      c.release(l);
      for (std::size_t i = 0; i < 3; ++i)
        BOOST_TEST(eventually([&] { return m[i].command({"EXISTS", name}) == "0"; }));
      std::this_thread::sleep_for(300ms);  // a leave-the-line round would have run by now
      for (std::size_t i = 0; i < 3; ++i) {
        BOOST_TEST(redlock::testing::command_calls(m[i], {"zadd"}) == 0, "master " << i << " ran ZADD");
        BOOST_TEST(!line_keys_exist(m[i], name));
        // The poll, the status read and the release (and a fenced one's
        // raise), no leave-the-line script.
        auto ran = redlock::testing::script_calls(m[i]) - before[i];
        BOOST_TEST(ran == (fenced ? 4 : 3), "master " << i << " ran " << ran << " scripts");
      }
    }
  }
}

// The script's side, on one master: granted out of line ('FAST'), the
// line's keys unwritten; the clean-up of a failed attempt puts the waiter in
// line with its score (reentrant_release.lua, ARGV[7]), so a later caller
// finding the lock free is not granted ahead of it; and only a free lock
// with an empty line is granted out of line.
BOOST_AUTO_TEST_CASE(fair_acquire_grants_out_of_line_only_a_free_lock_nobody_waits_for) {
  masters m(1);
  auto& s = m[0];
  BOOST_TEST(fair_poll(s, "free", "c:o", "100", "5") == "FAST");
  BOOST_TEST(!line_keys_exist(s, "free"));
  BOOST_TEST(s.command({"HGET", "free", "c:o"}) == "1");
  BOOST_TEST(s.command({"HGET", "free", ":hold-id"}) == "5");
  BOOST_TEST(std::stoll(s.command({"PTTL", "free"})) > 9000);
  BOOST_TEST(fair_poll(s, "free", "c:o", "100", "4") == "(nil)");  // an older poll of ours, late
  BOOST_TEST(fair_poll(s, "free", "other:o", "50", "9") == "-1");  // held: in line, first
  BOOST_TEST(s.command({"ZREM", keys::queue("free"), "other:o"}) == "1");
  // The failed attempt's clean-up: the hold given back, our place kept.
  auto clean_up = s.command({"EVAL", std::string(redlock::detail::scripts::reentrant_release.body), "4", "free",
                             keys::queue("free"), keys::queue_deadlines("free"), keys::queue_terms("free"), "c:o",
                             keys::released_channel("free"), "1", "0", "", "5", "100", "10000"});
  BOOST_TEST(clean_up == "1");
  BOOST_TEST(s.command({"EXISTS", "free"}) == "0");
  BOOST_TEST(s.command({"ZSCORE", keys::queue("free"), "c:o"}) == "100");
  // Free, but we are in line: a later caller waits behind us...
  BOOST_TEST(fair_poll(s, "free", "later:o", "200", "1") == "-2");
  // ...and our next poll is granted, in line.
  BOOST_TEST(fair_poll(s, "free", "c:o", "100", "6") == "OK");
  // Fenced: the counter, still out of line.
  BOOST_TEST(fair_poll(s, "fenced", "c:o", "100", "7", "1") == "1");
  BOOST_TEST(!line_keys_exist(s, "fenced"));
  BOOST_TEST(s.command({"HGET", "fenced", "c:o"}) == "1");
  // A ttl shorter than the queue timeout: the hold could lapse before a
  // failed attempt's clean-up puts us back in line, while the place it
  // replaced would have lasted; such a poll stands in line (granted in it).
  BOOST_TEST(fair_poll(s, "short", "c:o", "100", "8", "0", "1000") == "OK");
  BOOST_TEST(s.command({"ZSCORE", keys::queue("short"), "c:o"}) == "100");
}

// A master that answers the winning poll only after the win (paused): the
// poll runs there later and queues us behind another holder. The winner
// must leave that line (acquire_op::on_late_poll_reply), or it would stay
// first in line there until the queue timeout and hold back every waiter.
BOOST_AUTO_TEST_CASE(a_winner_leaves_the_line_where_its_poll_was_answered_late) {
  for (bool timed_out : {false, true}) {
    BOOST_TEST_CONTEXT("the late master's request timed out: " << timed_out) {
      masters m(3);
      const std::string name = timed_out ? "late-timed-out" : "late";
      m[2].command({"HSET", name, "other-client:owner", "1"});
      m[2].command({"PEXPIRE", name, "60000"});
      redlock::client c(m.options(timed_out ? 300ms : 3000ms));
      auto o = fair();
      o.queue_timeout = 20000ms;  // its place would outlast the test
      o.ttl = o.queue_timeout;    // granted out of line where the lock is free (fair_acquire.lua)
      m[2].pause();
      auto l = c.acquire(name, o);  // masters 0 and 1: granted out of line
      std::this_thread::sleep_for(timed_out ? 600ms : 100ms);
      m[2].resume();
      // The poll ran there (it queued us: ZADD)...
      BOOST_REQUIRE(eventually([&] { return redlock::testing::command_calls(m[2], {"zadd"}) > 0; }));
      BOOST_TEST(eventually([&] { return queued_on(m[2], name) == 0u; }), "still in line on the late master");
      for (std::size_t i = 0; i < 2; ++i) BOOST_TEST(!line_keys_exist(m[i], name));
      c.release(l);
    }
  }
}

// A waiter granted out of line on master 2 (the others held by another)
// misses its quorum; its clean-up puts it in line there with its score, so
// a caller who asks later cannot be granted that master first, and the
// waiter wins once the others are free.
BOOST_AUTO_TEST_CASE(a_waiter_granted_out_of_line_whose_attempt_fails_keeps_its_turn) {
  masters m(3);
  const std::string name = "out-of-line-turn";
  for (std::size_t i : {0u, 1u}) {
    m[i].command({"HSET", name, "other-client:owner", "1"});
    m[i].command({"PEXPIRE", name, "60000"});
  }
  redlock::client waiter(m.options(1000ms));
  auto o = fair(20000ms);
  o.retry_delay = 1000ms;
  o.retry_jitter = 0ms;
  o.queue_timeout = 20000ms;
  o.ttl = o.queue_timeout;  // granted out of line on master 2 (fair_acquire.lua)
  background<redlock::lock> head([&] { return waiter.acquire(name, o); });
  BOOST_REQUIRE(eventually([&] { return queued_on(m[2], name) == 1u; }));
  BOOST_TEST(m[2].command({"EXISTS", name}) == "0");  // its grant there given back
  auto field = m[2].command({"ZRANGE", keys::queue(name), "0", "0"});
  auto later = std::to_string(std::stod(m[2].command({"ZSCORE", keys::queue(name), field})) + 1000);
  BOOST_TEST(fair_poll(m[2], name, "later:0", later, "1") == "-2", "a later caller was granted ahead of the waiter");
  BOOST_TEST(m[2].command({"ZREM", keys::queue(name), "later:0"}) == "1");
  for (std::size_t i : {0u, 1u}) m[i].command({"DEL", name});
  std::optional<redlock::lock> got = head.get();
  BOOST_REQUIRE(got);
  waiter.release(*got);
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(eventually([&] { return queued_on(m[i], name) == 0u; }));
}

// A hold granted out of line is a hold like any other: the same owner
// asking twice at once is granted once and re-enters (client_impl::
// owner_lines); the hold is extended, adopted by another handle and
// released.
BOOST_AUTO_TEST_CASE(a_fair_hold_granted_out_of_line_reenters_extends_and_is_adopted) {
  masters m(3);
  const std::string name = "out-of-line-hold";
  redlock::client c(m.options(1000ms));
  auto o = fair();
  o.queue_timeout = o.ttl;  // the longest that keeps the grant out of line (fair_acquire.lua)
  o.owner = "task";
  background<redlock::lock> second([&] { return c.acquire(name, o); });
  auto first = c.acquire(name, o);
  auto again = second.get();
  BOOST_REQUIRE(first.token() == again.token());
  const auto& field = first.token();  // the owner field
  // Masters (of 3) where `check` holds, once every request there has run.
  auto masters_where = [&](const std::function<bool(std::size_t)>& check, std::size_t n) {
    return eventually([&] {
      std::size_t count = 0;
      for (std::size_t i = 0; i < 3; ++i) count += check(i);
      return count >= n;
    });
  };
  BOOST_TEST(masters_where([&](std::size_t i) { return m[i].command({"HGET", name, field}) == "2"; }, 2));
  c.extend(again, 8000ms);
  BOOST_TEST(masters_where([&](std::size_t i) { return std::stoll(m[i].command({"PTTL", name})) > 6000; }, 2));
  c.release(again);
  BOOST_TEST(masters_where([&](std::size_t i) { return m[i].command({"HGET", name, field}) == "1"; }, 2));
  redlock::client other(m.options(1000ms));
  redlock::adopt_options how;
  how.kind = lock_kind::fair;
  auto adopted = other.adopt(name, field, 5000ms, how);
  other.release(adopted);
  BOOST_TEST(eventually([&] { return m.holding(name) == 0u; }));
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(!line_keys_exist(m[i], name));
}
