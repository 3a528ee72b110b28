// SPDX-License-Identifier: Apache-2.0
#include "fair_handover.hpp"

#include "quorum/validity.hpp"

#include <algorithm>

namespace redlock::detail {

void handover_ledger::note_poll(std::uint64_t id, steady_time sent) {
  if (polls_.size() == 32) polls_.erase(polls_.begin());  // older polls' grants are long stale
  polls_.emplace_back(id, sent);
}

void handover_ledger::poll_granted(std::size_t node, std::uint64_t poll_id, steady_time sent) {
  if (poll_id >= first_valid_poll(node)) count(node, sent);
}

bool handover_ledger::handed(std::size_t node, std::uint64_t poll_id) {
  if (poll_id < first_valid_poll(node)) return false;
  for (auto& [id, sent] : polls_)
    if (id == poll_id) {
      count(node, sent);
      return true;
    }
  return false;
}

void handover_ledger::size_per_master() {
  if (granted_.empty()) {
    granted_.resize(nodes_);
    first_valid_poll_.resize(nodes_, 0);
  }
}

void handover_ledger::count(std::size_t node, steady_time sent) {
  size_per_master();
  if (granted_[node]) return;
  granted_[node] = sent;
  ++count_;
}

std::vector<std::uint32_t> handover_ledger::counted() const {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < granted_.size(); ++i)
    if (granted_[i]) out.push_back(i);
  return out;
}

std::optional<steady_time> handover_ledger::window_end(std::chrono::milliseconds held_for,
                                                       std::chrono::milliseconds ttl, double drift_factor) const {
  if (!has_quorum()) return std::nullopt;
  steady_time earliest = steady_time::max();
  for (auto& g : granted_)
    if (g) earliest = std::min(earliest, *g);
  return earliest + held_for - drift_allowance(ttl, drift_factor);
}

void handover_ledger::forget(const std::vector<std::uint32_t>& released, std::uint64_t next_poll_id) {
  std::fill(granted_.begin(), granted_.end(), std::nullopt);
  count_ = 0;
  if (!released.empty()) size_per_master();
  for (auto n : released) first_valid_poll_[n] = next_poll_id;
}

}  // namespace redlock::detail
