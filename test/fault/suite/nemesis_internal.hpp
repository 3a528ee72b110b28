// SPDX-License-Identifier: Apache-2.0
// What the nemesis's own files share (nemesis.cpp: the driver; fault_types.cpp
// and nemesis_faults.cpp: the catalogue of faults; run_round.cpp narrates
// with verbose() too). Not for the nemesis's users: they include nemesis.hpp.
#pragma once

#include "nemesis.hpp"

#include <functional>
#include <random>
#include <type_traits>

namespace redlock::fault {

/// REDLOCK_FAULT_VERBOSE set (and not 0): the nemesis and run_round narrate on stderr.
bool verbose();

/// How often `t` is drawn against the others, unless nemesis_options::weights says.
double weight(fault_type t);

struct nemesis::active {
  fault_type type;
  std::function<bool()> acted;  // evaluated at the heal: did the fault act?
  std::size_t op = 0;
  std::vector<std::size_t> masters;
  int client = -1;
  time_point not_before{};  // heal no earlier (delayed restart)
  std::function<void()> heal;
  bool exclusive = false;
  bool healed = false;
};

template <typename T>
T nemesis::uniform(T lo, T hi) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::uniform_real_distribution<T>(lo, hi)(rng_);
  } else {
    if (hi <= lo) return lo;
    return std::uniform_int_distribution<T>(lo, hi)(rng_);
  }
}

}  // namespace redlock::fault
