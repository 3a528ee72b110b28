// SPDX-License-Identifier: Apache-2.0
// The nemesis's driver: rounds of faults drawn from the seed, each healed
// after a random duration, then a quiet period (the faults themselves:
// nemesis_faults.cpp).
#include "nemesis_internal.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <thread>

namespace redlock::fault {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

bool verbose() {
  static const bool on = [] {
    const char* v = std::getenv("REDLOCK_FAULT_VERBOSE");
    return v && *v && *v != '0';
  }();
  return on;
}

nemesis::nemesis(cluster& c, workload& w, history& h, nemesis_options o)
    : cluster_(c), workload_(w), history_(h), options_(std::move(o)), rng_(options_.seed) {}

nemesis::~nemesis() {
  try {
    heal_all();
  } catch (...) {
  }
}

std::vector<std::size_t> nemesis::free_masters() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < cluster_.size(); ++i) {
    bool busy = false;
    for (auto& a : active_)
      if (!a.healed && std::find(a.masters.begin(), a.masters.end(), i) != a.masters.end()) busy = true;
    if (!busy) out.push_back(i);
  }
  return out;
}

std::vector<std::size_t> nemesis::pick(std::vector<std::size_t> from, std::size_t n) {
  std::shuffle(from.begin(), from.end(), rng_);
  from.resize(std::min(n, from.size()));
  std::sort(from.begin(), from.end());
  return from;
}

void nemesis::sleep_until(time_point t) {
  while (!stop_ && steady::now() < t) std::this_thread::sleep_for(std::min<steady::duration>(t - steady::now(), 10ms));
}

std::size_t nemesis::inject(fault_type t, const std::vector<std::size_t>& masters, int client) {
  return apply(t, masters, client);
}

void nemesis::heal(std::size_t index) {
  auto& a = active_.at(index);
  if (a.healed) return;
  if (steady::now() < a.not_before) {
    auto until = a.not_before;
    while (steady::now() < until) std::this_thread::sleep_for(5ms);
  }
  if (verbose()) std::cerr << "nemesis: healing #" << a.op << std::endl;
  bool acted = a.acted && a.acted();
  a.heal();
  a.healed = true;
  // A fast master clock and a slow client clock each use most of the drift
  // allowance: never both on one window (the longest TTL apart).
  auto apart = workload_.options().ttl_max * 5 / 4;
  if (a.type == fault_type::server_clock_fast_bounded) fast_master_clear_ = steady::now() + apart;
  if (a.type == fault_type::client_clock_slow_bounded) slow_client_clear_ = steady::now() + apart;
  history_.update(a.op, [&](op& o) { o.acted = acted; });
  history_.complete(a.op, steady::now(), outcome::ok);
}

void nemesis::heal_all() {
  for (std::size_t i = active_.size(); i-- > 0;) heal(i);
}

fault_type nemesis::draw_type() {
  std::vector<double> w;
  for (auto t : options_.types) {
    auto given = options_.weights.find(t);
    w.push_back(given != options_.weights.end() ? given->second : weight(t));
  }
  return options_.types.at(std::discrete_distribution<std::size_t>(w.begin(), w.end())(rng_));
}

void nemesis::run_until(time_point end) {
  while (!stop_ && steady::now() < end) {
    auto roll = uniform<double>(0.0, 1.0);
    std::size_t count = roll < options_.p_three ? 3 : roll < options_.p_three + options_.p_two ? 2 : 1;
    auto first = active_.size();
    for (std::size_t i = 0; i < count; ++i) {
      auto t = draw_type();
      bool exclusive_running = false;
      for (std::size_t k = first; k < active_.size(); ++k) exclusive_running |= active_[k].exclusive;
      if (exclusive_running) break;
      pick_and_apply(t);
    }
    auto d = milliseconds(uniform<long long>(options_.duration_min.count(), options_.duration_max.count()));
    sleep_until(std::min(end, steady::now() + d));
    for (std::size_t k = active_.size(); k-- > first;) heal(k);
    auto quiet = uniform<double>(0.0, 1.0) < options_.p_long_quiet
                     ? options_.long_quiet
                     : milliseconds(uniform<long long>(options_.quiet_min.count(), options_.quiet_max.count()));
    sleep_until(steady::now() + quiet);
  }
  heal_all();
}

}  // namespace redlock::fault
