// SPDX-License-Identifier: Apache-2.0
// A held (or formerly held) lock: a cheap, copyable handle to shared state.
#pragma once

#include <redlock/export.hpp>

#include <redlock/clock.hpp>
#include <redlock/node_vote.hpp>
#include <redlock/options.hpp>

#include <boost/asio/cancellation_signal.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

namespace detail {
struct lock_state;
struct lock_access;
}

class REDLOCK_EXPORT lock {
 public:
  lock() = default;

  /// False for a default-constructed or moved-from handle.
  explicit operator bool() const noexcept { return state_ != nullptr; }

  const std::string& name() const;   ///< the resource name as given
  const std::string& key() const;    ///< the Redis key (prefix + name); a semaphore's: the permit slot's key
  const std::string& token() const;  ///< this holder's random value (hex)
  std::chrono::milliseconds ttl() const;

  /// End of the validity window on the client's clock (steady clock unless an
  /// injected clock was configured). Past it the lock must be treated as lost.
  steady_time valid_until() const;
  /// Time left in the validity window (zero or negative once it has ended).
  std::chrono::milliseconds remaining_validity() const;

  lock_kind kind() const;
  /// Reentrant and fair locks: how many times this owner has entered and not
  /// yet released (0 once fully released).
  int hold_count() const;
  /// The old name of hold_count() (it read as a yes/no question); goes in 1.0.
  [[deprecated("use hold_count()")]] int holds() const { return hold_count(); }

  /// The fencing token, for locks acquired with acquire_options::fenced. A
  /// semaphore's tokens are per permit slot (docs/fencing.md): storage
  /// checks them per (name, permit()).
  std::optional<std::uint64_t> fence() const;
  /// Semaphores: which permit slot this holder has, 0 to permits - 1.
  std::optional<unsigned> permit() const;
  /// Every name it holds, sorted: the one name, or all the names of a lock
  /// held together (acquire_options::other_names).
  std::vector<std::string> names() const;
  /// Fenced: one token per name, in names() order (fence() is the token of
  /// the name acquired, for a lock over one name).
  std::vector<std::uint64_t> fences() const;

  /// For renewed locks: true once renewal could no longer keep the lease.
  bool lost() const;
  lost_reason why_lost() const;
  /// A cancellation slot signalled (terminal) when a renewed lock is lost:
  /// bind the critical section's operations to it with
  /// asio::bind_cancellation_slot. One handler at a time; signalled on the
  /// client's strand.
  boost::asio::cancellation_slot lost_slot() const;

  /// Each master's answer to the acquisition round, in node order.
  const std::vector<node_vote>& nodes() const;

 private:
  friend struct detail::lock_access;  // the library makes handles and reaches their state
  explicit lock(std::shared_ptr<detail::lock_state> s) noexcept : state_(std::move(s)) {}
  std::shared_ptr<detail::lock_state> state_;
};

/// One word per kind, for logs, labels and messages: "mutex", "reentrant",
/// "fair", "semaphore", "read", "write".
REDLOCK_EXPORT std::string_view to_string(lock_kind k) noexcept;

/// One word per reason, for logs and labels: "none", "expired",
/// "taken_over", "quorum_lost", "max_hold".
REDLOCK_EXPORT std::string_view to_string(lost_reason r) noexcept;

}  // namespace redlock
