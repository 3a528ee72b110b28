// SPDX-License-Identifier: Apache-2.0
// RedLock validity arithmetic (pure; unit-tested). All durations come from the
// steady (or injected) clock, never the wall clock.
#pragma once

#include <redlock/clock.hpp>

#include <chrono>
#include <cmath>
#include <cstddef>

namespace redlock::detail {

using std::chrono::microseconds;
using std::chrono::milliseconds;

inline std::size_t quorum_of(std::size_t nodes) { return nodes / 2 + 1; }

/// Allowance for the masters' clocks running faster than ours:
/// TTL * drift_factor (rounded up) + 2 ms for timer granularity.
inline microseconds drift_allowance(milliseconds ttl, double drift_factor) {
  auto scaled = std::ceil(static_cast<double>(microseconds(ttl).count()) * drift_factor);
  return microseconds(static_cast<long long>(scaled)) + milliseconds(2);
}

/// Validity left when quorum was reached `elapsed` after the round started.
inline microseconds validity_left(milliseconds ttl, microseconds elapsed, double drift_factor) {
  return microseconds(ttl) - elapsed - drift_allowance(ttl, drift_factor);
}

/// Acquired only with validity left, and more than `min_validity`.
inline bool enough_validity(milliseconds ttl, std::chrono::steady_clock::duration elapsed, double drift_factor,
                            milliseconds min_validity = milliseconds(0)) {
  auto left = validity_left(ttl, std::chrono::duration_cast<microseconds>(elapsed), drift_factor);
  return left > microseconds(0) && left > microseconds(min_validity);
}

/// The end of the window a round that started at `start` vouches for: every
/// master that said yes set its key after `start` (docs/safety.md, Lemma 1).
inline steady_time window_end(steady_time start, milliseconds ttl, double drift_factor) {
  return start + ttl - drift_allowance(ttl, drift_factor);
}

}  // namespace redlock::detail
