// SPDX-License-Identifier: Apache-2.0
// The nemesis: injects faults drawn from a seeded std::mt19937_64 into a
// cluster and a workload, each for a random duration, then heals them, and
// records every fault in the history (kind fault: invoke = injected,
// completion = healed). The fault schedule (types, targets, parameters,
// durations, quiet periods) is a function of the seed alone; the interleaving
// with the workload is not (real threads, real servers).
//
// run_round() is one whole history: servers, workload, nemesis, final heal,
// wait for the TTLs, and every checker.
//
// Where each part lives: nemesis.cpp (the driver: rounds of faults, heals),
// fault_types.cpp and nemesis_faults.cpp (the catalogue: each kind's name,
// safety, weight, targets, injection, heal and evidence that it acted),
// rounds.cpp (the round configurations), run_round.cpp, tally.cpp.
#pragma once

#include "checkers.hpp"
#include "cluster.hpp"
#include "history.hpp"
#include "register_check.hpp"
#include "workload.hpp"

#include <atomic>
#include <chrono>
#include <iosfwd>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace redlock::fault {

enum class fault_type {
  // process faults on masters
  sigstop,             ///< SIGSTOP, healed by SIGCONT
  kill9_aof_restart,   ///< kill -9, healed by a restart from the AOF (appendfsync always)
  delayed_restart,     ///< kill -9, restart EMPTY only after more than the max TTL; fence counters
                       ///< restored from the other masters before the proxy lets clients in again
  client_pause_write,  ///< CLIENT PAUSE <ms> WRITE, healed by CLIENT UNPAUSE
  // network faults (fault_proxy in front of the masters)
  latency,     ///< latency + jitter on both directions (sometimes beyond the node timeout)
  blackhole,   ///< one direction held, delivered late on heal
  reset,       ///< connections aborted with RST
  slicing,     ///< bytes written in small pieces (fragmentation, no delay)
  slow_link,   ///< small pieces with a delay between them: a slow link whose queue
               ///< outlives the fault (not in the safe set: see test_targeted.cpp)
  proxy_down,  ///< every live and new connection reset at once (a master that refuses)
  partition,   ///< both directions held for a minority or a majority of masters
  client_partition,  ///< per-client links cut (cluster_options::client_views): random halves of
                     ///< clients and masters, a bridge master that both halves reach, or a ring
                     ///< in which each client reaches a different run of masters
  // server clocks (clock shim)
  server_clock_fast_bounded,  ///< rate 1 + 0.9 * drift_factor for at least the longest TTL (within the allowance)
  server_clock_slow,          ///< rate 0.5 .. 0.95 (keys live longer)
  server_clock_back_jump,     ///< wall clock steps back 0.1 .. 1 s (never stepped forward again)
  // client clocks (injected drift_clock)
  client_clock_jump,          ///< forward jump 50 .. 2000 ms
  client_clock_fast,          ///< rate 1.5 .. 4
  client_clock_slow_bounded,  ///< rate 1 - 0.9 * drift_factor (never with a fast master clock)
  // client process
  holder_pause,  ///< a holder sleeps past its validity, then writes (stale write)
  // ---- KNOWN UNSAFE: outside the assumptions of docs/safety.md ----
  immediate_restart_wipe,     ///< kill -9 and restart at once with no data
  server_clock_fast,          ///< rate 10
  server_clock_forward_jump,  ///< wall clock steps forward 2 .. 5 s
  client_clock_slow,          ///< rate 0.5
};

const char* name(fault_type t);
bool is_safe(fault_type t);
/// The safe fault types usable with these servers and clients.
std::vector<fault_type> safe_fault_types(const cluster_options& c, const workload_options& w);

struct nemesis_options {
  std::uint64_t seed = 1;
  std::vector<fault_type> types;  ///< drawn at random (long or exclusive ones less often)
  std::chrono::milliseconds duration_min{30}, duration_max{500};
  double p_two = 0.35, p_three = 0.15;  ///< chance of 2 or 3 concurrent faults
  std::chrono::milliseconds quiet_min{10}, quiet_max{150};
  double p_long_quiet = 0.05;            ///< chance of a quiet period long enough for check (e)
  std::chrono::milliseconds long_quiet{3300};
  /// How often a type is drawn, against the others (default: 1, less for
  /// long, exclusive or blocking faults), where a round wants another mix.
  std::map<fault_type, double> weights;
};

struct fault_stats {
  std::size_t injected = 0;
  std::size_t acted = 0;  ///< seen to act (see nemesis::active::acted)
  double total_ms = 0;
  std::size_t acquisitions_during = 0;  ///< acquisitions that completed while it was active
};

class nemesis {
 public:
  nemesis(cluster& c, workload& w, history& h, nemesis_options o);
  ~nemesis();
  /// Blocking: injects and heals faults until `end` (or stop()); heals all.
  void run_until(time_point end);
  void stop() { stop_ = true; }

  /// Scripted use: injects one fault of type `t` on the given masters or
  /// client now, records it, and returns its index for heal().
  std::size_t inject(fault_type t, const std::vector<std::size_t>& masters, int client = -1);
  void heal(std::size_t index);
  void heal_all();
  std::size_t injected() const { return injected_; }

 private:
  struct active;
  std::size_t apply(fault_type t, std::vector<std::size_t> masters, int client);
  bool pick_and_apply(fault_type t);
  fault_type draw_type();
  std::vector<std::size_t> free_masters() const;
  std::vector<std::size_t> pick(std::vector<std::size_t> from, std::size_t n);
  void sleep_until(time_point t);
  template <typename T>
  T uniform(T lo, T hi);

  cluster& cluster_;
  workload& workload_;
  history& history_;
  nemesis_options options_;
  std::mt19937_64 rng_;
  std::vector<active> active_;
  std::atomic<bool> stop_{false};
  std::size_t injected_ = 0;
  time_point fast_master_clear_{}, slow_client_clear_{};  ///< see heal()
};

// ---- one whole history ------------------------------------------------------
struct round_config {
  std::uint64_t seed = 1;
  std::chrono::milliseconds duration{30000};  ///< workload run time, tail included
  std::chrono::milliseconds tail{3600};       ///< fault-free time at the end
  cluster_options cluster;
  workload_options workload;
  nemesis_options nemesis;
  std::chrono::milliseconds recovery_bound{3000};
  bool residue = true;  ///< run check (f) at the end
};

/// The configuration of a safe nemesis run for `seed`: N = 3 or 5 (by seed),
/// AOF masters under the clock shim behind fault proxies, 4 clients x 5
/// resources, every safe fault type.
round_config safe_round(std::uint64_t seed, std::chrono::milliseconds duration);
/// The same with every resource a semaphore (workload_options::permits 2 or
/// 3, by seed) and permits + 2 clients.
round_config semaphore_round(std::uint64_t seed, std::chrono::milliseconds duration);
/// Read-write locks: 5 clients x 3 resources, each acquisition a read (70%)
/// or a write; res2 held as renewed or extended leases.
round_config read_write_round(std::uint64_t seed, std::chrono::milliseconds duration);
/// Several names held together: 4 clients x a pool of 5 names, each
/// acquisition a mutex over 2 or 3 of them (overlapping sets).
round_config together_round(std::uint64_t seed, std::chrono::milliseconds duration);
/// Fair locks (queue timeout 250 ms; some seeds unfenced, some with two
/// queue timeouts in one line), judged also by (n), no overtaking.
round_config fair_round(std::uint64_t seed, std::chrono::milliseconds duration);
/// Reentrant locks, sections re-entering their hold (reentry_p 0.4).
round_config reentrant_round(std::uint64_t seed, std::chrono::milliseconds duration);
/// Leader election: 4 clients campaigning for each of 2 names (wait 1 s),
/// leading as a renewed lease for 1.2 .. 3 TTLs (some capped by max_hold),
/// then resigning.
round_config election_round(std::uint64_t seed, std::chrono::milliseconds duration);
/// The sections' writes go to `storage` (fenced_storage.hpp: PostgreSQL),
/// each a read-modify-write in a transaction fenced with the holder's token,
/// under every safe fault on the masters; mutexes as in safe_round (4
/// clients x 10 resources, three as leases), holder pauses (the stale
/// writes fencing is for) drawn ten times as often as in the other rounds.
/// The data verdict reads the storage's table (check_fenced_data).
round_config postgres_round(std::uint64_t seed, std::chrono::milliseconds duration,
                            std::shared_ptr<fenced_storage> storage);
/// A short history with only fault type `t` (shorter TTLs, N = 3) injected
/// for `nemesis_time`, then a fault-free tail: one targeted test per type.
round_config quick_round(std::uint64_t seed, fault_type t, std::chrono::milliseconds nemesis_time);

struct round_result {
  std::uint64_t seed = 0;
  check_report report;
  std::vector<violation> residue;
  std::map<std::string, fault_stats> faults;  ///< by fault type
  std::size_t faults_injected = 0;
  std::size_t faults_acted = 0;  ///< the faults seen to act
  data_figures data;             ///< the data-level verdict's figures (check_data)
  std::vector<op> ops;
  double seconds = 0;
  std::size_t violations() const { return report.violations.size() + residue.size(); }
};

round_result run_round(const round_config& config);

/// Fault statistics by type from a history.
std::map<std::string, fault_stats> fault_figures(const std::vector<op>& ops);

/// Totals over many histories, for the summary line
/// "fault suite: H histories, A acquisitions checked, F faults injected, V violations (S safety, L liveness)":
/// A counts acquisitions with a validity window (judged by the exclusion
/// checker), F only faults seen to act.
struct tally {
  std::size_t histories = 0, acquisitions = 0, faults = 0, violations = 0, safety = 0, liveness = 0;
  std::size_t faults_injected = 0;
  std::size_t leases = 0, renewals = 0, renewals_failed = 0, renewals_under_faults = 0, extends = 0,
              extends_failed = 0, extends_under_faults = 0, lost_signals = 0, lease_repairs = 0, probes_judged = 0,
              probes_undecided = 0;
  std::size_t attempts = 0, writes_accepted = 0, writes_rejected = 0, recovery_periods = 0, semaphore_full = 0, reads_shared = 0,
              fifo_pairs = 0, reentries = 0, leaders = 0, failovers = 0, wakeups = 0;
  std::map<std::string, fault_stats> by_type;
  std::map<std::string, std::size_t> by_checker;
  data_figures data;
  void add(const round_result& r);
  /// The figures by fault type, then the summary line (last).
  void print(std::ostream& os) const;
  /// As "name value" lines, and back (read adds to what this holds): the
  /// figures of several runs summed (fault_floors).
  void write(std::ostream& os) const;
  void read(std::istream& is);
};

/// Prints the violations of `r` (at most `limit`), the seed and how to
/// reproduce, and writes the whole history to a file whose path it prints.
void report_failure(std::ostream& os, const round_result& r, const std::string& reproduce, std::size_t limit = 20);

}  // namespace redlock::fault
