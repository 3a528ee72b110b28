// SPDX-License-Identifier: Apache-2.0
#include "drift_clock.hpp"

#include <stdexcept>

namespace redlock::fault {

using std::chrono::steady_clock;

drift_clock::drift_clock() {
  auto t = steady_clock::now();
  segments_.push_back({t, t, 1.0});
}

steady_time drift_clock::reading_at(const segment& s, steady_time real) const {
  auto elapsed = std::chrono::duration<double, std::nano>(real - s.real).count() * s.rate;
  return s.fake + std::chrono::duration_cast<duration>(std::chrono::duration<double, std::nano>(elapsed));
}

steady_time drift_clock::now() const noexcept {
  reads_.fetch_add(1, std::memory_order_relaxed);
  auto real = steady_clock::now();
  std::lock_guard g(mutex_);
  return reading_at(segments_.back(), real);
}

void drift_clock::set_rate(double rate) {
  if (!(rate > 0)) throw std::invalid_argument("drift_clock: rate must be > 0");
  auto real = steady_clock::now();
  std::lock_guard g(mutex_);
  segments_.push_back({real, reading_at(segments_.back(), real), rate});
}

double drift_clock::rate() const {
  std::lock_guard g(mutex_);
  return segments_.back().rate;
}

void drift_clock::jump(duration by) {
  auto real = steady_clock::now();
  std::lock_guard g(mutex_);
  auto& last = segments_.back();
  segments_.push_back({real, reading_at(last, real) + by, last.rate});
}

steady_time drift_clock::to_steady(steady_time reading) const {
  std::lock_guard g(mutex_);
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    auto& s = segments_[i];
    if (reading <= s.fake) return s.real;  // reached at the start of this segment (or by a jump into it)
    bool last = i + 1 == segments_.size();
    if (!last && reading_at(s, segments_[i + 1].real) < reading) continue;  // not reached in this segment
    auto to_go = std::chrono::duration<double, std::nano>(reading - s.fake).count() / s.rate;
    return s.real + std::chrono::duration_cast<duration>(std::chrono::duration<double, std::nano>(to_go));
  }
  return segments_.back().real;  // unreachable: the last segment always answers
}

}  // namespace redlock::fault
