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

struct node_status;

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
REDLOCK_EXPORT std::optional<leader_info> leader_of(const std::vector<node_status>& views, std::size_t quorum);

/// An observation started by async_client::observe: stops when destroyed
/// (or stop() is called). Move-only.
class REDLOCK_EXPORT observation {
 public:
  observation() = default;
  explicit observation(std::shared_ptr<detail::leader_watch> w) noexcept : watch_(std::move(w)) {}
  observation(observation&&) noexcept = default;
  observation& operator=(observation&& other) noexcept;
  observation(const observation&) = delete;
  observation& operator=(const observation&) = delete;
  ~observation();
  /// No more calls after this returns (one already running may finish).
  void stop();

 private:
  std::shared_ptr<detail::leader_watch> watch_;
};

}  // namespace redlock
