// SPDX-License-Identifier: Apache-2.0
// The clock used for all validity arithmetic. Steady by default; injectable so
// the fault suite can model a client whose clock drifts or jumps.
#pragma once

#include <redlock/export.hpp>

#include <chrono>

namespace redlock {

using steady_time = std::chrono::steady_clock::time_point;

class REDLOCK_EXPORT clock_source {
 public:
  virtual ~clock_source() = default;
  virtual steady_time now() const noexcept = 0;
};

}  // namespace redlock
