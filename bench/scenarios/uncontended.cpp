// SPDX-License-Identifier: Apache-2.0
// redlock-bench scenario uncontended: sequential pairs on distinct names.
#include "scenario_tools.hpp"

#include <cmath>

namespace bench {

outcome run_uncontended(settings& s) {
  outcome r;
  const std::size_t warm = s.sized<std::size_t>(500, 200, 100);
  const std::size_t n = s.sized<std::size_t>(5000, 1000, 300);
  auto o = single_attempt(s);
  pair_samples p;
  {
    async_env env(s);
    pair_samples w;
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":uw:", true, warm, o, w));
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":u:", true, n, o, p));
  }
  r.data["api"] = "async_client, io_context run to completion on the calling thread";
  put_pairs(r.data, p);

  // The sync facade: the same pairs through its I/O thread (a thread handoff
  // each way), for comparison; then the fair lock's (its scripts keep a
  // line: the yardstick for its hand-off under contention).
  const std::size_t sync_n = s.sized<std::size_t>(1000, 250, 100);
  struct sync_run {
    std::vector<double> acq, pair;
    std::size_t failures = 0;
    std::map<std::string, std::size_t> errors;
    double elapsed = 0;
  };
  auto sync_pairs = [&](const redlock::acquire_options& opts, const std::string& prefix) {
    sync_run out;
    redlock::client c(s.client_options());
    for (int phase = 0; phase < 2; ++phase) {
      std::size_t count = phase == 0 ? warm / 2 : sync_n;
      auto start = steady::now();
      for (std::size_t i = 0; i < count; ++i) {
        auto name = s.tag + (phase == 0 ? ":" + prefix + "w:" : ":" + prefix + ":") + std::to_string(i);
        auto t0 = steady::now();
        try {
          auto l = c.try_acquire(name, opts);
          auto t1 = steady::now();
          if (!l) {
            ++out.failures;
            ++out.errors["not_acquired"];
            continue;
          }
          c.release(*l);
          auto t2 = steady::now();
          if (phase == 1) {
            out.acq.push_back(micros(t0, t1));
            out.pair.push_back(micros(t0, t2));
          }
        } catch (const redlock::error& e) {
          ++out.failures;
          ++out.errors[error_name(e.code())];
        }
      }
      if (phase == 1) out.elapsed = std::chrono::duration<double>(steady::now() - start).count();
    }
    return out;
  };
  auto put_sync = [&](const std::string& prefix, sync_run run) {
    r.data[prefix + "samples"] = run.pair.size();
    r.data[prefix + "acquire_us"] = to_json(summarize(run.acq));
    r.data[prefix + "pair_us"] = to_json(summarize(run.pair));
    r.data[prefix + "pairs_per_s"] =
        run.elapsed > 0 ? std::round(static_cast<double>(run.pair.size()) / run.elapsed) : 0.0;
    if (run.failures) r.data[prefix + "failures"] = run.failures;
    if (!run.errors.empty()) r.data[prefix + "errors"] = counts_json(run.errors);
  };
  put_sync("sync_", sync_pairs(o, "s"));
  auto fair = o;
  fair.kind = redlock::lock_kind::fair;
  put_sync("fair_sync_", sync_pairs(fair, "f"));
  return r;
}

}  // namespace bench
