// SPDX-License-Identifier: Apache-2.0
// elect: leader failover (docs/algorithm.md, section 14). A leader campaigns
// in a process of its own (this executable again, --elect-worker), says on
// its stdout that it leads, and is SIGKILLed: it never resigns, so its lease
// must run out. Standby campaigners in this process (each its own client)
// take over; how long that takes after the SIGKILL, and when an observer
// reports the new leader, against the TTL. Every leader's epoch must exceed
// the one before, and no two standbys may lead at once.
#include "bench.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <mutex>
#include <optional>
#include <poll.h>
#include <random>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace bench {

using namespace std::chrono_literals;

namespace {

constexpr milliseconds election_ttl{500};
constexpr std::size_t standbys = 3;
constexpr milliseconds retry_delay{10}, retry_jitter{10};
constexpr const char* worker_flag = elect_worker_flag;

redlock::acquire_options campaign_options(milliseconds ttl, milliseconds wait) {
  redlock::acquire_options o;
  o.ttl = ttl;
  o.wait = wait;
  o.retry_delay = retry_delay;
  o.retry_jitter = retry_jitter;
  return o;
}

void write_all(int fd, const std::string& text) {
  for (std::size_t at = 0; at < text.size();) {
    auto n = ::write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    at += static_cast<std::size_t>(n);
  }
}

// Pops the next whole line from `buf`, reading `fd` into it until `deadline`
// (a deadline in the past: only what is there already). None on timeout or EOF.
std::optional<std::string> read_line(int fd, std::string& buf, steady::time_point deadline) {
  for (;;) {
    if (auto nl = buf.find('\n'); nl != std::string::npos) {
      auto line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<milliseconds>(deadline - steady::now()).count();
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::clamp<long long>(left, 0, 60000)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    char chunk[256];
    auto got = ::read(fd, chunk, sizeof chunk);
    if (got <= 0) return std::nullopt;  // EOF: the worker is gone
    buf.append(chunk, static_cast<std::size_t>(got));
  }
}

// What the observer reported, with when. Shared with its callback, which may
// still be running while stop() returns.
struct observer_log {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::pair<steady::time_point, std::optional<redlock::leader_info>>> seen;

  void add(const std::optional<redlock::leader_info>& l) {
    {
      std::lock_guard g(m);
      seen.emplace_back(steady::now(), l);
    }
    cv.notify_all();
  }
  // When `token` was first reported leading (waiting for it until `deadline`).
  std::optional<steady::time_point> reported(const std::string& token, steady::time_point deadline) {
    std::unique_lock g(m);
    std::optional<steady::time_point> at;
    cv.wait_until(g, deadline, [&] {
      for (auto& [t, l] : seen)
        if (l && l->token == token) {
          at = t;
          return true;
        }
      return false;
    });
    return at;
  }
  // Leaders reported with an epoch not above the one reported before.
  std::size_t regressions() {
    std::lock_guard g(m);
    std::size_t n = 0;
    std::uint64_t before = 0;
    for (auto& [t, l] : seen)
      if (l) {
        if (l->epoch <= before) ++n;
        before = std::max(before, l->epoch);
      }
    return n;
  }
};

// A standby's term: won at `won`, resign called at `resigned`.
struct term {
  steady::time_point won, resigned;
  std::uint64_t epoch = 0;
  std::string token;
};

}  // namespace

// In the child: campaign, write "<epoch> <token>\n" to stdout once leading
// ("lost <reason>\n" if the leadership is lost), then wait to be SIGKILLed.
// Arguments: worker_args, then ttl_ms name.
int elect_worker(int argc, char** argv) {
  return worker_main(argc, argv, 2, [argv](const redlock::client_options& co) -> int {
    const pid_t parent = ::getppid();
    redlock::client c(co);
    auto o = campaign_options(milliseconds(number_arg(argv[4])), 20s);
    o.description = "redlock-bench elect leader, pid " + std::to_string(::getpid());
    o.on_lost = [](redlock::lost_reason why) { write_all(STDOUT_FILENO, "lost " + std::string(to_string(why)) + "\n"); };
    auto leadership = c.campaign(argv[5], o);
    write_all(STDOUT_FILENO, std::to_string(leadership.fence().value_or(0)) + " " + leadership.token() + "\n");
    // Leads (renewing) until SIGKILLed; never outlives the bench.
    for (auto until = steady::now() + 120s; steady::now() < until && ::getppid() == parent;)
      std::this_thread::sleep_for(50ms);
    std::_Exit(0);
  });
}

outcome run_elect(settings& s) {
  outcome r;
  const std::size_t rounds = s.sized<std::size_t>(20, 3, 2);
  const milliseconds ttl = election_ttl;
  const milliseconds renew_every{static_cast<long long>(static_cast<double>(ttl.count()) / 3.0)};
  // Standbys wait out the kill delay, the lease and each other's terms.
  const auto standby = campaign_options(ttl, 10s);
  // A slow start (the sanitizer build) must not count as a failure.
  const milliseconds start_limit = 20s, observe_limit = 2s + ttl;

  std::vector<std::unique_ptr<redlock::client>> clients;
  for (std::size_t i = 0; i < standbys; ++i) {
    clients.push_back(std::make_unique<redlock::client>(s.client_options()));
    // Warm-up: connections open, scripts loaded. It may retry: over TLS a
    // loaded machine's handshakes can outlast the first round's node timeout.
    clients.back()->resign(clients.back()->campaign(s.tag + ":ew:" + std::to_string(i), campaign_options(ttl, 2s)));
  }
  redlock::client watcher(s.client_options());
  (void)watcher.leader(s.tag + ":ew:0");

  std::mt19937 rng(std::random_device{}());
  // Killed at a uniformly random point of a renewal period: the lease left
  // then is between ttl - renew_every and ttl.
  std::uniform_int_distribution<long long> kill_after(renew_every.count(), 2 * renew_every.count());

  std::vector<double> failover, observed, lag;
  std::size_t leader_failures = 0, leader_lost = 0, early = 0, unsignalled = 0, observer_missed = 0;
  std::size_t epoch_violations = 0, overlaps = 0, observer_regressions = 0, terms_total = 0;
  std::map<std::string, std::size_t> errors;
  for (std::size_t k = 0; k < rounds; ++k) {
    const auto name = s.tag + ":elect:" + std::to_string(k);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("elect: pipe2 failed");
    auto args = worker_args(s, worker_flag);
    args.insert(args.end(), {std::to_string(ttl.count()), name});
    const pid_t leader = spawn_self(args, fds[1]);
    ::close(fds[1]);
    if (leader < 0) {
      ::close(fds[0]);
      r.skipped = "could not start the leader's process";
      return r;
    }
    register_child(leader);
    auto finish_leader = [&] {
      ::kill(leader, SIGKILL);
      reap(leader, steady::now() + 10s);
      unregister_child(leader);
      ::close(fds[0]);
    };
    std::string out;
    std::uint64_t dead_epoch = 0;
    std::string dead_token;
    if (auto line = read_line(fds[0], out, steady::now() + start_limit)) {
      auto sp = line->find(' ');
      if (sp != std::string::npos && line->compare(0, 5, "lost ") != 0) {
        dead_epoch = std::strtoull(line->c_str(), nullptr, 10);
        dead_token = line->substr(sp + 1);
      }
    }
    if (dead_token.empty()) {
      ++leader_failures;
      finish_leader();
      continue;
    }

    auto log = std::make_shared<observer_log>();
    auto watch = watcher.async().observe(name, [log](const std::optional<redlock::leader_info>& l) { log->add(l); });
    log->reported(dead_token, steady::now() + observe_limit);  // it knows the leader before the kill

    std::mutex terms_mutex;
    std::vector<term> terms;
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < standbys; ++i)
      threads.emplace_back([&, i] {
        try {
          auto l = clients[i]->campaign(name, standby);
          auto won = steady::now();
          std::size_t index = 0;
          {
            std::lock_guard g(terms_mutex);
            index = terms.size();
            terms.push_back({won, won, l.fence().value_or(0), l.token()});
          }
          // The first leads until the observer reported it; the others step
          // down at once.
          if (index == 0) log->reported(l.token(), won + observe_limit);
          {
            std::lock_guard g(terms_mutex);
            terms[index].resigned = steady::now();
          }
          clients[i]->resign(l);
        } catch (const redlock::error& e) {
          std::lock_guard g(terms_mutex);
          ++errors[error_name(e.code())];
        } catch (const std::exception& e) {
          std::lock_guard g(terms_mutex);
          ++errors[e.what()];
        }
      });

    std::this_thread::sleep_for(milliseconds(kill_after(rng)));
    bool lost = false;
    while (auto line = read_line(fds[0], out, steady::now()))
      if (line->compare(0, 5, "lost ") == 0) lost = true;
    bool taken_early = false;
    {
      std::lock_guard g(terms_mutex);
      taken_early = !terms.empty();
    }
    const auto killed = steady::now();
    finish_leader();
    for (auto& t : threads) t.join();
    watch.stop();

    terms_total += terms.size();
    std::sort(terms.begin(), terms.end(), [](const term& a, const term& b) { return a.won < b.won; });
    std::uint64_t before = dead_epoch;
    for (std::size_t i = 0; i < terms.size(); ++i) {
      if (terms[i].epoch <= before) ++epoch_violations;
      before = std::max(before, terms[i].epoch);
      if (i > 0 && terms[i].won < terms[i - 1].resigned) ++overlaps;  // two standbys leading at once
    }
    observer_regressions += log->regressions();
    if (lost) ++leader_lost;
    if (taken_early) {
      ++early;
      if (!lost) ++unsignalled;  // a standby led while the leader, alive, had not been told it lost
    }
    if (lost || taken_early || terms.empty()) continue;
    failover.push_back(micros(killed, terms.front().won) / 1000.0);
    if (auto at = log->reported(terms.front().token, steady::now())) {
      observed.push_back(micros(killed, *at) / 1000.0);
      lag.push_back(micros(terms.front().won, *at) / 1000.0);
    } else {
      ++observer_missed;
    }
  }

  const double ttl_ms = static_cast<double>(ttl.count());
  std::vector<double> ratio;
  for (double f : failover) ratio.push_back(f / ttl_ms);
  double shortest = failover.empty() ? 0.0 : *std::min_element(failover.begin(), failover.end());
  r.data["rounds"] = rounds;
  r.data["standbys"] = standbys;
  r.data["ttl_ms"] = ttl.count();
  r.data["renew_every_ms"] = renew_every.count();
  r.data["retry_delay_ms"] = retry_delay.count();
  r.data["retry_jitter_ms"] = retry_jitter.count();
  r.data["measured"] = failover.size();
  r.data["failover_ms"] = to_json(summarize(failover));
  r.data["failover_min_ms"] = std::round(shortest * 10) / 10;
  r.data["failover_over_ttl"] = to_json(summarize(ratio), 3);
  r.data["observed_ms"] = to_json(summarize(observed));
  r.data["observer_lag_ms"] = to_json(summarize(lag));
  r.data["observer_missed"] = observer_missed;
  r.data["leader_failures"] = leader_failures;
  r.data["leader_lost"] = leader_lost;
  r.data["early_takeovers"] = early;
  r.data["unsignalled_takeovers"] = unsignalled;
  r.data["terms"] = terms_total;
  if (!errors.empty()) r.data["campaign_errors"] = counts_json(errors);
  r.data["epoch_violations"] = epoch_violations;
  r.data["overlaps"] = overlaps;
  r.data["observer_regressions"] = observer_regressions;
  r.data["violations"] = epoch_violations + overlaps;
  return r;
}

}  // namespace bench
