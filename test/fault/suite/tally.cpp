// SPDX-License-Identifier: Apache-2.0
// Totals over many histories, and the report of a failed one.
#include "nemesis.hpp"

#include <fstream>
#include <iomanip>
#include <istream>
#include <ostream>
#include <unistd.h>

namespace redlock::fault {

void tally::add(const round_result& r) {
  ++histories;
  acquisitions += r.report.acquisitions;
  attempts += r.report.attempts;
  writes_accepted += r.report.writes_accepted;
  writes_rejected += r.report.writes_rejected;
  recovery_periods += r.report.recovery_periods;
  semaphore_full += r.report.semaphore_full;
  reads_shared += r.report.reads_shared;
  fifo_pairs += r.report.fifo_pairs;
  reentries += r.report.reentries;
  wakeups += r.report.wakeups;
  leaders += r.report.leaders;
  failovers += r.report.failovers;
  faults += r.faults_acted;
  faults_injected += r.faults_injected;
  data.add(r.data);
  violations += r.violations();
  for (auto& [k, v] : r.report.by_checker) by_checker[k] += v;
  if (!r.residue.empty()) by_checker["residue"] += r.residue.size();
  for (auto& [k, v] : r.report.by_checker) (is_safety_checker(k) ? safety : liveness) += v;
  liveness += r.residue.size();
  leases += r.report.leases;
  renewals += r.report.renewals;
  renewals_failed += r.report.renewals_failed;
  renewals_under_faults += r.report.renewals_under_faults;
  extends += r.report.extends;
  extends_failed += r.report.extends_failed;
  extends_under_faults += r.report.extends_under_faults;
  lost_signals += r.report.lost_signals;
  lease_repairs += r.report.lease_repairs;
  probes_judged += r.report.probes_judged;
  probes_undecided += r.report.probes_undecided;
  for (auto& [k, s] : r.faults) {
    auto& t = by_type[k];
    t.injected += s.injected;
    t.acted += s.acted;
    t.total_ms += s.total_ms;
    t.acquisitions_during += s.acquisitions_during;
  }
}

void tally::print(std::ostream& os) const {
  os << "fault figures by type (injected, seen to act, total active time, acquisitions completed while active):\n";
  for (auto& [k, s] : by_type)
    os << "  " << std::left << std::setw(34) << k << std::right << std::setw(6) << s.injected << " x "
       << std::setw(6) << s.acted << " acted  "
       << std::setw(9) << std::fixed << std::setprecision(1) << s.total_ms / 1000.0 << " s  " << std::setw(7)
       << s.acquisitions_during << " acquisitions\n";
  os << "  attempts " << attempts << ", writes accepted " << writes_accepted << ", stale writes rejected "
     << writes_rejected << ", recovery periods judged " << recovery_periods << "\n";
  if (semaphore_full > 0)
    os << "  semaphore windows begun with every other permit held (the semaphore full): " << semaphore_full << "\n";
  if (reads_shared > 0) os << "  read windows begun while another read was held (reads shared): " << reads_shared << "\n";
  if (fifo_pairs > 0) os << "  fair waiters whose grant order was judged (no overtaking once queued): " << fifo_pairs << "\n";
  if (reentries > 0) os << "  re-entries granted: " << reentries << "\n";
  if (wakeups > 0) os << "  releases with a waiter, the lock taken again within the wake-up bound: " << wakeups << "\n";
  if (leaders > 0) os << "  leaders " << leaders << ", of which after another client's term (failovers) " << failovers << "\n";
  if (leases > 0)
    os << "  leases " << leases << ": renewals " << renewals << " (" << renewals_under_faults << " under faults, "
       << renewals_failed << " failed), extends " << extends << " (" << extends_under_faults << " under faults, "
       << extends_failed << " failed), lost signals " << lost_signals << ", lease repairs " << lease_repairs << ", master probes judged " << probes_judged << " (undecided " << probes_undecided << ")"
       << "\n";
  if (data.sections + data.late + data.abandoned > 0)
    os << "  data (from the storage alone): " << data.sections << " sections judged (" << data.writes
       << " written back, " << data.reads << " reads), " << data.lost_updates << " lost updates, " << data.overlaps
       << " overlaps (" << std::setprecision(1) << data.exposure_ms << " ms exposure); not judged: " << data.late
       << " past the deadline, " << data.abandoned << " abandoned, " << data.unfinished << " unfinished, "
       << data.unjudged_overlaps << " overlaps with those; reads shared " << data.reads_shared
       << ", semaphore full " << data.full << "; fenced storage: " << data.refused
       << " stale writes refused and absent from it\n";
  if (!by_checker.empty()) {
    os << "  violations by checker:";
    for (auto& [k, v] : by_checker) os << " " << k << "=" << v;
    os << "\n";
  }
  if (faults_injected != faults)
    os << "  faults injected " << faults_injected << ", of which seen to act " << faults << " (only these count)\n";
  os << "fault suite: " << histories << " histories, " << acquisitions << " acquisitions checked, "
     << data.sections << " data-checked sections, " << faults << " faults injected, " << violations << " violations (" << safety << " safety, " << liveness << " liveness)"
     << std::endl;
}

namespace {

// Every count of a tally by name, for write() and read().
template <typename T, typename F>
void each_count(T& t, F&& f) {
  f("histories", t.histories);
  f("acquisitions", t.acquisitions);
  f("faults", t.faults);
  f("faults_injected", t.faults_injected);
  f("violations", t.violations);
  f("safety", t.safety);
  f("liveness", t.liveness);
  f("leases", t.leases);
  f("renewals", t.renewals);
  f("renewals_failed", t.renewals_failed);
  f("renewals_under_faults", t.renewals_under_faults);
  f("extends", t.extends);
  f("extends_failed", t.extends_failed);
  f("extends_under_faults", t.extends_under_faults);
  f("lost_signals", t.lost_signals);
  f("lease_repairs", t.lease_repairs);
  f("probes_judged", t.probes_judged);
  f("probes_undecided", t.probes_undecided);
  f("attempts", t.attempts);
  f("writes_accepted", t.writes_accepted);
  f("writes_rejected", t.writes_rejected);
  f("recovery_periods", t.recovery_periods);
  f("semaphore_full", t.semaphore_full);
  f("reads_shared", t.reads_shared);
  f("fifo_pairs", t.fifo_pairs);
  f("reentries", t.reentries);
  f("leaders", t.leaders);
  f("failovers", t.failovers);
  f("wakeups", t.wakeups);
  f("data.sections", t.data.sections);
  f("data.writes", t.data.writes);
  f("data.reads", t.data.reads);
  f("data.late", t.data.late);
  f("data.abandoned", t.data.abandoned);
  f("data.unfinished", t.data.unfinished);
  f("data.lost_updates", t.data.lost_updates);
  f("data.overlaps", t.data.overlaps);
  f("data.unjudged_overlaps", t.data.unjudged_overlaps);
  f("data.reads_shared", t.data.reads_shared);
  f("data.full", t.data.full);
  f("data.refused", t.data.refused);
}

}  // namespace

void tally::write(std::ostream& os) const {
  each_count(*this, [&](const char* name, const std::size_t& v) { os << name << " " << v << "\n"; });
  os << "data.exposure_ms " << data.exposure_ms << "\n";
  for (auto& [k, s] : by_type)
    os << "type " << k << " " << s.injected << " " << s.acted << " " << s.total_ms << " " << s.acquisitions_during
       << "\n";
  for (auto& [k, v] : by_checker) os << "checker " << k << " " << v << "\n";
}

void tally::read(std::istream& is) {
  std::map<std::string, std::size_t*> counts;
  each_count(*this, [&](const char* name, std::size_t& v) { counts[name] = &v; });
  for (std::string name; is >> name;) {
    if (name == "type") {
      std::string k;
      fault_stats s;
      is >> k >> s.injected >> s.acted >> s.total_ms >> s.acquisitions_during;
      auto& t = by_type[k];
      t.injected += s.injected;
      t.acted += s.acted;
      t.total_ms += s.total_ms;
      t.acquisitions_during += s.acquisitions_during;
    } else if (name == "checker") {
      std::string k;
      std::size_t v = 0;
      is >> k >> v;
      by_checker[k] += v;
    } else if (name == "data.exposure_ms") {
      double v = 0;
      is >> v;
      data.exposure_ms += v;
    } else {
      std::size_t v = 0;
      is >> v;
      if (auto it = counts.find(name); it != counts.end()) *it->second += v;
    }
  }
}

void report_failure(std::ostream& os, const round_result& r, const std::string& reproduce, std::size_t limit) {
  os << "FAULT SUITE FAILURE: seed " << r.seed << ", " << r.violations() << " violations\n";
  std::size_t shown = 0;
  for (auto* list : {&r.report.violations, &r.residue})
    for (auto& v : *list)
      if (shown++ < limit) os << "  " << v << "\n";
  std::string path = "/tmp/redlock-fault-seed" + std::to_string(r.seed) + "-" + std::to_string(::getpid()) + ".history";
  std::ofstream f(path);
  dump(f, r.ops);
  os << "  history: " << path << "\n";
  os << "  reproduce: " << reproduce << std::endl;
}

}  // namespace redlock::fault
