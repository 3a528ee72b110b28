// SPDX-License-Identifier: Apache-2.0
// The history model of the fault-injection suite: every operation a client or
// the nemesis performed, with its invoke and completion times on ONE clock
// (std::chrono::steady_clock of the test process) and its outcome. Pure data
// plus a thread-safe recorder; the checkers (checkers.hpp) read it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace redlock::fault {

using steady = std::chrono::steady_clock;
using time_point = steady::time_point;

enum class op_kind : std::uint8_t {
  acquire,  ///< a (fenced) acquisition
  release,  ///< a release of a lock this client acquired
  write,    ///< a fenced_store write with the acquisition's token
  fault,    ///< a nemesis fault: invoke = injected, completion = healed
  extend,   ///< an explicit extend of a held lock (detail: the ttl asked)
  lost,     ///< a renewed lock's lost signal (invoke = completion = when it ran)
  probe,    ///< the masters read directly (not through the proxies) while a lease is held
  renewal,  ///< a watchdog renewal as the client's observer reported it (invoke = completion)
  section,  ///< a data section on the storage (storage_register.hpp): begin .. write-back; ok
            ///< (written back or read in the window), fail (too late), unknown (abandoned)
  /// A round moved a hold's window, as the client's observer reported it
  /// (an extend span with no error: an extend, a renewal, or a fair
  /// hand-over's confirmation, whose window move no other op shows)
  window_moved,
  /// A renewal or extend that won a quorum set a mutex's key again on masters
  /// that had lost it (docs/algorithm.md, "Repair"; detail: how many)
  lease_repaired,
};

/// One master as a probe read it: the lock still ours there, and until when.
struct master_view {
  enum class state : std::uint8_t { ours, not_ours, unreadable } is = state::unreadable;
  time_point expires{};  ///< ours: reply time + PTTL (an upper bound of the expiry)
};

enum class outcome : std::uint8_t {
  ok,       ///< acquired / released / write accepted / fault healed
  fail,     ///< refused (not acquired, not held, write rejected as stale)
  unknown,  ///< no answer in time (timeout, lost connection, guard expired)
};

struct op {
  std::size_t id = 0;       ///< position in the history (set by the recorder)
  int client = -1;          ///< client id; -1 for the nemesis
  std::string resource;     ///< lock name (faults: the fault type)
  op_kind kind = op_kind::acquire;
  time_point invoke{};
  std::optional<time_point> completion;  ///< nullopt: never completed (a hang)
  outcome result = outcome::unknown;
  std::string detail;       ///< error text, fault targets, ...

  // ---- acquisitions (result == ok) ----
  /// End of the validity window converted to the test's steady clock
  /// (lock::valid_until() itself when the client used the steady clock).
  std::optional<time_point> valid_until;
  /// lock::valid_until() as the client's clock reads it, and which injected
  /// clock that is (-1: the steady clock); resolve_deadlines() converts.
  std::optional<time_point> valid_until_client;
  int clock = -1;
  std::optional<std::uint64_t> fence;  ///< fencing token

  /// Leases (renewed or extended locks): what the holder believed as it
  /// held: (steady time of the look, lock::valid_until() on the client's
  /// clock then), in order. resolve_deadlines() turns them into valid_until:
  /// the end of the time the holder went on believing it held the lock.
  std::vector<std::pair<time_point, time_point>> beliefs;
  bool renewed = false;  ///< acquired with renew = true
  std::chrono::milliseconds ttl{0};  ///< the TTL asked for (lost-signal slack: a tenth of it)

  /// Semaphores: how many may hold `resource` at once (0: not a semaphore),
  /// and the permit slot this holder has. A slot excludes like a lock of its
  /// own (held_lock()); a holder without a slot (a semaphore built without
  /// slots, e.g. per-master counters) only counts against `permits`.
  unsigned permits = 0;
  std::optional<unsigned> permit;

  /// Read-write locks: a read hold (lock_kind::read), which shares the name
  /// with other reads and never with a write; a write hold excludes all.
  bool shared = false;
  /// Several names held together (acquire_options::other_names): every name
  /// held (lock::names(), `resource` among them) and, fenced, each name's
  /// token (lock::fences(), in that order). Each name gets a window of its
  /// own, the set's window, judged like a lock of its own.
  std::vector<std::string> names;  ///< as asked for (acquire_options::other_names, with `resource`)
  std::vector<std::uint64_t> fences;
  /// Names asked for that the lock does not hold (not in lock::names(), or,
  /// fenced, without a token in lock::fences()): check_names.
  std::vector<std::string> names_unheld;
  /// Reentrant and fair locks: a re-entry of the hold acquisition
  /// `reentry_of` took (the same hold, one more level, its own release):
  /// never judged against that hold, which it is.
  std::optional<std::size_t> reentry_of;
  /// Leader election: a leader's term (campaign .. resign); `fence` is the
  /// epoch, judged by check_epochs instead of check_fence_order.
  bool leader = false;
  /// A fair lock's acquisition (check_fifo: no overtaking once queued).
  bool fair = false;

  // ---- releases, writes, extends, lost signals, probes ----
  std::optional<std::size_t> acquire_op;  ///< the acquisition this op belongs to
  std::optional<std::uint64_t> token;     ///< write: the token sent

  // ---- faults ----
  /// Seen to act on traffic or state a client depended on (nemesis_faults.cpp: a
  /// request delayed, withheld or cut while pending, an expiry moved, a
  /// window counted on a changed clock, a stale write attempted).
  bool acted = false;
  std::vector<std::size_t> fault_masters;  ///< the masters it hit (none: a client fault)
  int fault_client = -1;                   ///< the client it hit (-1: every client)

  // ---- probes ----
  std::vector<master_view> masters;
  std::size_t quorum = 0;
};

/// Thread-safe, append-only record of one run.
class history {
 public:
  /// Appends `o` (its id is overwritten) and returns its id.
  std::size_t invoke(op o);
  /// Sets completion time and outcome of op `id`.
  void complete(std::size_t id, time_point at, outcome r, std::string detail = {});
  /// Any other change to op `id`, under the lock.
  template <typename F>
  void update(std::size_t id, F&& f) {
    std::lock_guard g(mutex_);
    f(ops_.at(id));
  }
  std::vector<op> snapshot() const;
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::vector<op> ops_;
};

/// The name under which permit slot `permit` of semaphore `resource` is
/// judged like a lock of its own (and written to storage: a slot's fencing
/// tokens are its own).
std::string slot_name(const std::string& resource, unsigned permit);
/// What acquisition `a` holds exclusively: its resource, or its permit slot.
std::string held_lock(const op& a);
/// Every lock acquisition `a` holds: its names held together, or held_lock(a).
std::vector<std::string> held_locks(const op& a);

const char* to_string(op_kind k);
const char* to_string(outcome r);
/// One line describing `o`, times in ms relative to `origin`.
std::string describe(const op& o, time_point origin);
std::ostream& operator<<(std::ostream& os, const op& o);  // origin: steady epoch
/// The earliest invoke time in `ops` (the origin for printing).
time_point origin_of(const std::vector<op>& ops);

/// Milliseconds of `t` relative to `origin`, for printing.
double ms_since(time_point origin, time_point t);

/// The end of a holder's belief, from its looks (steady time of the look,
/// deadline it saw, both on the steady clock): each look vouches for the time
/// up to the next look or its deadline, whichever is earlier; the belief ends
/// at the first gap (a deadline passed before the next look) or after the last.
time_point belief_end(const std::vector<std::pair<time_point, time_point>>& looks);

/// Converts valid_until_client to valid_until for every acquisition that has
/// one: `to_steady(clock, t)` maps a reading `t` of injected clock `clock` to
/// the first steady time at which that clock showed `t` (or later).
/// For leases, the deadlines of the beliefs are converted too, and
/// valid_until becomes the end of the holder's belief (see belief_end).
template <typename F>
void resolve_deadlines(std::vector<op>& ops, F&& to_steady) {
  auto steady_of = [&](const op& o, time_point reading) { return o.clock < 0 ? reading : to_steady(o.clock, reading); };
  for (auto& o : ops) {
    if (o.valid_until_client) o.valid_until = steady_of(o, *o.valid_until_client);
    if (!o.beliefs.empty()) {  // deadlines converted in place: from here on all steady
      for (auto& [at, reading] : o.beliefs) reading = steady_of(o, reading);
      o.valid_until = belief_end(o.beliefs);
    }
  }
}

/// Writes the history as text, one op per line, times relative to origin_of().
void dump(std::ostream& os, const std::vector<op>& ops);

}  // namespace redlock::fault
