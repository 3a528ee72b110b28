// SPDX-License-Identifier: Apache-2.0
// redlock-bench scenario semaphore_skew: per-link latency skew, one attempt each.
#include "raw_link.hpp"
#include "scenario_tools.hpp"

#include <proxy/fault_proxy.hpp>

#include <algorithm>

namespace bench {

using namespace std::chrono_literals;

// redis-semaphore's `semskew` for our semaphore: 5 holders start together,
// one attempt each; holder h reaches the masters of plan[h] at once and the
// other two through a fault proxy that delays its requests by 50 ms. A
// semaphore counted per master (a sorted set of members, as the peer's)
// admits up to floor(N * permits / quorum) = 5 holders so; ours, whose slots
// are quorum mutexes, at most `permits`. Repeated over fresh names, since the
// first slot each holder tries is random. The node timeout is raised above
// the skew, so the slow replies count (as the peer, without one, waits).
outcome run_semaphore_skew(settings& s) {
  outcome r;
  constexpr unsigned permits = semaphore_permits;
  const std::vector<std::vector<std::size_t>> plan{{0, 1, 2}, {0, 1, 2}, {0, 3, 4}, {1, 3, 4}, {2, 3, 4}};
  const auto slow = 50ms;
  if (s.masters.size() != 5 || permits != 3) {
    r.skipped = "needs 5 masters";
    return r;
  }
  for (auto& m : s.masters)
    if ((m.host != "127.0.0.1" && m.host != "localhost") || m.tls || !m.password.empty() || m.db != 0) {
      r.skipped = "needs masters on 127.0.0.1 without TLS, password or db (the proxy forwards there)";
      return r;
    }
  const int trials = s.sized(20, 5, 3);
  const auto node_timeout = std::max<milliseconds>(s.node_timeout, 4 * slow);

  std::vector<std::unique_ptr<redlock::fault::fault_proxy>> proxies;
  asio::io_context io{1};
  std::vector<std::optional<redlock::async_client>> clients(plan.size());
  for (std::size_t h = 0; h < plan.size(); ++h) {
    auto opts = s.client_options();
    opts.node_timeout = node_timeout;
    for (std::size_t i = 0; i < s.masters.size(); ++i) {
      if (std::find(plan[h].begin(), plan[h].end(), i) != plan[h].end()) continue;
      proxies.push_back(std::make_unique<redlock::fault::fault_proxy>(s.masters[i].port, h * 10 + i));
      opts.nodes[i] = proxies.back()->uri();
    }
    clients[h].emplace(io.get_executor(), opts);
  }
  redlock::acquire_options o = single_attempt(s);
  o.kind = redlock::lock_kind::semaphore;
  o.permits = permits;
  {  // warm-up, undelayed: connections open, scripts loaded
    std::vector<asio::awaitable<void>> tasks;
    for (std::size_t h = 0; h < plan.size(); ++h)
      tasks.push_back([](redlock::async_client& c, std::string name, redlock::acquire_options o) -> asio::awaitable<void> {
        auto [ec, l] = co_await c.async_acquire(std::move(name), o, as_tuple_awaitable);
        if (!ec) co_await c.async_release(l, as_tuple_awaitable);
      }(*clients[h], s.tag + ":skw:" + std::to_string(h), o));
    run_all(io, std::move(tasks));
  }
  for (auto& p : proxies) p->set_latency(redlock::fault::direction::client_to_server, slow);

  std::vector<std::unique_ptr<raw_link>> probes;
  for (auto& m : s.masters) probes.push_back(std::make_unique<raw_link>(m, s.tls_ca_file, 1000ms));
  std::map<std::size_t, std::size_t> holders_seen;  // holders in a trial: trials
  std::size_t violations = 0, most = 0;
  std::vector<std::size_t> most_per_master(s.masters.size(), 0);
  std::map<std::string, std::size_t> errors;
  for (int t = 0; t < trials; ++t) {
    const auto name = s.tag + ":skew:" + std::to_string(t);
    std::vector<redlock::lock> held(plan.size());
    std::vector<asio::awaitable<void>> tasks;
    for (std::size_t h = 0; h < plan.size(); ++h)
      tasks.push_back([](redlock::async_client& c, std::string name, redlock::acquire_options o, redlock::lock& out,
                         std::map<std::string, std::size_t>& errors) -> asio::awaitable<void> {
        auto [ec, l] = co_await c.async_acquire(std::move(name), o, as_tuple_awaitable);
        if (ec) {
          ++errors[error_name(ec)];
          co_return;
        }
        out = std::move(l);
      }(*clients[h], name, o, held[h], errors));
    run_all(io, std::move(tasks));
    std::size_t holders = 0;
    std::vector<int> slot_holders(permits, 0);
    for (auto& l : held)
      if (l) {
        ++holders;
        if (auto p = l.permit(); p && *p < permits) ++slot_holders[*p];
      }
    ++holders_seen[holders];
    most = std::max(most, holders);
    bool bad = holders > permits;
    for (int n : slot_holders) bad = bad || n > 1;  // two holders of one slot
    if (bad) ++violations;
    // What each master holds for them (the peer's per-node ZCARD): slots whose
    // value is a holder's token.
    for (std::size_t i = 0; i < probes.size(); ++i) {
      std::size_t n = 0;
      for (auto& l : held) {
        if (!l) continue;
        auto rep = probes[i]->command({"GET", l.key()});
        if (rep->type == REDIS_REPLY_STRING && std::string_view(rep->str, rep->len) == l.token()) ++n;
      }
      most_per_master[i] = std::max(most_per_master[i], n);
    }
    std::vector<asio::awaitable<void>> releases;
    for (std::size_t h = 0; h < plan.size(); ++h)
      if (held[h])
        releases.push_back([](redlock::async_client& c, redlock::lock l) -> asio::awaitable<void> {
          co_await c.async_release(std::move(l), as_tuple_awaitable);
        }(*clients[h], std::move(held[h])));
    if (!releases.empty()) run_all(io, std::move(releases));
  }
  for (auto& c : clients) c.reset();
  try {
    io.restart();
    io.run_for(2s);
  } catch (...) {
  }
  proxies.clear();

  json::array plan_json, per_master;
  for (auto& fast : plan) {
    json::array a;
    for (auto i : fast) a.emplace_back(i);
    plan_json.emplace_back(std::move(a));
  }
  for (auto n : most_per_master) per_master.emplace_back(n);
  json::object seen;
  for (auto& [k, v] : holders_seen) seen[std::to_string(k)] = v;
  r.data["permits"] = permits;
  r.data["masters"] = s.masters.size();
  r.data["slow_ms"] = slow.count();
  r.data["node_timeout_ms"] = node_timeout.count();
  r.data["fast_masters_per_holder"] = plan_json;
  r.data["trials"] = trials;
  r.data["holders_per_trial"] = seen;
  r.data["max_holders"] = most;
  r.data["max_held_per_master"] = per_master;
  r.data["violations"] = violations;
  if (!errors.empty()) r.data["errors"] = counts_json(errors);
  return r;
}

}  // namespace bench
