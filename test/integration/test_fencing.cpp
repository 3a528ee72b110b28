// SPDX-License-Identifier: Apache-2.0
#define BOOST_TEST_MODULE integration_fencing
#include <boost/test/unit_test.hpp>

#include "masters.hpp"
#include "scripts/keys.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <thread>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::testing::masters;
namespace keys = redlock::detail::keys;
using redlock::testing::code_of;
using redlock::testing::redis_options;

namespace {

void clog(masters& m, std::initializer_list<std::size_t> which, const std::string& key) {
  for (auto i : which) m[i].command({"SET", key, "someone-else", "PX", "60000"});
}
void unclog(masters& m, const std::string& key) { m.on_all({"DEL", key}); }

redlock::acquire_options fenced(std::chrono::milliseconds ttl = 5000ms) {
  redlock::acquire_options o;
  o.ttl = ttl;
  o.fenced = true;
  return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(fencing_tokens_strictly_increase_across_clients) {
  masters m(5);
  std::vector<std::unique_ptr<redlock::client>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(std::make_unique<redlock::client>(m.options()));
  std::mutex order;
  std::vector<std::uint64_t> tokens;  // in acquisition order (appended while holding)
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&, i] {
      auto o = fenced();
      o.wait = 5000ms;
      o.retry_delay = 2ms;
      o.retry_jitter = 2ms;
      for (int k = 0; k < 40; ++k) {
        auto l = clients[i]->acquire("fenced-many", o);
        {
          std::lock_guard g(order);
          tokens.push_back(*l.fence());
        }
        clients[i]->release(l);
      }
    });
  for (auto& t : threads) t.join();
  BOOST_TEST(tokens.size() == 120u);
  for (std::size_t i = 1; i < tokens.size(); ++i)
    BOOST_TEST(tokens[i] > tokens[i - 1], "at " << i << ": " << tokens[i - 1] << " then " << tokens[i]);
}

// Per-master INCR and max is not monotonic when different majorities hold the
// lock: this history breaks it, and the raise round fixes it.
BOOST_AUTO_TEST_CASE(fencing_counterexample_different_majorities) {
  const std::string key = "fence-cx";
  const std::string fence_key = keys::fence(key);
  // 1. The counterexample is real: plain SET NX + INCR, max over the quorum.
  {
    masters m(5);
    auto naive_acquire = [&](std::initializer_list<std::size_t> granted) {
      long best = 0;
      for (auto i : granted) best = std::max(best, std::stol(m[i].command({"INCR", fence_key})));
      return best;
    };
    for (int k = 0; k < 10; ++k) naive_acquire({0, 1});  // failed minority attempts
    long a = naive_acquire({0, 1, 2});                     // A through {0,1,2}
    long b = naive_acquire({2, 3, 4});                     // later B through {2,3,4}
    BOOST_TEST(b < a, "naive tokens: A=" << a << " then B=" << b);
  }
  // 2. The library, same history.
  masters m(5);
  redlock::client c(m.options());
  clog(m, {2, 3, 4}, key);
  for (int k = 0; k < 10; ++k) BOOST_TEST(!c.try_acquire(key, fenced()));  // inflate masters 0 and 1
  // A failed attempt returns once the outcome is decided; the minority's
  // replies (and INCRs) may still be on their way.
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (m[0].command({"GET", fence_key}) != "10" && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  BOOST_TEST(m[0].command({"GET", fence_key}) == "10", "master 1 has " << m[1].command({"GET", fence_key})
                                                       << ", evalsha calls on 0: " << m[0].command({"INFO", "commandstats"}));
  unclog(m, key);
  clog(m, {3, 4}, key);
  auto a = c.acquire(key, fenced());  // through {0,1,2}
  c.release(a);
  unclog(m, key);
  clog(m, {0, 1}, key);
  auto b = c.acquire(key, fenced());  // through {2,3,4}
  BOOST_TEST(*b.fence() > *a.fence(), "A=" << *a.fence() << " then B=" << *b.fence());
  c.release(b);
}

BOOST_AUTO_TEST_CASE(fencing_store_rejects_a_paused_holders_late_write) {
  masters m(3), storage(1);
  redlock::client a(m.options(20ms)), b(m.options(20ms));
  redlock::fenced_store store(a.async().get_executor(), storage[0].uri());

  auto held = a.acquire("account-42", fenced(300ms));
  store.write("account-42", *held.fence(), "balance", "100");
  std::this_thread::sleep_for(450ms);  // A "pauses" (GC, SIGSTOP) past its validity
  BOOST_TEST(held.remaining_validity() < 0ms);

  auto next = b.acquire("account-42", fenced());
  BOOST_TEST(*next.fence() > *held.fence());
  store.write("account-42", *next.fence(), "balance", "70");
  // A wakes up and writes with its old token: rejected, nothing changes.
  BOOST_TEST(code_of([&] { store.write("account-42", *held.fence(), "balance", "150"); }) == errc::stale_token);
  BOOST_TEST(storage[0].command({"GET", "balance"}) == "70");
  BOOST_TEST(storage[0].command({"GET", redlock::fenced_store::seen_key("account-42")}) ==
             std::to_string(*next.fence()));
  // The current holder may write again with the same token.
  store.write("account-42", *next.fence(), "balance", "71");
  BOOST_TEST(storage[0].command({"GET", "balance"}) == "71");
  b.release(next);
}

// The storage server lost its script cache (SCRIPT FLUSH, a restart): the
// store's write falls back to EVAL with the body, made from the EVALSHA
// call's own encoding, and still checks the token.
BOOST_AUTO_TEST_CASE(fenced_store_writes_through_a_flushed_script_cache) {
  masters storage(1);
  // Stopped and joined however the test ends (a failed write throws), after
  // the store, declared later, is gone.
  struct io_thread {
    boost::asio::io_context io;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
    std::thread runner{[this] { io.run(); }};
    ~io_thread() {
      work.reset();
      runner.join();
    }
  } thread;
  {
    redlock::fenced_store store(thread.io.get_executor(), storage[0].uri());
    auto evals = [&] { return redlock::testing::command_calls(storage[0], {"eval"}); };
    store.write("job-7", 5, "job-7:result", "first");
    storage[0].command({"SCRIPT", "FLUSH"});
    auto evals_before = evals();
    store.write("job-7", 6, "job-7:result", "second");
    BOOST_TEST(storage[0].command({"GET", "job-7:result"}) == "second");
    BOOST_TEST(evals() == evals_before + 1);
    storage[0].command({"SCRIPT", "FLUSH"});
    BOOST_TEST(code_of([&] { store.write("job-7", 5, "job-7:result", "stale"); }) == errc::stale_token);
    BOOST_TEST(storage[0].command({"GET", "job-7:result"}) == "second");
    BOOST_TEST(evals() == evals_before + 2);
  }
}

BOOST_AUTO_TEST_CASE(fencing_survives_restarts_with_aof_fsync_always) {
  redis_options durable;
  durable.aof = true;
  masters m(3, durable);
  std::uint64_t last = 0;
  for (int round = 0; round < 3; ++round) {
    redlock::client c(m.options());
    for (int k = 0; k < 5; ++k) {
      auto l = c.acquire("durable", fenced());
      BOOST_TEST(*l.fence() > last);
      last = *l.fence();
      c.release(l);
    }
    for (std::size_t i = 0; i < m.size(); ++i) {
      m[i].kill9();
      m[i].restart(false);  // reloads the AOF
    }
  }
  BOOST_TEST(last >= 15u);
}

// The documented limit, demonstrated: a majority restarted at once without
// persistence forgets both the lock and the counters.
BOOST_AUTO_TEST_CASE(fencing_without_persistence_immediate_restart_is_unsafe) {
  masters m(3);
  redlock::client a(m.options()), b(m.options());
  for (int k = 0; k < 5; ++k) a.release(a.acquire("amnesia", fenced()));
  auto held = a.acquire("amnesia", fenced(10000ms));
  for (std::size_t i : {0u, 1u}) m[i].restart(true);  // kill -9, no data, back at once
  auto second = b.try_acquire("amnesia", fenced());
  BOOST_REQUIRE(second.has_value());
  BOOST_TEST(held.remaining_validity() > 0ms);          // two holders at once
  BOOST_TEST(*second->fence() <= *held.fence());        // and the token went backwards
}

BOOST_AUTO_TEST_CASE(fenced_store_refuses_bad_input_by_name) {
  boost::asio::io_context io;
  auto message_of = [](auto f) -> std::string {
    try {
      f();
    } catch (const redlock::error& e) {
      return e.what();
    }
    return "no error";
  };
  auto bad_uri = [&] { redlock::fenced_store s(io.get_executor(), "http://127.0.0.1:6379"); };
  BOOST_TEST(code_of(bad_uri) == errc::bad_uri);
  BOOST_TEST(message_of(bad_uri).find("http") != std::string::npos, message_of(bad_uri));
  auto zero_timeout = [&] { redlock::fenced_store s(io.get_executor(), "redis://127.0.0.1:6379", 0ms); };
  BOOST_TEST(code_of(zero_timeout) == errc::bad_option);
  BOOST_TEST(message_of(zero_timeout).find("timeout") != std::string::npos, message_of(zero_timeout));
}

// A fence counter that holds text (someone else's data at '{R}:fence', or a
// counter overwritten by hand): INCR cannot draw from it. Every fenced kind
// reports wrong_type, which names that companion and ends the retries, and
// holds nothing, leaving the text as it was. Before, this was "master
// returned an error" (server_error), which named no key.
BOOST_AUTO_TEST_CASE(a_fence_counter_holding_text_is_reported_and_left_alone) {
  masters m(3);
  redlock::client c(m.options());
  using redlock::lock_kind;
  for (auto kind : {lock_kind::mutex, lock_kind::reentrant, lock_kind::fair, lock_kind::read, lock_kind::write}) {
    const std::string name = "texted-" + std::to_string(static_cast<int>(kind));
    m.on_all({"SET", keys::fence(name), "not-a-number"});
    auto o = fenced();
    o.kind = kind;
    BOOST_TEST((code_of([&] { c.acquire(name, o); }) == errc::wrong_type), "kind " << static_cast<int>(kind));
    BOOST_TEST(redlock::testing::eventually([&] { return m.holding(name) == 0u; }), "kind " << static_cast<int>(kind));
    for (std::size_t i = 0; i < m.size(); ++i)
      BOOST_TEST(m[i].command({"GET", keys::fence(name)}) == "not-a-number");
    // Unfenced, the same name is a lock as before: the counter is not read.
    auto plain = c.acquire(name, {.ttl = 5000ms, .kind = kind});
    c.release(plain);
  }
  // A set of names, one of whose counters holds text.
  m.on_all({"SET", keys::fence("set-b"), "not-a-number"});
  auto o = fenced();
  o.other_names = {"set-b"};
  BOOST_TEST((code_of([&] { c.acquire("set-a", o); }) == errc::wrong_type));
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("set-a") + m.holding("set-b") == 0u; }));
}
