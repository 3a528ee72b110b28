// SPDX-License-Identifier: Apache-2.0
// redlock-bench scenario one_hung: one master SIGSTOPped.
#include "scenario_tools.hpp"

namespace bench {

outcome run_one_hung(settings& s) {
  outcome r;
  std::size_t nodes = s.masters.size(), quorum = nodes / 2 + 1;
  if (!s.can_stop) {
    r.skipped = "needs masters whose pids are known: local masters (no --nodes), or --pidfiles DIR with <port>.pid";
    return r;
  }
  if (nodes - 1 < quorum) {
    r.skipped = "with " + std::to_string(nodes) + " masters, one stopped leaves no quorum";
    return r;
  }
  const std::size_t warm = s.sized<std::size_t>(300, 100, 50);
  const std::size_t n = s.sized<std::size_t>(3000, 500, 200);
  auto o = single_attempt(s);
  pair_samples w, healthy, hung;
  json::array stopped;
  {
    async_env env(s);
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":hw:", true, warm, o, w));
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":hb:", true, n / 2, o, healthy));
    stopped_masters stop({&s.masters[0]}, s.tls_ca_file);
    stopped = stop.uris();
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":h:", true, n, o, hung));
  }  // SIGCONT (and the master answers again) before the client goes
  r.data["stopped"] = stopped;
  put_pairs(r.data, hung);
  r.data["healthy_acquire_us"] = to_json(summarize(healthy.acquire));
  r.data["healthy_pair_us"] = to_json(summarize(healthy.pair));
  return r;
}

}  // namespace bench
