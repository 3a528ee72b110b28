// SPDX-License-Identifier: Apache-2.0
// redlock-bench scenario scale_nodes: how the cost grows with the number of masters.
#include "scenario_tools.hpp"

#include <algorithm>

namespace bench {

// For N = 1, 3, 5, 7, 9 masters: sequential acquire+release (async_client, as
// `uncontended`) and the hand-written quorum pair on the same N (as `floor`).
// Both fan out in parallel, so the ratio should stay flat as N grows. They
// alternate in blocks (below). Local
// runs start the masters beyond the 5 they have; with --nodes only the N
// that the given masters allow are measured.
outcome run_scale_nodes(settings& s) {
  outcome r;
  std::vector<std::unique_ptr<redlock::testing::redis_process>> extra;
  std::vector<master> all = s.masters;
  if (s.local) {
    while (all.size() < 9) {
      extra.push_back(std::make_unique<redlock::testing::redis_process>(s.local_options));  // TLS if the 5 are
      register_child(extra.back()->pid());
      master m = parse_master(extra.back()->uri());
      m.local = extra.back().get();
      m.pid = extra.back()->pid();
      all.push_back(m);
    }
  }
  const std::size_t warm = s.sized<std::size_t>(300, 100, 50), n = s.sized<std::size_t>(2000, 500, 200);
  json::array rows;
  for (std::size_t count : {1u, 3u, 5u, 7u, 9u}) {
    if (count > all.size()) break;
    settings sub = s;
    sub.masters.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count));
    auto o = single_attempt(sub);
    // Ours and the floor alternate in blocks on connections kept open, so
    // that the machine's load, which drifts within seconds on a shared
    // 2-core host, weighs on both alike: run one after the other, the same
    // N's ratio moved by up to 0.6 from run to run.
    pair_samples p;
    std::vector<double> q;
    {
      async_env env(sub);
      quorum_floor floor(sub);
      pair_samples w;
      std::vector<double> wq;
      auto prefix = s.tag + ":scale" + std::to_string(count);
      run_one(env.io, sequential_pairs(*env.client, prefix + ":w:", true, warm, o, w));
      floor.pairs(warm, wq);
      const std::size_t blocks = 10, per_block = (n + blocks - 1) / blocks;
      for (std::size_t b = 0; b < blocks; ++b) {
        run_one(env.io, sequential_pairs(*env.client, prefix + ":" + std::to_string(b) + ":", true, per_block, o, p));
        floor.pairs(per_block, q);
      }
    }
    const auto tls = std::count_if(sub.masters.begin(), sub.masters.end(), [](const master& m) { return m.tls; });
    json::object row{{"masters", count}, {"tls_masters", tls}, {"failures", p.failures}};
    auto acquire = summarize(p.acquire), pair = summarize(p.pair);
    row["acquire_us"] = to_json(acquire);
    row["pair_us"] = to_json(pair);
    auto floor = summarize(q);
    row["quorum_floor_pair_us"] = to_json(floor);
    if (floor.p50 > 0) row["pair_over_floor"] = round_to(pair.p50 / floor.p50, 3);
    rows.push_back(std::move(row));
  }
  for (auto& e : extra) unregister_child(e->pid());
  r.data["by_masters"] = std::move(rows);
  return r;
}

}  // namespace bench
