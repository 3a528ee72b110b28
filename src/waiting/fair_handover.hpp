// SPDX-License-Identifier: Apache-2.0
// The fair hand-over ledger of one waiter (pure; unit-tested). A release that
// finds the waiter first in line gives it the lock on that master and names
// the poll whose terms it used (docs/algorithm.md, section 11); the lock is
// the waiter's once a quorum of masters did so, with a window that starts at
// the earliest poll a counted grant names. A grant is counted only if it
// cannot have been undone by the waiter's own clean-up: it must name a poll
// sent after the waiter last released on that master.
#pragma once

#include <redlock/clock.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace redlock::detail {

class handover_ledger {
 public:
  /// Allocates nothing until first used: every acquisition has a ledger,
  /// only an unfenced fair one ever uses it (redlock-bench alloc).
  handover_ledger(std::size_t nodes, std::size_t quorum) : nodes_(nodes), quorum_(quorum) {}

  /// Poll `id` was sent at `sent` (client clock).
  void note_poll(std::uint64_t id, steady_time sent);
  /// A poll of ours was granted on `node` itself (its send time `sent`).
  void poll_granted(std::size_t node, std::uint64_t poll_id, steady_time sent);
  /// A release handed us the lock on `node`, on the terms of poll `poll_id`:
  /// false when that grant cannot be counted (a poll we no longer know, or
  /// one sent before our last release there, which may have run after it).
  bool handed(std::size_t node, std::uint64_t poll_id);

  std::size_t count() const noexcept { return count_; }
  bool has_quorum() const noexcept { return count_ >= quorum_; }
  /// The masters a grant was counted on.
  std::vector<std::uint32_t> counted() const;
  bool counted_on(std::size_t node) const { return !granted_.empty() && granted_[node].has_value(); }

  /// The end of the window a quorum of grants vouches for: each master holds
  /// the lock at least until the poll it names was sent plus `held_for`
  /// (our ttl, or our queue timeout if shorter: reentrant_release.lua), on a
  /// clock within the drift allowance of ours. Nothing without a quorum.
  std::optional<steady_time> window_end(std::chrono::milliseconds held_for, std::chrono::milliseconds ttl,
                                        double drift_factor) const;

  /// We release on these masters (every one a grant was counted on, among
  /// others): a grant there counts again only if it names a poll sent after
  /// this release (`next_poll_id`: the id the next poll will carry; FIFO on
  /// the connection puts that poll, and so its grant, after the release).
  /// Every count is dropped.
  void forget(const std::vector<std::uint32_t>& released, std::uint64_t next_poll_id);

 private:
  void count(std::size_t node, steady_time sent);
  std::uint64_t first_valid_poll(std::size_t node) const {
    return first_valid_poll_.empty() ? 0 : first_valid_poll_[node];
  }
  void size_per_master();

  std::size_t nodes_;
  std::size_t quorum_;
  std::vector<std::optional<steady_time>> granted_;  // per master: the named poll's send time
  std::size_t count_ = 0;
  std::vector<std::uint64_t> first_valid_poll_;      // per master: grants naming earlier polls are not counted
  std::vector<std::pair<std::uint64_t, steady_time>> polls_;  // recent polls: id, send time
};

}  // namespace redlock::detail
