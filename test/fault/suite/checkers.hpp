// SPDX-License-Identifier: Apache-2.0
// Invariant checkers over a history (history.hpp). Pure functions: each takes
// the recorded operations (and, for the residue check, a snapshot of the keys
// left on the masters) and returns the violations it found, each naming the
// operations involved. A correct library in a safe configuration produces none.
//
//   (a) check_exclusion      no two holders of a resource have overlapping
//                            validity windows [acquire completion ..
//                            min(valid_until, release invoke)]
//   (b) check_fence_order    fencing tokens strictly increase in acquisition
//                            order (by acquire completion) per resource
//   (c) check_stale_writes   a write whose token is lower than one already
//                            accepted is rejected; a rejection is justified by
//                            a higher token accepted (or possibly accepted) before
//   (d) check_bounded        every operation completed, within its bound
//   (e) check_recovery       after all faults healed, every resource is
//                            acquired again within a bound
//   (f) check_residue        no lock key is left on any master once every
//                            client released and the TTLs passed
//   (j) check_permits        semaphores: at no instant do more windows of
//                            one semaphore overlap than it has permits.
//                            Its permit slots are locks of their own
//                            (held_lock): (a), (b), (c) and (i) judge each
//                            slot, so no two holders of one slot overlap and
//                            each slot's tokens increase
//   (k) check_epochs         leader election: each leader's epoch exceeds
//                            every earlier leader's (by window begin) per
//                            election name; (a) keeps two leaders apart
// Read-write locks: (a) lets read windows overlap each other, never a write
// window; (b) orders the writers' tokens only (a reader's token says
// nothing about other readers). Names held together: each name gets the
// set's window and its own token (op::names, op::fences), so (a), (b), (i)
// and (e) judge every name as a lock of its own.
#pragma once

#include "history.hpp"

#include <chrono>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace redlock::fault {

struct violation {
  std::string checker;            ///< "exclusion", "fence-order", ...
  std::string message;            ///< what is wrong, with times and tokens
  std::vector<std::size_t> ops;   ///< ids of the operations involved
};
std::ostream& operator<<(std::ostream& os, const violation& v);

/// A validity window of one successful acquisition (empty windows, e.g. an
/// acquisition whose handler ran after its deadline, are never produced).
struct window {
  std::size_t acquire = 0;  ///< op id
  int client = -1;
  std::string resource;
  time_point begin{}, end{};
  std::optional<std::uint64_t> fence;
  unsigned permits = 0;            ///< semaphores (op::permits)
  std::optional<unsigned> permit;  ///< the slot held (op::permit)
  bool shared = false;             ///< a read hold (op::shared)
  bool leader = false;             ///< a leader's term (op::leader)
  std::size_t hold = 0;            ///< the acquisition that took the hold: `acquire`, or the one it re-entered
};
/// The non-empty windows of every successful acquisition, per lock held
/// (held_locks(): the resource, a semaphore's permit slot, or each of the
/// names held together, with that name's token), sorted by
/// begin. Acquisitions without a valid_until are skipped, and so are
/// semaphore holders without a slot (they exclude nobody).
std::map<std::string, std::vector<window>> windows_of(const std::vector<op>& ops);
/// The windows of every semaphore holder (op::permits > 0), slot or not,
/// per resource, sorted by begin.
std::map<std::string, std::vector<window>> semaphore_windows(const std::vector<op>& ops);

// (a)
std::vector<violation> check_exclusion(const std::vector<op>& ops);
// (b)
std::vector<violation> check_fence_order(const std::vector<op>& ops);
// (c)
std::vector<violation> check_stale_writes(const std::vector<op>& ops);
// (j) At most `permits` holders at any instant (the smallest number of
// permits the semaphore's holders were given, should they differ).
// `full` (optional) receives how many windows began with every other
// permit held: the semaphore full, so (j) had something to judge.
std::vector<violation> check_permits(const std::vector<op>& ops, std::size_t* full = nullptr);

// (k) Per election name, in order of window begin, each leader's epoch
// (op::fence of a leader window) must exceed every earlier leader's.
std::vector<violation> check_epochs(const std::vector<op>& ops);

// (d)
struct op_bounds {
  std::chrono::milliseconds acquire{2000};
  std::chrono::milliseconds release{1000};
  std::chrono::milliseconds write{2000};
};
std::vector<violation> check_bounded(const std::vector<op>& ops, const op_bounds& bounds);

// (e) For every fault-free period that starts when the last active fault is
// healed and lasts at least `bound` (before the next fault and before
// `workload_end`), each resource in `resources` must see a successful
// acquisition complete within `bound` of the heal. A fault that was never
// healed is a violation. `periods_checked` (optional) receives how many heal
// points were judged.
std::vector<violation> check_recovery(const std::vector<op>& ops, const std::vector<std::string>& resources,
                                      std::chrono::milliseconds bound, time_point workload_end,
                                      std::size_t* periods_checked = nullptr);

// ---- leases (renewed and extended locks) ------------------------------------
// (g) At each probe taken while the holder still believed it held the lock
//     (probe completed before the deadline it believed in), a quorum of
//     masters must still hold it for us until at least that deadline, or may
//     (unreadable). Fewer: a request of ours left the masters expiring
//     before the window the client believes in (a shortened key).
std::vector<violation> check_lease_expiry(const std::vector<op>& ops);
// (h) A renewed lock whose holder saw its validity run out gets its lost
//     signal no later than `slack_fraction` of its TTL (op::ttl) plus
//     `slack_extra` after the end of its last window.
std::vector<violation> check_lost_signal(const std::vector<op>& ops, double slack_fraction,
                                         std::chrono::milliseconds slack_extra = std::chrono::milliseconds(0));
// (i) A release that reports success was invoked before any other holder's
//     window on that resource began (after this holder's began).
std::vector<violation> check_release_after_takeover(const std::vector<op>& ops);
// (l) A lease's window, once ended, stays ended: a look that finds a live
//     deadline after the previous one had passed (a window revived between
//     two looks) is a violation, unless a renewal or extend of this hold
//     completed before that deadline (the move was only seen late).
std::vector<violation> check_revival(const std::vector<op>& ops);
// (n) Fair locks, no overtaking once queued: a fair acquisition B that
//     was asked for after A (so its enqueue score is higher) must not be
//     granted while A, queued by then (`settle` after A was asked for), is
//     still waiting and later wins. Judged only over periods in which the
//     faults, each counted until `aftermath` after it ended (a link it left
//     silent is noticed and reopened only then), hit at most N - Q masters
//     and no client's links (A's place in line stays on a quorum); `judged`
//     receives how many pairs were.
std::vector<violation> check_fifo(const std::vector<op>& ops, std::size_t masters, std::chrono::milliseconds settle,
                                  std::chrono::milliseconds aftermath, std::size_t* judged = nullptr);
// (o) Wake-up latency: after a release that succeeded, with another
//     client waiting for that lock (and still willing to wait `bound`
//     more), some acquisition of it completes within `bound` (retry delay
//     + jitter + node timeout + scheduling slack). Judged only when no
//     fault was active from `settle` before the release (keys a fault left
//     behind must have expired, clients reconnected) to the bound, with at most two clients contending
//     (more may split the votes: no liveness under contention), and for single-name
//     mutex, reentrant and fair holds without re-entries; `judged` receives
//     how many releases were.
std::vector<violation> check_wakeup(const std::vector<op>& ops, std::chrono::milliseconds wait,
                                    std::chrono::milliseconds bound, std::chrono::milliseconds settle,
                                    std::size_t* judged = nullptr);
// (m) Names held together: every name asked for is held, with a token
//     when fenced (op::names_unheld lists those that were not).
std::vector<violation> check_names(const std::vector<op>& ops);

/// Safety checkers find what must never happen (two holders, a token out of
/// order, a stale write accepted, a lease the masters no longer back, a
/// late lost signal, a release that succeeded over another holder);
/// liveness checkers (bounded, recovery, residue, a broken run) find what
/// should happen and did not.
bool is_safety_checker(const std::string& checker);

// (f)
struct key_state {
  std::string master;  ///< which master (URI or index)
  std::string key;
  long long pttl = -2;  ///< as PTTL: -1 no expiry, -2 gone
};
/// True for the keys that may legitimately outlive every lock: the fencing
/// counters "{R}:fence" (permanent by design, docs/fencing.md).
bool is_permanent_key(const std::string& key);
std::vector<violation> check_residue(const std::vector<key_state>& keys);

// ---- everything at once ---------------------------------------------------
struct check_config {
  op_bounds bounds;
  std::vector<std::string> resources;
  std::chrono::milliseconds recovery_bound{3000};
  time_point workload_end{};
  bool fencing = true;   ///< run (b) and (c)
  bool recovery = true;  ///< run (e)
  double lost_slack_fraction = 0.1;                ///< (h): of each lease's TTL ...
  std::chrono::milliseconds lost_slack_extra{0};    ///< ... plus this
  std::size_t masters = 0;                   ///< N, for (n); 0: (n) not run
  std::chrono::milliseconds fifo_settle{200};  ///< (n)
  std::chrono::milliseconds fifo_aftermath{0};  ///< (n): the clients' stall timeout + connect timeout
  std::chrono::milliseconds wait{0};         ///< (o): the acquisitions' wait; 0: (o) not run
  std::chrono::milliseconds wakeup_bound{0};  ///< (o)
  std::chrono::milliseconds wakeup_settle{2500};  ///< (o)
};

struct check_report {
  std::vector<violation> violations;
  std::size_t acquisitions = 0;      ///< acquisitions with a validity window, judged by (a) or (j)
  std::size_t attempts = 0;          ///< acquisition operations of any outcome
  std::size_t writes_accepted = 0, writes_rejected = 0;
  std::size_t recovery_periods = 0;
  std::size_t leases = 0, renewals = 0, renewals_failed = 0, extends = 0, extends_failed = 0, lost_signals = 0;
  std::size_t lease_repairs = 0;  ///< renewals or extends that set a mutex key again on masters that lost it
  /// Completed while a fault that acted was active on the holder's masters
  /// (or on the holder itself, for a client fault).
  std::size_t renewals_under_faults = 0, extends_under_faults = 0;
  std::size_t probes_judged = 0;     ///< probes (g) decided: a quorum read backing the window, or too few that could
  std::size_t probes_undecided = 0;  ///< too few backing, but enough unreadable that they might
  std::size_t semaphore_full = 0;  ///< semaphore windows that began with every other permit held (j)
  std::size_t reads_shared = 0;    ///< read windows that began while another read window was open (a)
  std::size_t fifo_pairs = 0;      ///< pairs of fair waiters whose order (n) judged
  std::size_t reentries = 0;       ///< re-entries granted (op::reentry_of)
  std::size_t wakeups = 0;         ///< releases with a waiter that (o) judged
  std::size_t leaders = 0, failovers = 0;  ///< election terms, and terms that followed another client's
  std::map<std::string, std::size_t> by_checker;  ///< violations per checker
  std::map<std::string, double> max_ms;           ///< longest completed operation, by kind
};
/// Runs (a)-(e) and (g)-(j) over `ops` (deadlines already resolved); (f) is separate
/// because it reads the masters.
check_report check_all(const std::vector<op>& ops, const check_config& config);

}  // namespace redlock::fault
