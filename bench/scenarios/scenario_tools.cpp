// SPDX-License-Identifier: Apache-2.0
// What redlock-bench's scenarios share (scenario_tools.hpp).
#include "scenario_tools.hpp"

#include <boost/asio/co_spawn.hpp>

#include <cmath>
#include <exception>
#include <stdexcept>

namespace bench {

using namespace std::chrono_literals;

double round_to(double x, int decimals) {
  double scale = std::pow(10.0, decimals);
  return std::round(x * scale) / scale;
}

void run_all(asio::io_context& io, std::vector<asio::awaitable<void>> tasks) {
  std::size_t left = tasks.size();
  std::exception_ptr first;
  for (auto& t : tasks)
    asio::co_spawn(io, std::move(t), [&](std::exception_ptr e) {
      if (e && !first) first = e;
      if (--left == 0) io.stop();
    });
  io.restart();
  io.run();
  if (first) std::rethrow_exception(first);
  if (left != 0) throw std::runtime_error("io_context ran out of work with tasks unfinished");
}

void run_one(asio::io_context& io, asio::awaitable<void> task) {
  std::vector<asio::awaitable<void>> v;
  v.push_back(std::move(task));
  run_all(io, std::move(v));
}

async_env::~async_env() {
  client.reset();
  try {
    io.restart();
    io.run_for(2s);
  } catch (...) {
  }
}

asio::awaitable<void> sequential_pairs(redlock::async_client& c, std::string prefix, bool distinct, std::size_t n,
                                       redlock::acquire_options o, pair_samples& out) {
  auto start = steady::now();
  for (std::size_t i = 0; i < n; ++i) {
    std::string name = distinct ? prefix + std::to_string(i) : prefix;
    auto t0 = steady::now();
    auto [ec, l] = co_await c.async_acquire(std::move(name), o, as_tuple_awaitable);
    auto t1 = steady::now();
    if (ec) {
      ++out.failures;
      ++out.errors[error_name(ec)];
      continue;
    }
    if (auto f = l.fence()) out.fences.push_back(*f);
    auto [rec] = co_await c.async_release(l, as_tuple_awaitable);
    auto t2 = steady::now();
    if (rec) ++out.errors["release:" + error_name(rec)];
    out.acquire.push_back(micros(t0, t1));
    out.release.push_back(micros(t1, t2));
    out.pair.push_back(micros(t0, t2));
  }
  out.elapsed_s = std::chrono::duration<double>(steady::now() - start).count();
}

void put_pairs(json::object& o, pair_samples& p) {
  o["samples"] = p.pair.size();
  o["acquire_us"] = to_json(summarize(p.acquire));
  o["release_us"] = to_json(summarize(p.release));
  o["pair_us"] = to_json(summarize(p.pair));
  o["pairs_per_s"] = std::round(p.pairs_per_s());
  o["failures"] = p.failures;
  if (!p.errors.empty()) o["errors"] = counts_json(p.errors);
}

redlock::acquire_options single_attempt(const settings& s) {
  redlock::acquire_options o;
  o.ttl = s.ttl;  // wait 0, max_attempts 0: one attempt, no retries
  return o;
}

}  // namespace bench
