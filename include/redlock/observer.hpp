// SPDX-License-Identifier: Apache-2.0
// Observability without a logging library: implement `observer` (or use
// `counters`) and pass it in client_options::observer. Hooks run on the
// client's I/O strand: keep them short and never block in them.
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
  /// Connection events and other diagnostics.
  virtual void on_log(log_level /*level*/, std::string_view /*message*/) {}
};

/// Ready-made counters, safe to read from any thread (relaxed atomics):
/// export them to your metrics system.
/// Per-master arrays cover the first `max_nodes` masters.
class REDLOCK_EXPORT counters : public observer {
 public:
  static constexpr std::size_t max_nodes = 16;
  struct per_node {
    std::atomic<std::uint64_t> replies{0}, errors{0}, timeouts{0}, latency_us_total{0};
  };

  std::atomic<std::uint64_t> acquire_attempts{0}, acquired{0}, acquire_failures{0}, quorum_failures{0},
      renewals{0}, renewal_failures{0}, lost_leases{0}, log_warnings{0};
  std::array<per_node, max_nodes> nodes;

  void on_node_reply(std::size_t node, std::string_view, std::chrono::microseconds latency,
                     const boost::system::error_code& error) override;
  void on_acquire_attempt(std::string_view, unsigned) override { acquire_attempts.fetch_add(1, relaxed); }
  void on_acquire_result(const acquire_outcome& outcome) override;
  void on_renewal(std::string_view, const boost::system::error_code& error) override {
    (error ? renewal_failures : renewals).fetch_add(1, relaxed);
  }
  void on_lease_lost(std::string_view, lost_reason) override { lost_leases.fetch_add(1, relaxed); }
  void on_log(log_level level, std::string_view) override {
    if (level >= log_level::warning) log_warnings.fetch_add(1, relaxed);
  }

 private:
  static constexpr auto relaxed = std::memory_order_relaxed;
};

}  // namespace redlock
