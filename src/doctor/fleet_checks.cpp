// SPDX-License-Identifier: Apache-2.0
#include "doctor/fleet_checks.hpp"

#include "doctor/prober.hpp"
#include "quorum/validity.hpp"

namespace redlock::detail {

using std::chrono::microseconds;

void check_node_count(const client_options& client, doctor_report& report) {
  auto n = client.nodes.size();
  if (n >= 3) return;
  report.findings.push_back(
      {severity::error, "node_count", "",
       std::to_string(n) + " master(s), quorum " + std::to_string(detail::quorum_of(n)) +
           ": the lock survives no master's failure; use at least 3 independent masters (5 survive two failures)"});
}

void check_same_servers(doctor_report& report) {
  for (std::size_t a = 0; a < report.nodes.size(); ++a)
    for (std::size_t b = a + 1; b < report.nodes.size(); ++b) {
      auto& x = report.nodes[a];
      auto& y = report.nodes[b];
      if (x.run_id.empty() || x.run_id != y.run_id) continue;
      report.findings.push_back({severity::error, "same_server", y.node,
                                 "is the same server as " + x.node + " (run_id " + x.run_id +
                                     "): it would count twice towards the quorum; list each master once"});
    }
}

void check_clock_skew(const client_options& client, const doctor_options& options, doctor_report& report) {
  auto allowance = detail::drift_allowance(options.ttl, client.drift_factor);
  microseconds worst{0};
  std::size_t worst_a = 0, worst_b = 0;
  for (std::size_t a = 0; a < report.nodes.size(); ++a)
    for (std::size_t b = a + 1; b < report.nodes.size(); ++b) {
      auto& x = report.nodes[a];
      auto& y = report.nodes[b];
      if (!x.clock_offset || !y.clock_offset) continue;
      // Only what the round trips cannot explain.
      auto skew = std::chrono::abs(*x.clock_offset - *y.clock_offset) - x.clock_uncertainty - y.clock_uncertainty;
      if (skew > worst) {
        worst = skew;
        worst_a = a;
        worst_b = b;
      }
    }
  if (worst <= allowance) return;
  report.findings.push_back(
      {severity::warning, "clock_skew", "",
       "the masters' clocks differ by at least " + ms_text(worst) + " (" + report.nodes[worst_a].node + " and " +
           report.nodes[worst_b].node + "), more than the drift allowance of " + ms_text(allowance) + " for a TTL of " +
           std::to_string(options.ttl.count()) +
           " ms: their clocks are not kept in step; run NTP (e.g. chrony, slewing, not stepping) on every master, "
           "since Redis expires keys by its wall clock"});
}

void check_round_trip(const client_options& client, const doctor_options& options, doctor_report& report) {
  if (client.node_timeout * 10 <= options.ttl) return;
  report.findings.push_back({severity::warning, "round_trip", "",
                             "the node timeout (" + std::to_string(client.node_timeout.count()) +
                                 " ms) is more than a tenth of the TTL (" + std::to_string(options.ttl.count()) +
                                 " ms): an acquisition that waits for a slow master uses up much of the lease"});
}

}  // namespace redlock::detail
