// SPDX-License-Identifier: Apache-2.0
// redlock-bench scenario no_quorum: a majority SIGSTOPped, single attempts.
#include "scenario_tools.hpp"

namespace bench {

outcome run_no_quorum(settings& s) {
  outcome r;
  std::size_t nodes = s.masters.size(), quorum = nodes / 2 + 1, k = nodes - quorum + 1;
  if (!s.can_stop) {
    r.skipped = "needs masters whose pids are known: local masters (no --nodes), or --pidfiles DIR with <port>.pid";
    return r;
  }
  const std::size_t tries = s.sized<std::size_t>(60, 20, 10);
  auto o = single_attempt(s);
  std::vector<double> fail_ms;
  std::map<std::string, std::size_t> errors;
  std::size_t acquired = 0;
  json::array stopped;
  {
    async_env env(s);
    pair_samples w;
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":qw:", true, 100, o, w));
    std::vector<master*> which;
    for (std::size_t i = 0; i < k; ++i) which.push_back(&s.masters[i]);
    stopped_masters stop(which, s.tls_ca_file);
    stopped = stop.uris();
    run_one(env.io, [&]() -> asio::awaitable<void> {
      auto& c = *env.client;
      for (std::size_t i = 0; i < tries; ++i) {
        auto t0 = steady::now();
        auto [ec, l] = co_await c.async_acquire(s.tag + ":q:" + std::to_string(i), o, as_tuple_awaitable);
        auto t1 = steady::now();
        if (!ec) {
          ++acquired;  // should not happen without a quorum
          co_await c.async_release(l, as_tuple_awaitable);
          continue;
        }
        ++errors[error_name(ec)];
        fail_ms.push_back(micros(t0, t1) / 1000.0);
      }
    }());
  }
  r.data["stopped"] = stopped;
  r.data["tries"] = tries;
  r.data["node_timeout_ms"] = s.node_timeout.count();
  r.data["fail_ms"] = to_json(summarize(fail_ms), 3);
  r.data["errors"] = counts_json(errors);
  r.data["acquired"] = acquired;
  return r;
}

}  // namespace bench
