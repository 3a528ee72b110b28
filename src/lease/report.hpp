// SPDX-License-Identifier: Apache-2.0
// What the observer hears of finished operations (observer::on_span) and of
// holds (on_hold_begin / on_hold_end): the counting shared by the lock
// operations and the lease.
#pragma once

#include "lease/lock_state.hpp"
#include "quorum/quorum_round.hpp"

#include <redlock/observer.hpp>

#include <chrono>
#include <span>

namespace redlock::detail {

/// How many masters answered a round (yes or no) and how many said yes.
struct round_tally {
  unsigned answered = 0, granted = 0;
};
round_tally tally(std::span<const node_outcome> outcomes);
round_tally tally(const node_answers& answers);

/// Reports `s`, which began at `began` (real time) and ends now, its
/// outcome the error's word unless set.
void report_span(observer& obs, span s, std::chrono::steady_clock::time_point began);

/// The span of a round-based operation on `state` (extend, release).
void report_round_span(observer& obs, span_kind what, const lock_state& state, const quorum_round& round,
                       const boost::system::error_code& ec, std::chrono::steady_clock::time_point began);

/// An acquisition (or re-entry) came to `outcome`: on_acquire_result, then
/// its span; `last`: its latest round's tally, of `masters`.
void report_acquisition(observer& obs, const acquire_outcome& outcome, std::size_t masters, round_tally last);

}  // namespace redlock::detail
