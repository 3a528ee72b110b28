// SPDX-License-Identifier: Apache-2.0
// The decision of one quorum round, without any I/O (unit-tested with fake
// replies and a fake clock): how many masters said yes, no or failed, when the
// outcome is known (a quorum reached, or made impossible), which replies come
// too late to change it, and whether the validity left at the decision is
// enough. quorum_round sends the requests and feeds this type.
#pragma once

#include "validity.hpp"

#include <redlock/clock.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace redlock::detail {

/// One master's answer to one request, as a lock operation reads it.
enum class verdict : std::uint8_t {
  yes,     ///< did what was asked (granted, extended, released)
  no,      ///< refused: definite, and final for this request
  failed,  ///< an error, a timeout or a lost connection: may or may not have applied
};

class quorum_decision {
 public:
  /// When a failure may be decided.
  enum class failure_rule : std::uint8_t {
    early,         ///< as soon as a quorum of yes is impossible
    settled,       ///< only once every master answered (refusals counted exactly)
    every_master,  ///< success too waits for every master (a read of each one's view)
  };
  /// What a recorded answer did to the round.
  enum class effect : std::uint8_t {
    pending,  ///< counted; the outcome is not known yet
    decided,  ///< counted; it decided the round (act on the outcome now)
    late,     ///< the round was already decided: it changes nothing
  };

  quorum_decision(std::size_t nodes, std::size_t quorum, failure_rule rule = failure_rule::early) noexcept
      : nodes_(nodes), asked_(nodes), quorum_(quorum), rule_(rule) {}

  void set_rule(failure_rule rule) noexcept { rule_ = rule; }
  /// The round was sent to only `asked` of the masters (a clean-up, a
  /// repair): every master has answered once those did.
  void ask_only(std::size_t asked) noexcept { asked_ = asked; }
  /// The round's requests were sent at `now` (client clock).
  void start(steady_time now) noexcept { started_at_ = now; }

  /// Records one master's answer, received at `now`. Each master answers once.
  /// A "yes" may name a `choice` (a semaphore's permit slot): a quorum is
  /// then a quorum of yes for one choice, and a yes for another choice
  /// counts against it like a refusal. -1: the only choice there is.
  effect record(verdict v, steady_time now, std::int32_t choice = -1) {
    bool was_decided = decided_;
    (v == verdict::yes ? yes_ : v == verdict::no ? no_ : failed_) += 1;
    if (v == verdict::yes && choice >= 0) vote(choice);
    if (was_decided) return effect::late;
    if (!ready()) return effect::pending;
    decided_ = true;
    decided_at_ = now;
    return effect::decided;
  }

  bool decided() const noexcept { return decided_; }
  /// A quorum said yes (so far), for one choice.
  bool reached() const noexcept { return best() >= quorum_; }
  /// No quorum of yes is possible any more, whatever the rest answer.
  bool impossible() const noexcept { return best() + (nodes_ - yes_ - no_ - failed_) < quorum_; }
  /// The choice with the most votes (the first to reach it on a tie), -1
  /// when no yes named one.
  std::int32_t winner() const noexcept { return votes_.empty() ? -1 : votes_[best_at_].first; }
  /// Refusals alone made a quorum impossible: a definite "no" (for a lease:
  /// not held), unlike a round that missed its quorum through failures.
  bool refused_by_quorum() const noexcept { return no_ > nodes_ - quorum_; }
  bool every_master_answered() const noexcept { return yes_ + no_ + failed_ == asked_; }

  /// Refusals, counting yes votes for choices other than the winner's (a
  /// split vote lost to contention, not to failures).
  std::size_t refused_or_outvoted() const noexcept { return no_ + (yes_ - best()); }
  std::size_t yes() const noexcept { return yes_; }
  std::size_t no() const noexcept { return no_; }
  std::size_t failed() const noexcept { return failed_; }
  std::size_t nodes() const noexcept { return nodes_; }
  std::size_t quorum() const noexcept { return quorum_; }

  steady_time started_at() const noexcept { return started_at_; }
  steady_time decided_at() const noexcept { return decided_at_; }

  /// The RedLock validity check at the decision: a quorum, and more than
  /// `min_validity` (and more than zero) left of `ttl` once the elapsed time
  /// and the drift allowance are taken off.
  bool acquired(milliseconds ttl, double drift_factor, milliseconds min_validity = milliseconds(0)) const noexcept {
    return reached() && enough_validity(ttl, decided_at_ - started_at_, drift_factor, min_validity);
  }
  /// The end of the validity window this round vouches for (client clock).
  steady_time window_end(milliseconds ttl, double drift_factor) const noexcept {
    return detail::window_end(started_at_, ttl, drift_factor);
  }

 private:
  bool ready() const noexcept {
    switch (rule_) {
      case failure_rule::early: return reached() || impossible() || every_master_answered();
      case failure_rule::settled: return reached() || every_master_answered();
      case failure_rule::every_master: return every_master_answered();
    }
    return false;
  }

  std::size_t best() const noexcept { return votes_.empty() ? yes_ : votes_[best_at_].second; }
  void vote(std::int32_t choice) {
    auto it = std::find_if(votes_.begin(), votes_.end(), [&](auto& v) { return v.first == choice; });
    if (it == votes_.end()) it = votes_.insert(votes_.end(), {choice, 0});
    ++it->second;
    if (it->second > votes_[best_at_].second) best_at_ = static_cast<std::size_t>(it - votes_.begin());
  }

  std::size_t nodes_, asked_, quorum_;
  failure_rule rule_;
  std::size_t yes_ = 0, no_ = 0, failed_ = 0;
  // Votes per choice, only when yes replies name one (semaphores): the
  // single-choice kinds allocate nothing here.
  std::vector<std::pair<std::int32_t, std::size_t>> votes_;
  std::size_t best_at_ = 0;
  bool decided_ = false;
  steady_time started_at_{}, decided_at_{};
};

}  // namespace redlock::detail
