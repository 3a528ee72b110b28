// SPDX-License-Identifier: Apache-2.0
// Leader election (docs/algorithm.md section 14): the campaign's epoch is
// the fencing token; observers are told of every change by the masters'
// channels (a resignation, a new leader) or see a dead leader gone when its
// lease ends; leadership lost is the lost-lease signal.
#define BOOST_TEST_MODULE integration_election
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "masters.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/io_context.hpp>

#include <condition_variable>
#include <future>
#include <mutex>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::testing::code_of;
using redlock::testing::eventually;
using redlock::testing::masters;
namespace bdata = boost::unit_test::data;

namespace {

/// What an observer was told, in order, with when.
struct seen_log {
  std::mutex m;
  std::vector<std::optional<redlock::leader_info>> changes;
  std::vector<std::chrono::steady_clock::time_point> at;
  void add(const std::optional<redlock::leader_info>& l) {
    std::lock_guard g(m);
    changes.push_back(l);
    at.push_back(std::chrono::steady_clock::now());
  }
  std::size_t size() {
    std::lock_guard g(m);
    return changes.size();
  }
  std::optional<redlock::leader_info> last() {
    std::lock_guard g(m);
    return changes.empty() ? std::nullopt : changes.back();
  }
};

redlock::acquire_options campaign_options(std::chrono::milliseconds ttl = 10000ms, std::chrono::milliseconds wait = 0ms) {
  redlock::acquire_options o;
  o.ttl = ttl;
  o.wait = wait;
  o.retry_delay = 20ms;
  o.retry_jitter = 10ms;
  return o;
}

}  // namespace

BOOST_DATA_TEST_CASE(one_leader_its_epoch_and_who_leads, bdata::make({1, 3, 5}), nodes) {
  masters m(static_cast<std::size_t>(nodes));
  redlock::client a(m.options()), b(m.options());
  BOOST_TEST(!a.leader("office").has_value());
  auto opts = campaign_options();
  opts.description = "scheduler on host-a";
  auto lead = a.campaign("office", opts);
  BOOST_REQUIRE(lead.fence().has_value());
  BOOST_TEST(eventually([&] { return b.leader("office").has_value(); }));
  auto who = b.leader("office");
  BOOST_REQUIRE(who.has_value());
  BOOST_TEST(who->token == lead.token());
  BOOST_TEST(who->epoch == *lead.fence());
  BOOST_TEST(who->description == "scheduler on host-a");
  BOOST_TEST((who->remaining > 8000ms && who->remaining <= 10000ms));
  BOOST_TEST(code_of([&] { b.campaign("office", campaign_options()); }) == errc::not_acquired);
  a.resign(lead);
  auto next = b.campaign("office", campaign_options());
  BOOST_TEST(*next.fence() > *lead.fence(), "epochs increase");
  b.resign(next);
  BOOST_TEST(eventually([&] { return !a.leader("office").has_value(); }));
}

BOOST_AUTO_TEST_CASE(observers_are_told_of_each_change_without_polling) {
  masters m(3);
  redlock::client a(m.options()), b(m.options()), watcher(m.options());
  seen_log seen;
  // A fallback of a minute and leases of 10 s: a change seen within 2 s was pushed.
  auto watch = watcher.async().observe("pushed", [&](const std::optional<redlock::leader_info>& l) { seen.add(l); },
                                       60s);
  BOOST_TEST(eventually([&] { return seen.size() == 1u; }));
  BOOST_TEST(!seen.last().has_value(), "nobody leads at first");
  auto first = a.campaign("pushed", campaign_options());
  BOOST_TEST(eventually([&] { return seen.size() == 2u; }, 2000ms), "the campaign was not pushed");
  BOOST_TEST(seen.last()->epoch == *first.fence());
  // B waits; A resigns: B leads, and the observer hears of it at once.
  std::optional<redlock::lock> second;
  std::thread waiter([&] { second = b.campaign("pushed", campaign_options(10000ms, 10000ms)); });
  std::this_thread::sleep_for(200ms);
  auto resigned_at = std::chrono::steady_clock::now();
  a.resign(first);
  waiter.join();
  BOOST_REQUIRE(second.has_value());
  BOOST_TEST(eventually([&] { return seen.last() && seen.last()->token == second->token(); }, 2000ms));
  BOOST_TEST(((std::chrono::steady_clock::now() - resigned_at) < 3000ms));
  // Every leader reported has a larger epoch than the one before.
  std::uint64_t before = 0;
  for (auto& c : seen.changes)
    if (c) {
      BOOST_TEST(c->epoch > before);
      before = c->epoch;
    }
  watch.stop();
  auto told = seen.size();
  b.resign(*second);
  std::this_thread::sleep_for(300ms);
  BOOST_TEST(seen.size() == told, "called after stop()");
}

BOOST_AUTO_TEST_CASE(a_dead_leader_is_seen_gone_when_its_lease_ends_and_a_waiter_takes_over) {
  masters m(3);
  redlock::client watcher(m.options()), b(m.options());
  seen_log seen;
  auto watch = watcher.async().observe("crash", [&](const std::optional<redlock::leader_info>& l) { seen.add(l); });
  std::uint64_t dead_epoch = 0;
  {
    // A leader whose process stops renewing and never resigns (its client
    // goes away: the renewal stops with it, nothing is released).
    redlock::client a(m.options());
    dead_epoch = *a.campaign("crash", campaign_options(800ms)).fence();
  }
  auto died = std::chrono::steady_clock::now();
  auto next = b.campaign("crash", campaign_options(800ms, 5000ms));
  auto failover = std::chrono::steady_clock::now() - died;
  BOOST_TEST(*next.fence() > dead_epoch);
  BOOST_TEST((failover < 2000ms), "the lease is 800 ms");
  BOOST_TEST(eventually([&] { return seen.last() && seen.last()->token == next.token(); }, 3000ms));
  b.resign(next);
}

// Issue 33, defect 3: a leader_subscription kept after its client (and the
// client's io_context) is gone. Its watch kept the timer of its next read,
// and destroying the leader_subscription then destroyed that timer after the
// io_context: a heap-use-after-free under ASan (as for lock handles:
// lease_handles_outlive_their_client).
BOOST_AUTO_TEST_CASE(an_observation_outlives_its_client) {
  masters m(3);
  auto observer = [](seen_log& seen) {
    return [&seen](const std::optional<redlock::leader_info>& l) { seen.add(l); };
  };
  // The sync client: its destructor stops its I/O thread and destroys its
  // io_context.
  std::optional<redlock::leader_subscription> kept;
  seen_log seen;
  {
    redlock::client c(m.options());
    kept = c.async().observe("outlived", observer(seen));
    // Told who leads: its first read is done and the timer of the next one waits.
    BOOST_TEST(eventually([&] { return seen.size() == 1u; }));
  }
  kept.reset();

  // An async_client on the caller's io_context, both destroyed before it.
  seen_log seen_async;
  {
    boost::asio::io_context io;
    redlock::async_client c(io.get_executor(), m.options());
    kept = c.observe("outlived", observer(seen_async));
    auto limit = std::chrono::steady_clock::now() + 10s;
    while (seen_async.size() == 0u && std::chrono::steady_clock::now() < limit) io.run_one_for(100ms);
    BOOST_TEST(seen_async.size() == 1u);
  }
  kept.reset();
}

BOOST_AUTO_TEST_CASE(leadership_lost_is_signalled_like_a_lost_lease) {
  masters m(3);
  redlock::client a(m.options());
  std::atomic<int> why{0};
  auto opts = campaign_options(600ms);
  opts.on_lost = [&](redlock::lost_reason r) { why = static_cast<int>(r); };
  auto lead = a.campaign("usurped", opts);
  std::this_thread::sleep_for(1000ms);
  BOOST_TEST(!lead.lost(), "renewed past its first lease");
  m.on_all({"SET", "usurped", "someone-else", "PX", "60000"});
  BOOST_TEST(eventually([&] { return why.load() != 0; }, 3000ms));
  BOOST_TEST((static_cast<redlock::lost_reason>(why.load()) == redlock::lost_reason::taken_over));
  BOOST_TEST(code_of([&] { a.resign(lead); }) == errc::not_held);
}

BOOST_AUTO_TEST_CASE(campaigners_take_turns_never_overlapping_with_growing_epochs) {
  masters m(3);
  constexpr int campaigners = 4, terms = 5;
  std::mutex log_mutex;
  std::vector<std::pair<std::uint64_t, std::pair<std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point>>> terms_log;
  std::vector<std::thread> threads;
  for (int i = 0; i < campaigners; ++i)
    threads.emplace_back([&] {
      redlock::client c(m.options(200ms));
      for (int t = 0; t < terms; ++t) {
        auto lead = c.campaign("turns", campaign_options(2000ms, 20000ms));
        auto from = std::chrono::steady_clock::now();
        std::this_thread::sleep_for(5ms);
        auto until = std::min(std::chrono::steady_clock::now(), lead.valid_until());
        {
          std::lock_guard g(log_mutex);
          terms_log.push_back({*lead.fence(), {from, until}});
        }
        c.resign(lead);
      }
    });
  for (auto& t : threads) t.join();
  BOOST_REQUIRE(terms_log.size() == std::size_t(campaigners * terms));
  std::sort(terms_log.begin(), terms_log.end(), [](auto& x, auto& y) { return x.second.first < y.second.first; });
  for (std::size_t i = 1; i < terms_log.size(); ++i) {
    BOOST_TEST(terms_log[i].first > terms_log[i - 1].first, "epochs follow the order of terms");
    BOOST_TEST((terms_log[i].second.first >= terms_log[i - 1].second.second), "two leaders at once");
  }
}

BOOST_AUTO_TEST_CASE(bad_campaigns_are_refused) {
  masters m(1);
  redlock::client c(m.options());
  auto fair = campaign_options();
  fair.kind = redlock::lock_kind::fair;
  BOOST_TEST(code_of([&] { c.campaign("bad", fair); }) == errc::bad_option);
  auto several = campaign_options();
  several.other_names = {"other"};
  BOOST_TEST(code_of([&] { c.campaign("bad", several); }) == errc::bad_option);
  BOOST_TEST(code_of([&] { c.async().observe("", [](auto&) {}); }) == errc::empty_name);
  BOOST_TEST(m[0].command({"DBSIZE"}) == "0");
}

BOOST_AUTO_TEST_CASE(a_paused_then_killed_master_does_not_stop_the_election) {
  masters m(5);
  redlock::client a(m.options(50ms)), b(m.options(50ms));
  m[0].pause();
  auto opts = campaign_options(600ms);
  auto lead = a.campaign("faulty", opts);
  BOOST_TEST(eventually([&] { return b.leader("faulty").has_value(); }));
  m[0].resume();
  m[4].kill9();
  std::this_thread::sleep_for(800ms);  // renewals carry on through the fault
  BOOST_TEST(!lead.lost());
  BOOST_TEST(code_of([&] { b.campaign("faulty", campaign_options()); }) == errc::not_acquired);
  a.resign(lead);
  auto next = b.campaign("faulty", campaign_options(600ms, 2000ms));
  BOOST_TEST(*next.fence() > *lead.fence());
  b.resign(next);
}

// Parity: every blocking election call has an error_code& form, and the
// async client reads the leader as the sync one does (async_leader).
BOOST_AUTO_TEST_CASE(election_calls_report_through_error_codes_and_the_leader_reads_async) {
  masters m(3);
  redlock::client c(m.options());
  boost::system::error_code ec;
  BOOST_TEST(!c.leader("office", ec).has_value());
  BOOST_TEST(!ec);
  auto bad = c.campaign("office", {.ttl = 0ms}, ec);
  BOOST_TEST(ec == errc::bad_ttl);
  BOOST_TEST(!bad);
  auto l = c.campaign("office", {.ttl = 5000ms}, ec);
  BOOST_REQUIRE(!ec);
  std::promise<std::pair<boost::system::error_code, std::optional<redlock::leader_info>>> read;
  c.async().async_leader("office", [&](boost::system::error_code e, std::optional<redlock::leader_info> who) {
    read.set_value({e, std::move(who)});
  });
  auto [read_ec, who] = read.get_future().get();
  BOOST_TEST(!read_ec);
  BOOST_REQUIRE(who.has_value());
  BOOST_TEST(who->epoch == *l.fence());
  BOOST_TEST(who->token == l.token());
  c.resign(l, ec);
  BOOST_TEST(!ec);
  c.resign(l, ec);  // twice: no longer held
  BOOST_TEST(ec == errc::not_held);
  BOOST_TEST(eventually([&] { return !c.leader("office").has_value(); }));
}
