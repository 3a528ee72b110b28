// SPDX-License-Identifier: Apache-2.0
// redlock-bench scenario many_names: a master full of held locks.
#include "scenario_tools.hpp"

#include <algorithm>
#include <cmath>

namespace bench {


// Holds 100,000 distinct locks at once (10,000 with --quick), taken 64 in
// flight: how fast, what each costs a master in memory, and what an
// acquisition costs next to that many keys compared with an empty master.
// Every lock is released at the end.
outcome run_many_names(settings& s) {
  outcome r;
  const std::size_t target = s.sized<std::size_t>(100000, 10000, 2000), in_flight = 64, probe = s.sized<std::size_t>(1000, 300, 100);
  auto probe_options = single_attempt(s);
  auto hold_options = single_attempt(s);
  hold_options.ttl = std::max(s.ttl, milliseconds(300000));  // they must outlast the run
  std::vector<redlock::lock> held;
  held.reserve(target);
  std::size_t failures = 0, release_failures = 0;
  pair_samples empty, full;
  long long before = -1, after = -1;
  double fill_s = 0;
  {
    async_env env(s);
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":mw:", true, probe, probe_options, empty));
    empty = {};
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":me:", true, probe, probe_options, empty));
    before = info_number(s.masters.front(), s.tls_ca_file, "memory", "used_memory");
    std::size_t next = 0;
    auto taker = [&]() -> asio::awaitable<void> {
      while (next < target) {
        auto name = s.tag + ":m:" + std::to_string(next++);
        auto [ec, l] = co_await env.client->async_acquire(std::move(name), hold_options, as_tuple_awaitable);
        if (ec)
          ++failures;
        else
          held.push_back(std::move(l));
      }
    };
    auto t0 = steady::now();
    std::vector<asio::awaitable<void>> tasks;
    for (std::size_t w = 0; w < in_flight; ++w) tasks.push_back(taker());
    run_all(env.io, std::move(tasks));
    fill_s = std::chrono::duration<double>(steady::now() - t0).count();
    after = info_number(s.masters.front(), s.tls_ca_file, "memory", "used_memory");
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":mf:", true, probe, probe_options, full));
    std::size_t next_release = 0;
    auto releaser = [&]() -> asio::awaitable<void> {
      while (next_release < held.size()) {
        auto& l = held[next_release++];
        auto [ec] = co_await env.client->async_release(l, as_tuple_awaitable);
        if (ec) ++release_failures;
      }
    };
    tasks.clear();
    for (std::size_t w = 0; w < in_flight; ++w) tasks.push_back(releaser());
    run_all(env.io, std::move(tasks));
  }
  r.data["held"] = held.size();
  r.data["failures"] = failures;
  r.data["release_failures"] = release_failures;
  r.data["acquisitions_per_s"] = fill_s > 0 ? std::round(static_cast<double>(held.size()) / fill_s) : 0.0;
  if (before >= 0 && after >= 0 && !held.empty())
    r.data["bytes_per_lock"] = round_to(static_cast<double>(after - before) / static_cast<double>(held.size()), 1);
  r.data["empty_acquire_us"] = to_json(summarize(empty.acquire));
  r.data["full_acquire_us"] = to_json(summarize(full.acquire));
  r.data["full_pair_us"] = to_json(summarize(full.pair));
  auto e = summarize(empty.acquire), f = summarize(full.acquire);
  if (e.p99 > 0) r.data["p99_full_over_empty"] = round_to(f.p99 / e.p99, 3);
  return r;
}

}  // namespace bench
