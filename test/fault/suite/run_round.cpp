// SPDX-License-Identifier: Apache-2.0
// One whole history: servers, workload, nemesis, final heal, wait for the
// TTLs, and every checker.
#include "nemesis_internal.hpp"

#include <algorithm>
#include <iostream>
#include <thread>

namespace redlock::fault {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

std::map<std::string, fault_stats> fault_figures(const std::vector<op>& ops) {
  std::map<std::string, fault_stats> out;
  std::vector<time_point> acquired;
  for (auto& o : ops)
    if (o.kind == op_kind::acquire && o.result == outcome::ok && o.completion) acquired.push_back(*o.completion);
  std::sort(acquired.begin(), acquired.end());
  for (auto& o : ops) {
    if (o.kind != op_kind::fault) continue;
    auto& s = out[o.resource];
    ++s.injected;
    s.acted += o.acted;
    auto end = o.completion.value_or(o.invoke);
    s.total_ms += ms_since(o.invoke, end);
    s.acquisitions_during += static_cast<std::size_t>(std::upper_bound(acquired.begin(), acquired.end(), end) -
                                                      std::lower_bound(acquired.begin(), acquired.end(), o.invoke));
  }
  return out;
}

round_result run_round(const round_config& cfg) {
  auto t0 = steady::now();
  auto lap = [&, last = t0](const char* what) mutable {
    if (!verbose()) return;
    auto now = steady::now();
    std::cerr << "round: " << what << " " << ms_since(last, now) << " ms" << std::endl;
    last = now;
  };
  round_result out;
  out.seed = cfg.seed;
  cluster c(cfg.cluster);
  lap("servers up");
  history h;
  auto wo = cfg.workload;
  for (std::size_t k = 0; k < c.options().client_views; ++k) wo.client_uris.push_back(c.uris_of(k));
  workload w(wo, c.uris(), c.storage_uri(), h);
  if (cfg.workload.lease_resources > 0 || cfg.workload.election) w.set_probe(c.make_probe());
  nemesis n(c, w, h, cfg.nemesis);
  w.start();
  auto start = steady::now();
  auto end = start + cfg.duration;
  auto nemesis_end = end - cfg.tail;
  std::string nemesis_error;
  std::thread chaos([&] {
    if (cfg.nemesis.types.empty()) return;  // a fault-free history
    try {
      n.run_until(nemesis_end);
    } catch (const std::exception& e) {
      nemesis_error = e.what();
    }
  });
  while (steady::now() < end) std::this_thread::sleep_for(20ms);
  n.stop();
  chaos.join();
  try {
    n.heal_all();
  } catch (const std::exception& e) {
    nemesis_error += std::string(nemesis_error.empty() ? "" : "; ") + e.what();
  }
  lap("workload and nemesis");
  auto workload_end = w.stop();
  lap("workload stopped");
  c.heal_all();
  out.faults_injected = n.injected();

  // Every client released (or gave up); wait for every TTL, including keys a
  // backward server clock step kept alive a little longer.
  bool back_jumps = std::find(cfg.nemesis.types.begin(), cfg.nemesis.types.end(),
                              fault_type::server_clock_back_jump) != cfg.nemesis.types.end();
  auto wait = cfg.workload.ttl_max * 105 / 100 + (back_jumps ? 1000ms : 0ms) + 200ms;
  std::this_thread::sleep_for(wait);
  if (cfg.residue) out.residue = check_residue(c.keys());
  lap("TTLs waited, residue checked");
  // The data-level verdict, from the storage alone.
  std::vector<violation> data;
  if (cfg.workload.data) {
    auto [host, port] = host_port(c.storage_uri());
    auto registers = read_registers(host, port);
    data = check_data(registers.logs, registers.counters, &out.data);
  }
  out.ops = h.snapshot();
  // A storage that fences itself: its table, with what each client was told.
  if (cfg.workload.storage) {
    std::vector<fenced_outcome> told;
    for (auto& o : out.ops)
      if (o.kind == op_kind::write && o.token && o.acquire_op)
        told.push_back({o.resource, section_id(o.client, *o.acquire_op), *o.token, o.result});
    data_figures f;
    auto found = check_fenced_data(cfg.workload.storage->read(), told, &f);
    data.insert(data.end(), found.begin(), found.end());
    out.data.add(f);
  }
  resolve_deadlines(out.ops, [&](int clock, time_point t) { return w.to_steady(clock, t); });
  check_config cc;
  cc.bounds = w.bounds();
  cc.resources = w.resources();
  cc.recovery_bound = cfg.recovery_bound;
  cc.workload_end = workload_end;
  cc.fencing = cfg.workload.fenced;
  // (h): the bound the library keeps (docs/algorithm.md, section 3): a
  // tenth of the TTL after the window's end, however the client's clock
  // ran (the watchdog looks every twentieth with an injected clock), plus
  // what a strand busy with a round's replies may add (the node timeout,
  // and lost_signal_slack under the sanitizers).
  cc.lost_slack_fraction = 0.1;
  cc.lost_slack_extra = cfg.workload.node_timeout + cfg.workload.lost_signal_slack;
  if (cfg.workload.kind == lock_kind::fair) cc.masters = cfg.cluster.masters;
  // (n): a link a fault left silent is given up a stall timeout after it
  // last heard, and reopened within a connect timeout.
  cc.fifo_aftermath = cfg.workload.stall_timeout + cfg.workload.connect_timeout();
  // (o): a waiter is woken (section 10) or retries within retry delay +
  // jitter + node timeout; plus what a loaded 2-core machine (and a
  // sanitized build) may add to the client's turn.
  // Sets have no wake list, semaphores and read-write locks other waiters.
  bool single_exclusive = cfg.workload.together_max < 2 && !cfg.workload.election &&
                          (cfg.workload.kind == lock_kind::mutex || cfg.workload.kind == lock_kind::reentrant ||
                           cfg.workload.kind == lock_kind::fair);
  if (single_exclusive) cc.wait = cfg.workload.wait;
  // Keys a fault left behind live up to the longest TTL (a second more
  // after a master clock stepped back); clients reconnect within a second.
  cc.wakeup_settle = cfg.workload.ttl_max + 2000ms;
  cc.wakeup_bound = cfg.workload.retry_delay + cfg.workload.retry_jitter + cfg.workload.node_timeout +
                    cfg.workload.wakeup_slack;
  out.report = check_all(out.ops, cc);
  for (auto& v : data) {
    out.report.by_checker[v.checker] += 1;
    out.report.violations.push_back(std::move(v));
  }
  if (w.died() > 0) {  // a worker that died stopped testing its resource: never a silent pass
    out.report.violations.push_back(
        {"workload", std::to_string(w.died()) + " worker(s) died (see \"worker ... died\" above)", {}});
    out.report.by_checker["workload"] += 1;
  }
  if (!nemesis_error.empty()) {  // the run itself broke: never a silent pass
    out.report.violations.push_back({"nemesis", "the nemesis failed: " + nemesis_error, {}});
    out.report.by_checker["nemesis"] += 1;
  }
  out.faults = fault_figures(out.ops);
  for (auto& [type, f] : out.faults) out.faults_acted += f.acted;
  lap("checked");
  out.seconds = std::chrono::duration<double>(steady::now() - t0).count();
  return out;
}

}  // namespace redlock::fault
