// SPDX-License-Identifier: Apache-2.0
// redlock-bench scenarios contended, contended_fair, semaphore and rwlock:
// workers (threads, each its own sync client, or coroutines with --one-thread)
// on one key.
#include "scenario_tools.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <thread>

namespace bench {

using namespace std::chrono_literals;

namespace {

// s.workers workers (each its own client) on one key; `kind` mutex, fair or
// semaphore (with `permits` > 1). Besides throughput and fairness it measures
// the most holders inside at once (more than `permits` is a violation), for a
// single holder the hand-off (a holder's release call to the next holder's
// acquisition) and, for the fair lock, FIFO violations.
// A read-write lock (kind read): each acquisition is a write with
// probability `write_share`; a writer inside with anyone else, or a reader
// inside with a writer, is a violation.
outcome contended_run(settings& s, redlock::lock_kind kind, const std::string& suffix, unsigned permits = 1,
                      double write_share = 0) {
  outcome r;
  const std::size_t workers = s.workers;
  const bool semaphore = kind == redlock::lock_kind::semaphore;
  const bool rw = kind == redlock::lock_kind::read;
  const int limit = static_cast<int>(permits);
  const int secs = s.sized(10, 4, 1);
  const auto section = 20us;  // time spent "inside", yielding the CPU meanwhile
  const std::string key = s.tag + ":" + suffix;

  struct acquisition {
    steady::time_point asked, got;
  };
  struct worker_result {
    std::size_t successes = 0;
    std::vector<double> wait;  // µs from the acquire call to holding the lock
    std::vector<double> handoff;
    std::vector<double> release;  // µs the holder's release took: one quorum round under this load
    std::vector<double> write_wait;  // rw: the writers' share of `wait`
    std::size_t writes = 0;
    std::vector<acquisition> log;
    std::map<std::string, std::size_t> errors;
  };
  std::atomic<steady::rep> last_release{0};  // when the previous holder called release
  std::vector<worker_result> results(workers);
  std::vector<std::unique_ptr<redlock::client>> clients;
  asio::io_context one_loop(1);  // --one-thread: every worker's client on it
  std::vector<std::unique_ptr<redlock::async_client>> async_clients;
  std::vector<std::shared_ptr<redlock::counting_observer>> counters;  // attempts per section
  for (std::size_t w = 0; w < workers; ++w) {
    auto opts = s.client_options();
    opts.observer = counters.emplace_back(std::make_shared<redlock::counting_observer>());
    if (s.one_thread) {
      auto& c = *async_clients.emplace_back(std::make_unique<redlock::async_client>(one_loop.get_executor(), opts));
      // Warm-up: open the connections (a failure here shows up in the run).
      asio::co_spawn(
          one_loop,
          [&c, name = s.tag + ":cw:" + std::to_string(w), o = single_attempt(s)]() -> asio::awaitable<void> {
            auto [ec, l] = co_await c.async_acquire(name, o, asio::as_tuple(asio::use_awaitable));
            if (!ec) co_await c.async_release(std::move(l), asio::as_tuple(asio::use_awaitable));
          },
          [&one_loop](std::exception_ptr) { one_loop.stop(); });  // the clients keep the loop busy
      one_loop.run();
      one_loop.restart();
      continue;
    }
    clients.push_back(std::make_unique<redlock::client>(opts));
    // Warm-up: open the connections (a failure here shows up in the run).
    for (int i = 0; i < 20; ++i) {
      try {
        auto l = clients.back()->try_acquire(s.tag + ":cw:" + std::to_string(w) + ":" + std::to_string(i),
                                             single_attempt(s));
        if (l) clients.back()->release(*l);
      } catch (const redlock::error&) {
      }
    }
  }

  std::uint64_t attempts_at_start = 0;  // the warm-up's attempts are not the run's
  for (auto& c : counters) attempts_at_start += c->acquire_attempts.load();
  std::atomic<int> inside{0}, max_inside{0}, writers_inside{0};
  std::atomic<std::size_t> violations{0}, expired{0};
  std::vector<std::atomic<std::size_t>> per_permit(semaphore ? permits : 0);  // sections per slot held
  std::vector<std::atomic<std::size_t>> per_second(static_cast<std::size_t>(secs));
  auto start = steady::now() + 100ms;
  auto end = start + std::chrono::seconds(secs);

  // What one section does to the shared counters, whichever way the workers run.
  auto enter = [&](worker_result& out, const redlock::lock& l, bool writes, steady::time_point t0,
                   steady::time_point got) {
    if (l.remaining_validity() <= 0ms) {
      ++expired;
      return false;
    }
    int now_inside = inside.fetch_add(1) + 1;
    if (rw) {
      int writing = writes ? writers_inside.fetch_add(1) + 1 : writers_inside.load();
      if ((writes && now_inside > 1) || (!writes && writing > 0)) ++violations;  // a writer not alone
    } else if (now_inside > limit) {
      ++violations;  // more holders inside than there are permits
    }
    for (int m = max_inside.load(); now_inside > m && !max_inside.compare_exchange_weak(m, now_inside);) {
    }
    if (auto slot = l.permit(); slot && *slot < per_permit.size()) ++per_permit[*slot];
    auto bucket = static_cast<std::size_t>(std::chrono::duration_cast<std::chrono::seconds>(got - start).count());
    ++per_second[std::min(bucket, per_second.size() - 1)];
    if (writes) out.write_wait.push_back(micros(t0, got));
    out.wait.push_back(micros(t0, got));
    out.log.push_back({t0, got});
    if (auto prev = last_release.load(); prev != 0)
      out.handoff.push_back(micros(steady::time_point(steady::duration(prev)), got));
    return true;
  };
  auto leave = [&](worker_result& out, bool writes) {
    if (writes) writers_inside.fetch_sub(1);
    inside.fetch_sub(1);
    ++out.successes;
    if (writes) ++out.writes;
  };
  auto options_for = [&](std::mt19937& rng, std::bernoulli_distribution& writes_now, steady::time_point t0) {
    redlock::acquire_options o;
    o.ttl = s.ttl;
    o.kind = rw && writes_now(rng) ? redlock::lock_kind::write : kind;
    o.wait = std::chrono::ceil<milliseconds>(end - t0);
    o.retry_delay = 10ms;
    o.retry_jitter = 10ms;
    if (semaphore) o.permits = permits;
    return o;
  };

  if (s.one_thread) {
    // The peers' harness model: every worker a loop on one event loop (one
    // thread), each with its own client; "inside" lasts one turn of the loop.
    std::size_t running = workers;
    for (std::size_t w = 0; w < workers; ++w)
      asio::co_spawn(
          one_loop,
          [&, w]() -> asio::awaitable<void> {
            auto& c = *async_clients[w];
            auto& out = results[w];
            std::mt19937 rng(static_cast<unsigned>(w) + 1);
            std::bernoulli_distribution writes_now(write_share);
            asio::steady_timer until_start(one_loop, start);
            co_await until_start.async_wait(asio::use_awaitable);
            for (;;) {
              auto t0 = steady::now();
              if (t0 >= end) break;
              auto o = options_for(rng, writes_now, t0);
              // The sync client names a fair waiter after its thread; here each worker is one.
              if (o.kind == redlock::lock_kind::fair) o.owner = "worker" + std::to_string(w);
              const bool writes = o.kind == redlock::lock_kind::write;
              auto [ec, l] = co_await c.async_acquire(key, o, asio::as_tuple(asio::use_awaitable));
              if (ec == redlock::condition::contended) continue;  // the wait ran out: the run is over
              if (ec) {
                ++out.errors[error_name(ec)];
                continue;
              }
              auto got = steady::now();
              if (got < end && enter(out, l, writes, t0, got)) {
                co_await asio::post(one_loop, asio::use_awaitable);
                leave(out, writes);
              }
              auto released_at = steady::now();
              last_release.store(released_at.time_since_epoch().count());
              auto [rec] = co_await c.async_release(std::move(l), asio::as_tuple(asio::use_awaitable));
              if (rec) ++out.errors["release:" + error_name(rec)];
              else out.release.push_back(micros(released_at, steady::now()));
            }
          },
          [&](std::exception_ptr) {
            if (--running == 0) one_loop.stop();  // the clients keep the loop busy
          });
    one_loop.run();
    one_loop.restart();
  }
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < workers && !s.one_thread; ++w) {
    threads.emplace_back([&, w] {
      auto& c = *clients[w];
      auto& out = results[w];
      std::mt19937 rng(static_cast<unsigned>(w) + 1);
      std::bernoulli_distribution writes_now(write_share);
      std::this_thread::sleep_until(start);
      for (;;) {
        auto t0 = steady::now();
        if (t0 >= end) break;
        auto o = options_for(rng, writes_now, t0);
        const bool writes = o.kind == redlock::lock_kind::write;
        std::optional<redlock::lock> l;
        try {
          l = c.try_acquire(key, o);
        } catch (const redlock::error& e) {
          ++out.errors[error_name(e.code())];
          continue;
        }
        if (!l) continue;  // the wait ran out: the run is over
        auto got = steady::now();
        if (got < end && enter(out, *l, writes, t0, got)) {
          auto until = steady::now() + section;
          while (steady::now() < until) std::this_thread::yield();
          leave(out, writes);
        }
        auto released_at = steady::now();
        last_release.store(released_at.time_since_epoch().count());
        try {
          c.release(*l);
          out.release.push_back(micros(released_at, steady::now()));
        } catch (const redlock::error& e) {
          ++out.errors["release:" + error_name(e.code())];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  clients.clear();
  async_clients.clear();
  one_loop.restart();
  one_loop.run_for(2s);  // the clients' shutdowns close their sockets

  std::size_t total = 0, lo = SIZE_MAX, hi = 0, zero = 0;
  std::vector<double> wait, handoff, write_wait, release;
  std::size_t writes = 0;
  std::vector<acquisition> log;
  std::map<std::string, std::size_t> errors;
  json::array per_worker, seconds_json;
  for (auto& w : results) {
    total += w.successes;
    lo = std::min(lo, w.successes);
    hi = std::max(hi, w.successes);
    per_worker.emplace_back(w.successes);
    wait.insert(wait.end(), w.wait.begin(), w.wait.end());
    handoff.insert(handoff.end(), w.handoff.begin(), w.handoff.end());
    release.insert(release.end(), w.release.begin(), w.release.end());
    write_wait.insert(write_wait.end(), w.write_wait.begin(), w.write_wait.end());
    writes += w.writes;
    log.insert(log.end(), w.log.begin(), w.log.end());
    for (auto& [k, v] : w.errors) errors[k] += v;
  }
  // FIFO: b overtook a if a asked clearly earlier (enqueue scores have 1 ms
  // resolution), was still waiting when b got the lock, and got it after b.
  std::size_t fifo_violations = 0;
  std::sort(log.begin(), log.end(), [](auto& x, auto& y) { return x.got < y.got; });
  for (std::size_t b = 0; b < log.size(); ++b)
    for (std::size_t a = b + 1; a < log.size() && log[a].asked < log[b].got; ++a)
      if (log[a].asked + 2ms < log[b].asked) {
        ++fifo_violations;
        break;
      }
  for (auto& b : per_second) {
    seconds_json.emplace_back(b.load());
    if (b.load() == 0) ++zero;
  }
  r.data["workers"] = workers;
  if (semaphore) r.data["permits"] = permits;
  if (rw) {
    r.data["write_share"] = write_share;
    r.data["writes"] = writes;
    r.data["writer_wait_us"] = to_json(summarize(write_wait));
  }
  r.data["seconds"] = secs;
  r.data["retry_delay_ms"] = 10;
  r.data["retry_jitter_ms"] = 10;
  r.data["section_us"] = s.one_thread ? 0 : section.count();
  r.data["workers_run_as"] = s.one_thread ? "coroutines on one thread, each its own async_client"
                                          : "threads, each its own sync client";
  r.data["sections"] = total;
  r.data["sections_per_s"] = std::round(static_cast<double>(total) / secs);
  r.data["per_worker"] = per_worker;
  r.data["fairness"] = hi > 0 ? round_to(static_cast<double>(lo) / static_cast<double>(hi), 3) : 0.0;
  std::uint64_t attempts = 0;
  for (auto& c : counters) attempts += c->acquire_attempts.load();
  attempts -= attempts_at_start;
  // Attempts (quorum rounds) per critical section: how much of the masters'
  // work contention wastes. The peer reports the same as attempts_per_success.
  r.data["attempts_per_section"] = total > 0 ? round_to(static_cast<double>(attempts) / static_cast<double>(total), 2) : 0.0;
  r.data["per_second"] = seconds_json;
  r.data["zero_seconds"] = zero;
  r.data["max_holders"] = max_inside.load();
  r.data["violations"] = violations.load();
  if (semaphore) {
    json::array slots;
    for (auto& n : per_permit) slots.emplace_back(n.load());
    r.data["per_permit"] = slots;
  }
  if (expired) r.data["expired_before_section"] = expired.load();
  r.data["acquire_wait_us"] = to_json(summarize(wait));
  // With several permits a holder's release need not be what the next one waited for.
  if (!semaphore && !rw) r.data["handoff_us"] = to_json(summarize(handoff));
  r.data["release_us"] = to_json(summarize(release));
  if (kind == redlock::lock_kind::fair) r.data["fifo_violations"] = fifo_violations;
  if (!errors.empty()) r.data["errors"] = counts_json(errors);
  return r;
}

}  // namespace

outcome run_contended(settings& s) { return contended_run(s, redlock::lock_kind::mutex, "contended"); }
outcome run_contended_fair(settings& s) { return contended_run(s, redlock::lock_kind::fair, "contended_fair"); }
outcome run_rwlock(settings& s) {
  return contended_run(s, redlock::lock_kind::read, "rwlock", 1, rwlock_write_share);
}
outcome run_semaphore(settings& s) {
  return contended_run(s, redlock::lock_kind::semaphore, "semaphore", semaphore_permits);
}

}  // namespace bench
