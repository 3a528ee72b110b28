// SPDX-License-Identifier: Apache-2.0
// How long a waiter waits between attempts (pure). Shared by the acquire
// loop and the option check, so that a fair waiter's queue_timeout is checked
// against the very delays the loop uses.
#pragma once

#include <redlock/options.hpp>

#include <algorithm>
#include <cstddef>

namespace redlock::detail {

/// A fair waiter `rank` places behind the head is woken by name when it is
/// first; until then it polls only to keep its place (and in case a wake-up
/// is lost): less often the further back it is, and never more than a third
/// of its queue timeout apart (or retry_delay, when that is longer).
inline milliseconds fair_backoff(milliseconds delay, std::size_t rank, const acquire_options& o) {
  if (rank == 0) return delay;
  delay *= static_cast<long>(std::min<std::size_t>(rank + 1, 8));
  return std::min(delay, std::max(o.retry_delay, o.queue_timeout / 3));
}

/// The longest time between two polls of one fair waiter, as its master sees
/// them: the first may run as soon as it is sent and the next only at its
/// deadline (two node timeouts), with the longest delay between them. A
/// queue_timeout no longer than this drops a waiter between its own polls.
inline milliseconds longest_poll_gap(const acquire_options& o, milliseconds node_timeout) {
  auto longest_delay = o.retry_delay + o.retry_jitter;
  constexpr std::size_t far_back = 7;  // where the back-off stops growing
  return 2 * node_timeout + std::max(longest_delay, fair_backoff(longest_delay, far_back, o));
}

}  // namespace redlock::detail
