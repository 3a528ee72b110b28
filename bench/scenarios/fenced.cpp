// SPDX-License-Identifier: Apache-2.0
// redlock-bench scenario fenced: sequential pairs with a fencing token, on one resource.
#include "scenario_tools.hpp"

namespace bench {

outcome run_fenced(settings& s) {
  outcome r;
  const std::size_t warm = s.sized<std::size_t>(300, 100, 50);
  const std::size_t n = s.sized<std::size_t>(3000, 500, 200);
  auto o = single_attempt(s);
  o.fenced = true;
  const std::string name = s.tag + ":fenced";  // one resource: one fence counter
  pair_samples w, p;
  {
    async_env env(s);
    run_one(env.io, sequential_pairs(*env.client, name, false, warm, o, w));
    run_one(env.io, sequential_pairs(*env.client, name, false, n, o, p));
  }
  std::vector<std::uint64_t> tokens = w.fences;
  tokens.insert(tokens.end(), p.fences.begin(), p.fences.end());
  bool monotonic = !tokens.empty();
  std::size_t missing = (w.pair.size() + p.pair.size()) - tokens.size();
  for (std::size_t i = 1; i < tokens.size(); ++i)
    if (tokens[i] <= tokens[i - 1]) monotonic = false;
  put_pairs(r.data, p);
  r.data["tokens_monotonic"] = monotonic && missing == 0;
  r.data["tokens"] = tokens.size();
  if (missing) r.data["locks_without_token"] = missing;
  if (!tokens.empty()) {
    r.data["first_token"] = tokens.front();
    r.data["last_token"] = tokens.back();
  }
  return r;
}

}  // namespace bench
