// SPDX-License-Identifier: Apache-2.0
// many_clients: 32 client processes, each one async_client with 8
// acquire+release loops in flight on distinct names, all on the same masters
// at once: how the masters and the clients share 2 cores when the clients
// are many processes, not one. Each process is this executable again
// (--many-clients-worker), so it measures the same library build.
#include "bench.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace bench {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t processes = 32;
constexpr std::size_t in_flight_per_process = 8;
constexpr const char* worker_flag = many_clients_worker_flag;

// Counts this measurement's own connection too: it cancels out in a difference.
long long connected_clients(const master& m, const std::string& ca_file) {
  return info_number(m, ca_file, "clients", "connected_clients");
}

}  // namespace

// In the child: warm up, wait for the common start, run the loops until the
// common end, then write "pairs failures\n<µs> <µs> ...\n" to the out file.
// Arguments: worker_args, then ttl_ms prefix start_ns run_ms out_file.
int many_clients_worker(int argc, char** argv) {
  return worker_main(argc, argv, 5, [argv](const redlock::client_options& co) {
    redlock::acquire_options o;
    o.ttl = milliseconds(number_arg(argv[4]));
    const std::string prefix = argv[5];
    const steady::time_point start{std::chrono::nanoseconds(number_arg(argv[6]))};
    const auto end = start + milliseconds(number_arg(argv[7]));

    asio::io_context io{1};
    std::optional<redlock::async_client> client;
    client.emplace(io.get_executor(), co);
    std::vector<double> lat;
    std::size_t pairs = 0, failures = 0;
    constexpr auto tuple = asio::as_tuple(asio::use_awaitable);
    auto loop = [&](std::size_t w) -> asio::awaitable<void> {
      // Warm-up: connections open and scripts loaded before the start.
      auto warm = prefix + ":warm:" + std::to_string(w);
      if (auto [ec, l] = co_await client->async_acquire(warm, o, tuple); !ec) co_await client->async_release(l, tuple);
      asio::steady_timer t(io, start);
      co_await t.async_wait(tuple);
      for (std::size_t k = 0; steady::now() < end; ++k) {
        auto t0 = steady::now();
        auto [ec, l] = co_await client->async_acquire(prefix + ":" + std::to_string(w) + ":" + std::to_string(k), o, tuple);
        if (ec) {
          ++failures;
          continue;
        }
        co_await client->async_release(l, tuple);
        auto t1 = steady::now();
        if (t1 <= end) {
          ++pairs;
          lat.push_back(micros(t0, t1));
        }
      }
    };
    std::size_t left = in_flight_per_process;
    for (std::size_t w = 0; w < in_flight_per_process; ++w)
      asio::co_spawn(io, loop(w), [&](std::exception_ptr) {
        if (--left == 0) io.stop();
      });
    io.run();
    client.reset();
    io.restart();
    io.run_for(1s);
    std::ofstream out(argv[8]);
    out << pairs << " " << failures << "\n";
    for (double v : lat) out << std::lround(v) << " ";
    out << "\n";
    return out ? 0 : 1;
  });
}

outcome run_many_clients(settings& s) {
  outcome r;
  const auto run = s.sized(10000ms, 2000ms, 1000ms);
  // Long enough for every process to start, connect and warm up first (the
  // sanitizer build of the smoke test starts slowly).
  const auto lead = s.sized(6000ms, 4000ms, 4000ms);
  const auto start = steady::now() + lead;
  const auto start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();

  std::vector<long long> baseline;
  for (auto& m : s.masters) baseline.push_back(connected_clients(m, s.tls_ca_file));

  std::vector<pid_t> children;
  std::vector<std::string> files;
  for (std::size_t i = 0; i < processes; ++i) {
    files.push_back("/tmp/redlock-bench-many-clients-" + std::to_string(::getpid()) + "-" + std::to_string(i));
    auto args = worker_args(s, worker_flag);
    args.insert(args.end(), {std::to_string(s.ttl.count()), s.tag + ":mc:" + std::to_string(i),
                             std::to_string(start_ns), std::to_string(run.count()), files.back()});
    pid_t pid = spawn_self(args);
    if (pid < 0) {
      for (pid_t c : children) ::kill(c, SIGKILL);
      for (pid_t c : children) ::waitpid(c, nullptr, 0);
      r.skipped = "could not start worker processes";
      return r;
    }
    children.push_back(pid);
  }

  // Connections while every process is running: one per client per master.
  std::this_thread::sleep_until(start + run / 2);
  json::array connections;
  for (std::size_t i = 0; i < s.masters.size(); ++i) {
    auto now = connected_clients(s.masters[i], s.tls_ca_file);
    connections.push_back(now >= 0 && baseline[i] >= 0 ? json::value(now - baseline[i]) : json::value(nullptr));
  }

  // Every worker ends by itself shortly after the run; one that hangs is
  // killed and counted, never waited on forever.
  std::size_t worker_failures = 0;
  const auto give_up = start + run + 30s;
  for (pid_t c : children)
    if (!reap(c, give_up)) ++worker_failures;

  std::vector<double> lat;
  std::size_t pairs = 0, failures = 0;
  for (auto& f : files) {
    std::ifstream in(f);
    std::size_t p = 0, fl = 0;
    if (in >> p >> fl) {
      pairs += p;
      failures += fl;
      for (double v; in >> v;) lat.push_back(v);
    }
    std::remove(f.c_str());
  }
  double seconds = std::chrono::duration<double>(run).count();
  r.data["processes"] = processes;
  r.data["in_flight_per_process"] = in_flight_per_process;
  r.data["seconds"] = seconds;
  r.data["pairs"] = pairs;
  r.data["pairs_per_s"] = std::round(static_cast<double>(pairs) / seconds);
  r.data["pair_us"] = to_json(summarize(lat));
  r.data["failures"] = failures;
  r.data["worker_failures"] = worker_failures;
  r.data["connections_per_master"] = std::move(connections);
  return r;
}

}  // namespace bench
