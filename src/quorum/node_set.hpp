// SPDX-License-Identifier: Apache-2.0
// What a quorum round needs of its client, and nothing more: one connection
// per master, the quorum, the per-request deadline, the clock of all validity
// arithmetic and the observer.
#pragma once

#include "connection/connection.hpp"

#include <redlock/clock.hpp>
#include <redlock/observer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace redlock::detail {

struct node_set {
  std::vector<std::shared_ptr<connection>> connections;  ///< one per master, in node order
  std::size_t quorum = 1;
  std::chrono::milliseconds node_timeout{50};
  std::shared_ptr<const ::redlock::clock_source> clock;  ///< null: std::chrono::steady_clock
  std::shared_ptr<::redlock::observer> observer;  ///< may be null

  std::size_t size() const noexcept { return connections.size(); }
  connection& operator[](std::size_t i) const { return *connections[i]; }
  /// Every master's index, for a round sent to all of them with start_on().
  std::vector<std::uint32_t> all() const {
    std::vector<std::uint32_t> out(size());
    for (std::uint32_t i = 0; i < out.size(); ++i) out[i] = i;
    return out;
  }
  /// The clock every window is computed on: the injected one, or the steady clock.
  steady_time now() const { return clock ? clock->now() : std::chrono::steady_clock::now(); }
};

}  // namespace redlock::detail
