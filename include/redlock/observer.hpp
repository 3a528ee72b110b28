// SPDX-License-Identifier: Apache-2.0
// Observability without a logging library: implement `observer` (or use
// `counting_observer`) and pass it in client_options::observer. Hooks run on the
// client's I/O strand (but for the end of a hold dropped unreleased):
// keep them short and never block in them.
#pragma once

#include <redlock/export.hpp>

#include <redlock/options.hpp>

#include <boost/system/error_code.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace redlock {

enum class log_level : int { debug, info, warning, error };

/// What one acquisition (async_acquire, acquire, try_acquire, lock_guard)
/// came to: observer::on_acquire_result.
struct acquire_outcome {
  std::string_view name;
  lock_kind kind = lock_kind::mutex;
  boost::system::error_code error;    ///< clear when acquired
  std::chrono::microseconds took{0};  ///< from the start of the acquisition to its result
  unsigned attempts = 0;              ///< rounds that could take the lock (0: failed before the first)
  /// The hand-off as this waiter saw it: for an acquisition that heard a
  /// holder release the lock while it waited, the time from the last release
  /// it heard (on a quorum for mutex and reentrant locks; the hand-over, or
  /// the wake-up naming it, for fair ones) to its result. Empty otherwise.
  std::optional<std::chrono::microseconds> since_release{};
};

/// How a hold ended: observer::on_hold_end.
enum class hold_end {
  released,  ///< its (last) release was asked for
  lost,      ///< its lease was lost (hold_outcome::why says how)
  dropped,   ///< every handle to it was dropped unreleased: its keys run to their TTL
};

/// One hold of a lock by this client, from its acquisition to its end:
/// observer::on_hold_end. A re-entry of a reentrant, fair or read-write hold
/// is no new hold: the hold ends at the owner's last release.
struct hold_outcome {
  std::string_view name;  ///< of names held together: the one asked for
  lock_kind kind = lock_kind::mutex;
  hold_end how = hold_end::released;
  lost_reason why = lost_reason::none;  ///< set when lost
  std::chrono::microseconds held_for{0};  ///< from the acquisition's result to the end
};

/// What a span covers: observer::on_span.
enum class span_kind {
  acquire,  ///< an acquisition (or re-entry), from the call to its result
  hold,     ///< a hold, from the acquisition's result to its end (hold_outcome)
  extend,   ///< an extend, a watchdog renewal, or a fair hand-over's confirmation
  release,  ///< a release round, from the call to the masters' decision
};

/// One finished operation, for an application's tracer: create a span with
/// `start` as its start time and end it `duration` later.
struct span {
  span_kind what = span_kind::acquire;
  std::string_view name;
  lock_kind kind = lock_kind::mutex;
  std::chrono::system_clock::time_point start{};  ///< wall clock, for the trace
  std::chrono::microseconds duration{0};
  /// "ok", or the error as one word (error_word); for a hold, how it
  /// ended (ended_word).
  std::string_view outcome;
  boost::system::error_code error;  ///< acquire, extend, release: clear on success
  unsigned masters = 0;   ///< masters the client has
  /// Of them, those that had answered (yes or no) when the deciding round
  /// was decided: a quorum round does not wait for the slowest (a hold: its
  /// acquisition's round).
  unsigned answered = 0;
  unsigned granted = 0;   ///< that said yes there
  unsigned attempts = 0;  ///< acquire: quorum rounds that could take the lock
};

/// The word spans and metrics use for an error: errc's enumerator name
/// ("not_acquired"), "cancelled" for operation_aborted, else "other"; "ok"
/// for none.
REDLOCK_EXPORT std::string_view error_word(const boost::system::error_code& ec) noexcept;
/// How a hold ended, as one word: "released", "dropped", or the lost
/// lease's reason ("expired", "taken_over", "quorum_lost", "max_hold").
REDLOCK_EXPORT std::string_view ended_word(const hold_outcome& o) noexcept;

/// Receives events from a client; every hook defaults to doing nothing.
class REDLOCK_EXPORT observer {
 public:
  virtual ~observer() = default;
  /// One master answered (or failed or timed out) one request of `operation`
  /// (the script's name, e.g. "mutex_acquire", "extend").
  virtual void on_node_reply(std::size_t /*node*/, std::string_view /*operation*/,
                             std::chrono::microseconds /*latency*/, const boost::system::error_code& /*error*/) {}
  /// An acquisition round starts (attempt 1, 2, ...): one that may take the
  /// lock. A round that only joins a mutex's wake list, behind a waiter this
  /// client's release has just woken, is not one (docs/algorithm.md, section 10).
  virtual void on_acquire_attempt(std::string_view /*name*/, unsigned /*attempt*/) {}
  /// An acquisition completed (acquired or not).
  virtual void on_acquire_result(const acquire_outcome& /*outcome*/) {}
  /// A watchdog renewal finished.
  virtual void on_renewal(std::string_view /*name*/, const boost::system::error_code& /*error*/) {}
  /// A renewal or extend of a mutex that won a quorum set the key again on
  /// `masters` masters that had lost it (restarted empty); docs/algorithm.md,
  /// "Lease rules".
  virtual void on_lease_repaired(std::string_view /*name*/, std::size_t /*masters*/) {}
  /// A renewed lock was lost.
  virtual void on_lease_lost(std::string_view /*name*/, lost_reason /*why*/) {}
  /// A hold began (an acquisition, not a re-entry, succeeded); every one
  /// ends with exactly one on_hold_end. Locks taken over with
  /// async_client::adopt are not counted: their start is unknown.
  virtual void on_hold_begin(std::string_view /*name*/, lock_kind /*kind*/) {}
  /// A hold ended: released, lost, or dropped. A dropped hold is reported
  /// where its last handle went, which may be the caller's thread.
  virtual void on_hold_end(const hold_outcome& /*outcome*/) {}
  /// An acquire, hold, extend or release finished (docs/user-guide.md,
  /// "Tracing").
  virtual void on_span(const span& /*s*/) {}
  /// Connection events and other diagnostics.
  virtual void on_log(log_level /*level*/, std::string_view /*message*/) {}
};

/// A ready-made observer that counts events in atomics, safe to read from
/// any thread (relaxed): export them to your metrics system.
/// Per-master arrays cover the first `max_nodes` masters.
class REDLOCK_EXPORT counting_observer : public observer {
 public:
  static constexpr std::size_t max_nodes = 16;
  struct per_node {
    std::atomic<std::uint64_t> replies{0}, errors{0}, timeouts{0}, latency_us_total{0};
  };

  std::atomic<std::uint64_t> acquire_attempts{0}, acquired{0}, acquire_failures{0}, quorum_failures{0},
      renewals{0}, renewal_failures{0}, lost_leases{0}, lease_repairs{0}, log_warnings{0};
  std::atomic<std::int64_t> locks_held{0};  ///< holds begun and not yet ended
  std::array<per_node, max_nodes> nodes;

  void on_node_reply(std::size_t node, std::string_view, std::chrono::microseconds latency,
                     const boost::system::error_code& error) override;
  void on_acquire_attempt(std::string_view, unsigned) override { acquire_attempts.fetch_add(1, relaxed); }
  void on_acquire_result(const acquire_outcome& outcome) override;
  void on_renewal(std::string_view, const boost::system::error_code& error) override {
    (error ? renewal_failures : renewals).fetch_add(1, relaxed);
  }
  void on_lease_lost(std::string_view, lost_reason) override { lost_leases.fetch_add(1, relaxed); }
  void on_lease_repaired(std::string_view, std::size_t masters) override { lease_repairs.fetch_add(masters, relaxed); }
  void on_hold_begin(std::string_view, lock_kind) override { locks_held.fetch_add(1, relaxed); }
  void on_hold_end(const hold_outcome&) override { locks_held.fetch_sub(1, relaxed); }
  void on_log(log_level level, std::string_view) override {
    if (level >= log_level::warning) log_warnings.fetch_add(1, relaxed);
  }

 private:
  static constexpr auto relaxed = std::memory_order_relaxed;
};

/// The old name of counting_observer (it did not say it is an observer);
/// goes in 1.0.
using counters [[deprecated("use counting_observer")]] = counting_observer;

}  // namespace redlock
