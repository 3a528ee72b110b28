// SPDX-License-Identifier: Apache-2.0
// integration_mutex: the mutex's quorum on real masters (who wins, what a
// clogged, paused or unreachable master does, expiry, errors and what each
// master said). Continued in test_mutex_wake.cpp and test_sync_client.cpp.
#define BOOST_TEST_MODULE integration_mutex
#include "mutex_prelude.hpp"

BOOST_AUTO_TEST_CASE(acquire_extend_release_on_1_3_5_masters) {
  for (std::size_t n : {1u, 3u, 5u}) {
    BOOST_TEST_CONTEXT("N=" << n) {
      masters m(n);
      redlock::client c(m.options());
      auto l = c.acquire("res", {.ttl = 5000ms});
      BOOST_TEST(l.name() == "res");
      BOOST_TEST(l.token().size() == 32u);  // 128 bits, hex
      // The acquisition completes at a quorum: the last masters' SETs may
      // still be on their way (this once failed with 4 of 5).
      BOOST_TEST(eventually([&] { return m.holding("res") == n; }));
      for (std::size_t i = 0; i < n; ++i) BOOST_TEST(m[i].command({"GET", "res"}) == l.token());
      BOOST_TEST(l.remaining_validity() > 4800ms);
      BOOST_TEST(l.remaining_validity() <= 5000ms);
      // Every master that answered before the quorum was decided granted it.
      std::size_t locked = 0;
      BOOST_REQUIRE(l.nodes().size() == n);
      for (std::size_t i = 0; i < n; ++i) {
        auto& r = l.nodes()[i];
        BOOST_TEST((r.state == redlock::node_state::locked || r.state == redlock::node_state::pending));
        locked += r.state == redlock::node_state::locked;
        // Named when first read (lock_state::named_nodes), in node order.
        BOOST_TEST(r.node == m.options().nodes[i]);
      }
      BOOST_TEST(locked >= n / 2 + 1);

      auto before = l.valid_until();
      std::this_thread::sleep_for(20ms);
      c.extend(l, 20000ms);
      BOOST_TEST((l.valid_until() > before + 10s));
      BOOST_TEST(std::stol(m[0].command({"PTTL", "res"})) > 15000);

      c.release(l);
      BOOST_TEST(redlock::testing::eventually([&] { return m.holding("res") == 0u; }));
      BOOST_TEST(l.remaining_validity() <= 0ms);
    }
  }
}

BOOST_AUTO_TEST_CASE(guard_releases_at_scope_exit) {
  masters m(3);
  redlock::client c(m.options());
  {
    auto g = c.lock_guard("guarded");
    BOOST_TEST(redlock::testing::eventually([&] { return m.holding("guarded") == 3u; }));
    auto moved = std::move(g);
    BOOST_TEST(!g);
    BOOST_TEST(static_cast<bool>(moved));
  }
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("guarded") == 0u; }));
}

BOOST_AUTO_TEST_CASE(concurrent_acquirers_exactly_one_wins) {
  masters m(5);
  boost::asio::io_context io;
  constexpr int K = 8;
  std::vector<std::unique_ptr<redlock::async_client>> clients;
  for (int i = 0; i < K; ++i) clients.push_back(std::make_unique<redlock::async_client>(io.get_executor(), m.options()));
  for (int round = 0; round < 10; ++round) {
    // All start at once and keep retrying for 600 ms; nobody releases, so
    // split votes are resolved by retries and exactly one ends up holding.
    auto name = "contended-" + std::to_string(round);
    std::vector<redlock::lock> won;
    int answered = 0, refused = 0;
    for (auto& c : clients)
      c->async_acquire(name, {.ttl = 10000ms, .wait = 600ms, .retry_delay = 20ms, .retry_jitter = 15ms},
                       [&](boost::system::error_code ec, redlock::lock l) {
                         ++answered;
                         if (!ec)
                           won.push_back(std::move(l));
                         else if (ec == errc::not_acquired)
                           ++refused;
                       });
    io.restart();
    while (answered < K) io.run_one();
    BOOST_TEST_CONTEXT("round " << round) {
      BOOST_TEST(won.size() == 1u);
      BOOST_TEST(refused == K - 1);
      // Losers released their partial holds: only the winner's token
      // remains, on a quorum at least. Not on every master: a master that
      // refused the winner (a loser held it then) is free once the loser's
      // clean-up ran (seen once in a fresh run: 2 of 5 masters free).
      io.restart();
      io.run_for(30ms);
      std::size_t winners = 0;
      for (std::size_t i = 0; i < m.size(); ++i) {
        auto held = m[i].command({"GET", name});
        BOOST_TEST((held == won.at(0).token() || held == "(nil)"), "master " << i << " holds " << held);
        winners += held == won.at(0).token();
      }
      BOOST_TEST(winners > m.size() / 2);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_clogged_subset_succeeds_exactly_when_a_quorum_is_free) {
  for (std::size_t n : {3u, 5u}) {
    masters m(n);
    redlock::client c(m.options());
    std::size_t quorum = n / 2 + 1;
    for (unsigned mask = 0; mask < (1u << n); ++mask) {
      BOOST_TEST_CONTEXT("N=" << n << " clogged mask=" << mask) {
        for (std::size_t i = 0; i < n; ++i)
          if (mask & (1u << i)) m[i].command({"SET", "clog", "someone-else", "PX", "60000"});
        std::size_t free_nodes = n - std::popcount(mask);
        auto l = c.try_acquire("clog", {.ttl = 5000ms});
        BOOST_TEST(static_cast<bool>(l) == (free_nodes >= quorum));
        if (l) c.release(*l);
        // Whatever happened, the clogged keys are untouched and ours are gone.
        for (std::size_t i = 0; i < n; ++i)
          BOOST_TEST(m[i].command({"GET", "clog"}) == ((mask & (1u << i)) ? "someone-else" : "(nil)"));
        m.on_all({"DEL", "clog"});
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_paused_master_does_not_delay_the_quorum_and_keeps_no_key) {
  masters m(5);
  redlock::client c(m.options(2000ms));  // a long node timeout, to show we do not wait for it
  c.release(c.acquire("warm"));           // connections open before the pause
  long calls_before = lock_calls(m[0]);
  m[0].pause();
  auto t0 = steady::now();
  auto l = c.acquire("paused", {.ttl = 10000ms});
  auto took = steady::now() - t0;
  BOOST_TEST(took < 1000ms, "acquire waited for the paused master: "
                                << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  BOOST_TEST((l.nodes()[0].state == redlock::node_state::pending));
  c.release(l);
  m[0].resume();
  // The master now runs the queued SET and then our release, in that order.
  BOOST_TEST(eventually([&] { return lock_calls(m[0]) >= calls_before + 2; }));
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("paused") == 0u; }));
}

BOOST_AUTO_TEST_CASE(no_quorum_fails_within_the_node_timeout) {
  masters m(5);
  redlock::client c(m.options(200ms));
  c.release(c.acquire("warm"));
  std::vector<long> before;
  for (std::size_t i = 0; i < 3; ++i) before.push_back(lock_calls(m[i]));
  for (std::size_t i = 0; i < 3; ++i) m[i].pause();
  auto t0 = steady::now();
  auto code = code_of([&] { c.acquire("stuck", {.ttl = 5000ms}); });
  auto took = steady::now() - t0;
  BOOST_TEST(code == errc::timeout);
  BOOST_TEST(took >= 190ms);
  BOOST_TEST(took < 1500ms);  // bounded by the node timeout, not by the TTL or a hang
  for (std::size_t i = 0; i < 3; ++i) m[i].resume();
  // Every master applies the queued SET and the release that follows it.
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(eventually([&] { return lock_calls(m[i]) >= before[i] + 2; }));
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("stuck") == 0u; }));
}

BOOST_AUTO_TEST_CASE(an_expired_lock_cannot_be_released_or_extended_by_its_old_holder) {
  masters m(3);
  redlock::client old_holder(m.options(20ms));
  redlock::client new_holder(m.options(20ms));
  auto stale = old_holder.acquire("exp", {.ttl = 150ms});
  std::this_thread::sleep_for(250ms);
  BOOST_TEST(stale.remaining_validity() < 0ms);
  auto fresh = new_holder.acquire("exp", {.ttl = 5000ms});
  BOOST_TEST(code_of([&] { old_holder.extend(stale, 5000ms); }) == errc::not_held);
  BOOST_TEST(code_of([&] { old_holder.release(stale); }) == errc::not_held);
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(m[i].command({"GET", "exp"}) == fresh.token());
  new_holder.release(fresh);
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("exp") == 0u; }));
}

BOOST_AUTO_TEST_CASE(a_key_of_another_type_is_reported_and_left_alone) {
  masters m(3);
  m.on_all({"HSET", "theirs", "field", "value"});
  redlock::client c(m.options());
  BOOST_TEST(code_of([&] { c.acquire("theirs"); }) == errc::wrong_type);
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(m[i].command({"HGET", "theirs", "field"}) == "value");
}

// A key of the user's own where a lock's wake list goes ({w}:wake, e.g. a
// mutex named so): the list only decides whom a release wakes, so the lock
// works without it. Before, the acquisition's SET NX ran and then its
// wake-list ZREM failed (the lock answered wrong_type and its key stayed
// behind), and a release deleted the key and then failed, reporting the
// lock "left untouched".
BOOST_AUTO_TEST_CASE(a_key_of_another_type_at_the_wake_list_turns_wake_ups_off_and_nothing_else) {
  masters m(3);
  auto list = redlock::detail::keys::wake_list("w");
  m.on_all({"SET", list, "theirs"});
  redlock::client holder(m.options()), waiter(m.options());
  auto held = holder.acquire("w", {.ttl = 10s, .wait = 1s});
  BOOST_TEST(m.holding("w") == 3u);
  std::atomic<bool> done{false};
  std::optional<redlock::lock> second;
  std::thread t([&] {
    second = waiter.acquire("w", {.ttl = 10s, .wait = 5s, .retry_delay = 100ms});
    done = true;
  });
  std::this_thread::sleep_for(300ms);  // the waiter tried and is waiting
  BOOST_TEST(!done.load());
  holder.release(held);
  t.join();
  BOOST_REQUIRE(second.has_value());
  BOOST_TEST(m.held_where_granted("w", *second));
  waiter.release(*second);
  BOOST_TEST(eventually([&] { return m.holding("w") == 0u; }));
  // A set that includes the name: its release (release_all.lua) frees "w"
  // and wakes no one there.
  auto both = holder.acquire("w", {.ttl = 10s, .other_names = {"x"}});
  BOOST_CHECK_NO_THROW(holder.release(both));
  BOOST_TEST(eventually([&] { return m.holding("w") == 0u && m.holding("x") == 0u; }));
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST(m[i].command({"GET", list}) == "theirs");
    BOOST_TEST(m[i].command({"EXISTS", "w"}) == "0");
  }
}

BOOST_AUTO_TEST_CASE(oom_and_readonly_masters_are_reported) {
  {
    masters m(3);
    m.on_all({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
    m.on_all({"CONFIG", "SET", "maxmemory", "1"});
    redlock::client c(m.options());
    BOOST_TEST(code_of([&] { c.acquire("oom"); }) == errc::out_of_memory);
  }
  {
    masters primary(1), replica(1);
    replica[0].command({"REPLICAOF", "127.0.0.1", std::to_string(primary[0].port())});
    redlock::client c(replica.options());
    BOOST_TEST(code_of([&] { c.acquire("ro"); }) == errc::read_only);
  }
}

BOOST_AUTO_TEST_CASE(bad_input_is_rejected_with_a_named_error) {
  masters m(1);
  auto make = [&](auto tweak) {
    auto o = m.options();
    tweak(o);
    return code_of([&] { redlock::client c(o); });
  };
  BOOST_TEST(make([](auto& o) { o.nodes.clear(); }) == errc::empty_node_list);
  BOOST_TEST(make([](auto& o) { o.nodes.push_back("redis//broken"); }) == errc::bad_uri);
  BOOST_TEST(make([](auto& o) { o.drift_factor = 1.5; }) == errc::bad_drift_factor);
  try {
    auto o = m.options();
    o.nodes.push_back("tcp://h:1");
    redlock::client c(o);
    BOOST_FAIL("accepted a bad URI");
  } catch (const redlock::error& e) {
    BOOST_TEST(std::string(e.what()).find("tcp://h:1") != std::string::npos, e.what());
  }

  redlock::client c(m.options(100ms));
  BOOST_TEST(code_of([&] { c.acquire("", {}); }) == errc::empty_name);
  BOOST_TEST(code_of([&] { c.acquire("x", {.ttl = 0ms}); }) == errc::bad_ttl);
  BOOST_TEST(code_of([&] { c.acquire("x", {.ttl = 100ms}); }) == errc::node_timeout_too_large);
  BOOST_TEST(code_of([&] { c.release(redlock::lock{}); }) == errc::empty_lock);
  BOOST_TEST(code_of([&] { c.extend(redlock::lock{}, 1000ms); }) == errc::empty_lock);
  // Nothing was written by any of it.
  BOOST_TEST(m[0].command({"DBSIZE"}) == "0");
}

BOOST_AUTO_TEST_CASE(an_unreachable_master_is_reported_per_node) {
  masters m(4);
  auto o = m.options();
  auto dead_port = redlock::testing::free_port();
  o.nodes.push_back("redis://127.0.0.1:" + std::to_string(dead_port));
  redlock::client c(o);  // constructing does not need every master
  auto l = c.acquire("partial");
  BOOST_TEST((l.nodes()[4].state != redlock::node_state::locked));
  c.release(l);
  // Later attempts never wait for the dead master: it is reported as not
  // connected, or (when a reconnect attempt is under way) not yet heard from.
  int reported = 0;
  for (int i = 0; i < 10; ++i) {
    auto again = c.acquire("partial");
    auto& dead = again.nodes()[4];
    BOOST_TEST((dead.state == redlock::node_state::failed || dead.state == redlock::node_state::pending));
    if (dead.state == redlock::node_state::failed) {
      BOOST_TEST(dead.error == errc::not_connected);
      ++reported;
    }
    c.release(again);
  }
  BOOST_TEST(reported > 0);
}

BOOST_AUTO_TEST_CASE(a_failed_attempt_is_cleaned_up_only_where_it_may_have_applied) {
  // Someone else holds masters 0 and 1; master 2 grants our attempt, which
  // misses its quorum. Its clean-up goes to master 2 (where it applied), not
  // to the masters that refused it: under contention that is most of the
  // masters' work for each losing attempt.
  masters m(3);
  for (std::size_t i : {0u, 1u}) m[i].command({"SET", "cleanup", "someone-else", "PX", "60000"});
  redlock::client c(m.options());
  c.try_acquire("warm-up-" + std::to_string(0));  // connections open, scripts loaded
  std::vector<long> before;
  for (std::size_t i = 0; i < 3; ++i) before.push_back(redlock::testing::script_calls(m[i]));
  BOOST_TEST(!c.try_acquire("cleanup").has_value());
  BOOST_TEST(eventually([&] { return m[2].command({"EXISTS", "cleanup"}) == "0"; }));  // released where it applied
  // (Twice when its grant arrives after the decision: late grants are released again.)
  BOOST_TEST(eventually([&] { return redlock::testing::script_calls(m[2]) > before[2]; }));
  std::this_thread::sleep_for(100ms);  // anything else in flight has arrived
  BOOST_TEST(redlock::testing::script_calls(m[0]) == before[0]);
  BOOST_TEST(redlock::testing::script_calls(m[1]) == before[1]);
  for (std::size_t i : {0u, 1u}) BOOST_TEST(m[i].command({"GET", "cleanup"}) == "someone-else");
}

// The sync client's error_code& overloads report what the throwing forms
// throw; status and adopt work without the async API.
BOOST_AUTO_TEST_CASE(a_late_grant_from_the_noscript_fallback_after_the_release_is_given_back) {
  namespace scripts = redlock::detail::scripts;
  masters m(3);
  redlock::client c(m.options(3000ms));
  c.release(c.acquire("warm-up", {.ttl = 30000ms}));  // connected: scripts loaded
  // Then master 2 lost the acquire script but has the release script.
  m[2].command({"SCRIPT", "FLUSH"});
  m[2].command({"SCRIPT", "LOAD", std::string(scripts::mutex_release.body)});
  // wait > 0: a waiter's attempt, the acquire script (a plain SET has no fallback).
  redlock::acquire_options o{.ttl = 30000ms, .wait = 5000ms};
  m[2].pause();
  auto l = c.acquire("late-eval", o);  // decided by masters 0 and 1
  c.release(l);                        // queued to master 2 behind the acquire
  m[2].resume();
  // Master 2: NOSCRIPT for the acquire, the release (nothing to delete),
  // then the acquire's EVAL grants: that grant must go again. The key is
  // absent before that EVAL too: wait for the EVAL first.
  BOOST_TEST(eventually([&] {
               return m[2].command({"SCRIPT", "EXISTS", std::string(scripts::mutex_acquire.sha1)}) == "1";
             }, 5s),
             "the fallback ran on master 2");
  BOOST_TEST(eventually([&] { return m[2].command({"EXISTS", "late-eval"}) == "0"; }, 5s),
             "master 2 still holds " << m[2].command({"GET", "late-eval"}));
}

BOOST_AUTO_TEST_CASE(a_won_acquisition_reports_each_master_by_name) {
  // Rounds keep their results unnamed; the report names them once, when
  // it is handed over, for every kind and for a re-entry (its own round).
  masters m(3);
  redlock::client c(m.options());
  auto uris = m.uris();
  // Every master by its URI; a quorum of them granted (the round ends at
  // the quorum: a master yet to answer is "pending").
  auto named = [&](const redlock::acquire_report& r) {
    if (r.last_attempt.size() != uris.size()) return false;
    std::size_t locked = 0;
    for (std::size_t i = 0; i < uris.size(); ++i) {
      if (r.last_attempt[i].node != uris[i]) return false;
      locked += r.last_attempt[i].state == redlock::node_state::locked;
    }
    return locked >= 2;
  };
  auto first = [](const redlock::acquire_report& r) {
    return r.last_attempt.empty() ? std::string("no results") : redlock::describe(r.last_attempt[0]);
  };
  for (auto kind : {redlock::lock_kind::mutex, redlock::lock_kind::reentrant, redlock::lock_kind::fair}) {
    BOOST_TEST_CONTEXT("kind " << static_cast<int>(kind)) {
      redlock::acquire_options o{.kind = kind, .owner = "reporter"};
      o.report = std::make_shared<redlock::acquire_report>();
      auto l = c.acquire("reported", o);
      BOOST_TEST(o.report->attempts == 1u);
      BOOST_TEST(named(*o.report), first(*o.report));
      for (std::size_t i = 0; i < uris.size(); ++i) BOOST_TEST(l.nodes()[i].node == uris[i]);
      if (kind != redlock::lock_kind::mutex) {
        auto again = std::make_shared<redlock::acquire_report>();
        o.report = again;
        auto inner = c.acquire("reported", o);  // a re-entry: a round of its own
        BOOST_TEST(named(*again), first(*again));
        c.release(inner);
      }
      c.release(l);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_failed_acquisition_says_what_each_master_said) {
  masters m(3);
  redlock::client holder(m.options(1000ms));
  auto held = holder.acquire("explained", {.ttl = 60000ms});
  BOOST_REQUIRE(eventually([&] { return m.holding("explained") == 3u; }));
  m[2].stop();  // refused on two masters, a connection failure on the third
  redlock::client c(m.options(200ms));
  auto report = std::make_shared<redlock::acquire_report>();
  auto got = c.try_acquire("explained", {.max_attempts = 2, .retry_delay = 10ms, .retry_jitter = 0ms, .report = report});
  BOOST_TEST(!got.has_value());
  BOOST_TEST(report->attempts == 2u);
  BOOST_REQUIRE(report->last_attempt.size() == 3u);
  // The round ends as soon as no quorum is possible (two answers that are
  // not grants): a master still unheard from then is "pending".
  auto uris = m.uris();
  std::size_t pending = 0, refused = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST_CONTEXT("master " << i) {
      auto& r = report->last_attempt[i];
      BOOST_TEST(r.node == uris[i]);  // these URIs carry no password
      BOOST_TEST(redlock::describe(r).find(uris[i] + " ") == 0u, redlock::describe(r));
      BOOST_TEST((r.state != redlock::node_state::locked));
      pending += r.state == redlock::node_state::pending;
      refused += r.state == redlock::node_state::refused;
      // The held masters refuse; the stopped one fails (or times out).
      if (i < 2) BOOST_TEST((r.state == redlock::node_state::refused || r.state == redlock::node_state::pending));
      if (i == 2)
        BOOST_TEST((r.state == redlock::node_state::failed || r.state == redlock::node_state::unknown ||
                    r.state == redlock::node_state::pending));
      bool has_error = r.state == redlock::node_state::failed || r.state == redlock::node_state::unknown;
      BOOST_TEST(bool(r.error) == has_error);
    }
  }
  BOOST_TEST(pending <= 1u);
  BOOST_TEST(refused >= 1u);
  BOOST_TEST(redlock::summarize(report->last_attempt).find("refused") != std::string::npos);

  // The sync exception carries the same, and its message sums it up.
  try {
    c.acquire("explained");
    BOOST_FAIL("acquired a held lock");
  } catch (const redlock::error& e) {
    BOOST_TEST(e.code() == errc::not_acquired);
    BOOST_REQUIRE(e.report() != nullptr);
    BOOST_TEST(e.report()->attempts == 1u);
    BOOST_TEST(e.report()->last_attempt.size() == 3u);
    BOOST_TEST(std::string(e.what()).find("after 1 attempt; last: ") != std::string::npos, e.what());
    BOOST_TEST(std::string(e.what()).find(" refused") != std::string::npos, e.what());
  }

  // The async API: the report is complete when the handler runs.
  auto async_report = std::make_shared<redlock::acquire_report>();
  auto f = c.async().async_acquire("explained", {.report = async_report}, boost::asio::use_future);
  BOOST_CHECK_THROW(f.get(), boost::system::system_error);
  BOOST_TEST(async_report->attempts == 1u);
  BOOST_TEST(async_report->last_attempt.size() == 3u);

  // A win reports too: where it was granted.
  holder.release(held);
  auto won = std::make_shared<redlock::acquire_report>();
  auto l = c.acquire("explained", {.report = won});
  BOOST_TEST(won->attempts == 1u);
  BOOST_REQUIRE(won->last_attempt.size() == 3u);
  BOOST_TEST((won->last_attempt[0].state == redlock::node_state::locked));
  BOOST_TEST((won->last_attempt[1].state == redlock::node_state::locked));
  c.release(l);
}
