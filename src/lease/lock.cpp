// SPDX-License-Identifier: Apache-2.0
#include <redlock/error.hpp>
#include <redlock/lock.hpp>
#include <redlock/observer.hpp>

#include "lease/lock_state.hpp"

namespace redlock {

namespace {
const detail::lock_state& checked(const std::shared_ptr<detail::lock_state>& s) {
  if (!s) throw error(errc::empty_lock, "operation on an empty lock handle");
  return *s;
}
}  // namespace

const std::string& lock::name() const { return checked(state_).name; }
const std::string& lock::key() const { return checked(state_).key; }
const std::string& lock::token() const { return checked(state_).token; }
std::chrono::milliseconds lock::ttl() const { return checked(state_).ttl; }
steady_time lock::valid_until() const { return checked(state_).get_valid_until(); }
std::chrono::milliseconds lock::remaining_validity() const {
  auto& s = checked(state_);
  return std::chrono::duration_cast<std::chrono::milliseconds>(s.get_valid_until() - s.now());
}
std::optional<std::uint64_t> lock::fence() const { return checked(state_).fence; }
std::optional<unsigned> lock::permit() const {
  auto* permit = checked(state_).fields_if<detail::permit_fields>();
  if (!permit) return std::nullopt;
  return permit->permit;
}
std::vector<std::string> lock::names() const {
  auto& s = checked(state_);
  auto* set = s.fields_if<detail::set_fields>();
  return set ? set->names : std::vector<std::string>{s.name};
}
std::vector<std::uint64_t> lock::fences() const {
  auto& s = checked(state_);
  if (auto* set = s.fields_if<detail::set_fields>(); set && !set->fences.empty()) return set->fences;
  if (s.fence) return {*s.fence};
  return {};
}
lock_kind lock::kind() const { return checked(state_).kind; }
int lock::hold_count() const { return checked(state_).holds.load(); }
bool lock::lost() const { return checked(state_).lost.load() != 0; }
lost_reason lock::why_lost() const { return static_cast<lost_reason>(checked(state_).lost.load()); }
boost::asio::cancellation_slot lock::lost_slot() const {
  if (!state_) throw error(errc::empty_lock, "operation on an empty lock handle");
  return state_->lost_signal.slot();
}
const std::vector<node_vote>& lock::nodes() const { return checked(state_).named_nodes(); }

std::string_view to_string(lock_kind k) noexcept {
  switch (k) {
    case lock_kind::mutex: return "mutex";
    case lock_kind::reentrant: return "reentrant";
    case lock_kind::fair: return "fair";
    case lock_kind::semaphore: return "semaphore";
    case lock_kind::read: return "read";
    case lock_kind::write: return "write";
  }
  return "unknown";
}

std::string_view to_string(lost_reason r) noexcept {
  switch (r) {
    case lost_reason::none: return "none";
    case lost_reason::expired: return "expired";
    case lost_reason::taken_over: return "taken_over";
    case lost_reason::quorum_lost: return "quorum_lost";
    case lost_reason::max_hold: return "max_hold";
  }
  return "unknown";
}

// Next to to_string(lost_reason), which it extends (observer.hpp).
std::string_view ended_word(const hold_outcome& o) noexcept {
  switch (o.how) {
    case hold_end::released: return "released";
    case hold_end::dropped: return "dropped";
    case hold_end::lost: return to_string(o.why);
  }
  return "unknown";
}

}  // namespace redlock
