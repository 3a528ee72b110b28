// SPDX-License-Identifier: Apache-2.0
// redlock-bench scenario throughput: 64 concurrent loops on one async_client, one thread.
#include "scenario_tools.hpp"

#include <cmath>

namespace bench {

using namespace std::chrono_literals;

outcome run_throughput(settings& s) {
  outcome r;
  const std::size_t in_flight = 64;
  const auto warm = s.sized(1000ms, 500ms, 200ms);
  const auto secs = s.sized(10s, 3s, 1s);
  auto o = single_attempt(s);
  std::vector<double> lat;
  std::size_t done = 0, failures = 0;
  std::map<std::string, std::size_t> errors;
  {
    async_env env(s);
    auto warm_end = steady::now() + warm;
    auto end = warm_end + secs;
    auto worker = [&](std::size_t w) -> asio::awaitable<void> {
      auto& c = *env.client;
      std::string prefix = s.tag + ":t:" + std::to_string(w) + ":";
      for (std::size_t k = 0; steady::now() < end; ++k) {
        auto t0 = steady::now();
        auto [ec, l] = co_await c.async_acquire(prefix + std::to_string(k), o, as_tuple_awaitable);
        if (ec) {
          if (t0 >= warm_end) {
            ++failures;
            ++errors[error_name(ec)];
          }
          continue;
        }
        auto [rec] = co_await c.async_release(l, as_tuple_awaitable);
        auto t2 = steady::now();
        if (t2 >= warm_end && t2 <= end) {
          if (rec) ++errors["release:" + error_name(rec)];
          ++done;
          lat.push_back(micros(t0, t2));
        }
      }
    };
    std::vector<asio::awaitable<void>> tasks;
    for (std::size_t w = 0; w < in_flight; ++w) tasks.push_back(worker(w));
    run_all(env.io, std::move(tasks));
  }
  double seconds = std::chrono::duration<double>(secs).count();
  r.data["in_flight"] = in_flight;
  r.data["seconds"] = seconds;
  r.data["pairs"] = done;
  r.data["pairs_per_s"] = std::round(static_cast<double>(done) / seconds);
  r.data["pair_us"] = to_json(summarize(lat));
  r.data["failures"] = failures;
  if (!errors.empty()) r.data["errors"] = counts_json(errors);
  return r;
}

}  // namespace bench
