// SPDX-License-Identifier: Apache-2.0
// A client clock for the fault suite: a redlock::clock_source that follows
// std::chrono::steady_clock at a settable rate, with jumps. It keeps every
// segment of its history so the test can map a reading of this clock back to
// the steady time at which the clock showed it (to_steady), which is how a
// lock's valid_until() on this clock becomes a deadline on the test's clock.
#pragma once

#include <redlock/clock.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

namespace redlock::fault {

class drift_clock final : public redlock::clock_source {
 public:
  using duration = std::chrono::steady_clock::duration;

  /// Starts equal to steady_clock, at rate 1.
  drift_clock();

  steady_time now() const noexcept override;

  /// From now on the clock advances `rate` times as fast as steady_clock (> 0).
  void set_rate(double rate);
  double rate() const;
  /// The clock jumps by `by` now (forward if positive). A backward jump makes
  /// it non-monotonic: only for demonstrating unsafe configurations.
  void jump(duration by);

  /// The first steady time at which this clock read `reading` or more
  /// (extrapolated at the current rate for readings still in the future).
  steady_time to_steady(steady_time reading) const;

  /// How many times now() was called: a clock fault acts only if it is read.
  std::uint64_t reads() const noexcept { return reads_.load(std::memory_order_relaxed); }

 private:
  struct segment {
    steady_time real;  ///< steady time at which this segment starts
    steady_time fake;  ///< our reading at that moment
    double rate;
  };
  steady_time reading_at(const segment& s, steady_time real) const;

  mutable std::mutex mutex_;
  mutable std::atomic<std::uint64_t> reads_{0};
  std::vector<segment> segments_;
};

}  // namespace redlock::fault
