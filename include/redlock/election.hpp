// SPDX-License-Identifier: Apache-2.0
// Leader election on a quorum (docs/algorithm.md, section 14): a leader is
// the holder of a fenced, renewed mutex, and its epoch is the fencing token.
// async_client::async_campaign / client::campaign wait until leader;
// async_client::observe pushes who leads on every change; resigning is a
// release that tells the observers.
#pragma once

#include <redlock/export.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock {

struct node_lock_view;

namespace detail {
class leader_watch;
}

/// Who leads, as a quorum of masters shows it.
struct leader_info {
  std::string token;        ///< the leader's lock token
  std::uint64_t epoch = 0;  ///< its fencing token: each leader's is larger than every earlier leader's
  /// Lease left as the masters see it (the quorum-th longest PTTL): past it
  /// no quorum holds the lock unless the leader renewed meanwhile.
  std::chrono::milliseconds remaining{0};
  std::string description;  ///< the leader's acquire_options::description, if it gave one
  bool operator==(const leader_info&) const = default;
};

/// The leader a quorum of these masters' views agrees on: the same token
/// holding the name on at least `quorum` of them, with its proclaimed epoch.
/// None while no token holds a quorum, or its holder has not proclaimed an
/// epoch yet (a campaign proclaims right after it wins).
REDLOCK_EXPORT std::optional<leader_info> leader_of(const std::vector<node_lock_view>& views, std::size_t quorum);

/// The subscription async_client::observe returns: the callback is called
/// until this is destroyed (or stop() is called). Move-only.
class REDLOCK_EXPORT leader_subscription {
 public:
  leader_subscription() = default;
  explicit leader_subscription(std::shared_ptr<detail::leader_watch> w) noexcept : watch_(std::move(w)) {}
  leader_subscription(leader_subscription&&) noexcept = default;
  leader_subscription& operator=(leader_subscription&& other) noexcept;
  leader_subscription(const leader_subscription&) = delete;
  leader_subscription& operator=(const leader_subscription&) = delete;
  ~leader_subscription();
  /// No more calls after this returns (one already running may finish).
  void stop();

 private:
  std::shared_ptr<detail::leader_watch> watch_;
};

/// The old name of leader_subscription (it read as an observed value, not a
/// handle that keeps the callback coming); goes in 1.0.
using observation [[deprecated("use leader_subscription")]] = leader_subscription;

}  // namespace redlock
