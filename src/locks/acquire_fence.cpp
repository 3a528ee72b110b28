// SPDX-License-Identifier: Apache-2.0
// The fence raise of a fenced acquisition (docs/algorithm.md, section 8):
// the token is the largest counter the winning quorum returned (per name,
// for names held together), raised on a quorum while we still hold.
#include "acquire_op.hpp"
#include "fencing/fence_raise.hpp"
#include "kinds.hpp"

#include <redlock/error.hpp>

#include <algorithm>

namespace redlock::detail {

using boost::system::error_code;

void acquire_op::start_raise(const quorum_round& acquired) {
  boost::intrusive_ptr<const quorum_round> acquired_ref(&acquired);
  if (holds_names_together()) {
    // Each name's token: the largest of its counters in the quorum's grants.
    fences_.assign(keys_.size(), 0);
    for (auto& o : acquired.outcomes())
      if (o.state == node_state::locked)
        for (std::size_t i = 0; i < o.fields.size() && i < fences_.size(); ++i)
          fences_[i] = std::max<std::uint64_t>(fences_[i], std::stoull(o.fields[i]));
    auto own = static_cast<std::size_t>(std::find(keys_.begin(), keys_.end(), key_) - keys_.begin());
    fence_raise_round(client_->masters, keys_, token_, fences_,
                      [self = shared_from_this(), acquired_ref, own](quorum_round& r) {
                        self->on_raised(*acquired_ref, r, self->fences_.at(own));
                      })
        ->start();
    return;
  }
  auto token_value = static_cast<std::uint64_t>(acquired.max_value());
  fence_raise_round(client_->masters, held_key(acquired), token_, token_value,
                    [self = shared_from_this(), acquired_ref, token_value](quorum_round& r) {
                      self->on_raised(*acquired_ref, r, token_value);
                    })
      ->start();
}

void acquire_op::on_raised(const quorum_round& acquired, const quorum_round& raise, std::uint64_t token_value) {
  if (fsm_.done()) return;
  auto e = event(acquire_event::type::fence_raised);
  // The token is only as good as the time left: the whole acquisition,
  // raise round included, must fit in the validity window.
  bool in_time = raise.succeeded() && enough_validity(options_.ttl, raise.decided_at() - acquired.started_at(),
                                                      client_->options.drift_factor, options_.min_validity);
  e.round = {in_time, raise.succeeded(), raise.failure(), 0, acquired.started_at()};
  if (in_time) raised_fence_ = token_value;
  // The report shows where the raise failed (the lock was taken there).
  if (!raise.succeeded() && options_.report)
    for (std::uint32_t i = 0; i < raise.outcomes().size() && i < last_round_.size(); ++i)
      if (raise.outcomes()[i].error) {
        last_round_[i].state = raise.outcomes()[i].state;
        last_round_[i].error = raise.outcomes()[i].error;
      }
  decide_on(acquired, e);
}

}  // namespace redlock::detail
