// SPDX-License-Identifier: Apache-2.0
// Part 1: several workers increment a shared counter (a deliberately
// non-atomic GET, pause, SET on the storage Redis) only while holding the
// RedLock, while one master is paused, killed and restarted. At the end the
// counter must equal the number of critical sections: no lost update.
#include "demo.hpp"

#include <redlock/redlock.hpp>

#include <atomic>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace demo {
namespace {

using steady = std::chrono::steady_clock;
const std::string counter_key = "redlock-demo:counter";

// GET, pause, SET: loses updates unless the callers exclude each other.
void read_modify_write(plain_redis& store) {
  auto text = store.get(counter_key);
  long value = text.empty() ? 0 : std::stol(text);
  std::this_thread::sleep_for(1ms);
  store.set(counter_key, std::to_string(value + 1));
}

}  // namespace

void mutual_exclusion(setup& s, report& r, int workers, double seconds) {
  heading(s.faults() ? "1. Mutual exclusion, with a master failing" : "1. Mutual exclusion");
  std::cout << workers << " workers each loop: acquire the lock, GET the counter, wait 1 ms, SET it + 1, release.\n"
            << "Without mutual exclusion increments would be lost. The counter is on "
            << (s.faults() ? "a separate Redis" : "your first master") << ".\n";
  if (!s.faults())
    std::cout << "(your masters: no faults are injected; with local masters, master 2 is paused, killed and "
                 "restarted)\n";
  plain_redis(s.storage).del(counter_key);

  redlock::client_options options;
  options.nodes = s.nodes;
  options.node_timeout = 50ms;
  redlock::acquire_options lock_opts{
      .ttl = 2000ms, .wait = 3000ms, .retry_delay = 4ms, .retry_jitter = 3ms, .min_validity = 100ms};

  std::mutex stats_mutex;
  std::vector<long> sections(workers, 0), not_acquired(workers, 0);
  std::vector<std::map<std::string, long>> per_master(s.nodes.size());
  std::atomic<bool> stop{false};
  auto t0 = steady::now();
  auto stamp = [&] {
    std::ostringstream out;
    out << "[" << std::fixed << std::setprecision(1) << std::chrono::duration<double>(steady::now() - t0).count()
        << "s] ";
    return out.str();
  };

  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        redlock::client c(options);
        plain_redis store(s.storage);
        while (!stop) {
          auto l = c.try_acquire("redlock-demo:lock", lock_opts);
          if (!l) {
            ++not_acquired[w];
            continue;
          }
          {
            std::lock_guard g(stats_mutex);
            for (std::size_t i = 0; i < l->nodes().size(); ++i) ++per_master[i][std::string(redlock::to_string(l->nodes()[i].state))];
          }
          // Critical section: only while validity remains.
          if (l->remaining_validity() > 50ms) {
            read_modify_write(store);
            ++sections[w];
          }
          try {
            c.release(*l);
          } catch (const redlock::error&) {
            // Already expired: nothing to release.
          }
        }
      } catch (const std::exception& e) {
        std::lock_guard g(stats_mutex);
        std::cerr << stamp() << "worker " << w << " stopped: " << e.what() << "\n";
      }
    });
  }

  // Returns early on Ctrl-C; the threads are joined before anything throws.
  auto sleep_until = [&](double at) {
    auto when = t0 + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(at));
    while (steady::now() < when && !interrupt_requested()) std::this_thread::sleep_for(10ms);
  };
  std::cout << stamp() << workers << " workers running for " << seconds << " s\n";
  if (s.faults()) {
    auto& victim = *s.local[2];
    sleep_until(seconds * 0.25);
    victim.pause();
    std::cout << stamp() << "SIGSTOP master 2 (it still accepts connections but answers nothing)\n";
    sleep_until(seconds * 0.45);
    victim.kill9();
    std::cout << stamp() << "kill -9 master 2\n";
    sleep_until(seconds * 0.65);
    if (!interrupt_requested()) {
      victim.restart();
      std::cout << stamp() << "restarted master 2 from its AOF\n";
    }
  }
  sleep_until(seconds);
  stop = true;
  for (auto& t : threads) t.join();
  if (interrupt_requested()) throw interrupted();

  long total = 0;
  for (int w = 0; w < workers; ++w) {
    std::cout << "  worker " << w << ": " << sections[w] << " critical sections, " << not_acquired[w]
              << " waits that timed out\n";
    total += sections[w];
  }
  std::cout << "  each master's answer at the moment a quorum was reached:\n";
  for (std::size_t i = 0; i < s.nodes.size(); ++i) {
    std::cout << "    master " << i << ":";
    for (auto& [state, n] : per_master[i]) std::cout << " " << state << "=" << n;
    std::cout << "\n";
  }
  auto text = plain_redis(s.storage).get(counter_key);
  long final_value = text.empty() ? 0 : std::stol(text);
  std::ostringstream what;
  what << "mutual exclusion" << (s.faults() ? " with master 2 paused, killed and restarted" : "") << ": " << total
       << " critical sections, counter " << final_value << " -> "
       << (final_value == total ? "no lost update" : "LOST UPDATES");
  r.check(total > 0 && final_value == total, what.str());
}

}  // namespace demo
