// SPDX-License-Identifier: Apache-2.0
#include "report.hpp"

namespace redlock::detail {

namespace {
template <typename Answers>
round_tally count(const Answers& answers) {
  round_tally t;
  for (auto& a : answers) {
    t.answered += a.state == node_state::locked || a.state == node_state::refused;
    t.granted += a.state == node_state::locked;
  }
  return t;
}
}  // namespace

round_tally tally(std::span<const node_outcome> outcomes) { return count(outcomes); }
round_tally tally(const node_answers& answers) { return count(answers); }

void report_span(observer& obs, span s, std::chrono::steady_clock::time_point began) {
  auto took = std::chrono::steady_clock::now() - began;
  s.duration = std::chrono::duration_cast<std::chrono::microseconds>(took);
  // The wall clock at the start, as tracers want it: now less what it took
  // by the steady clock (a wall clock step during the span is not seen).
  s.start = std::chrono::system_clock::now() - std::chrono::duration_cast<std::chrono::system_clock::duration>(took);
  if (s.outcome.empty()) s.outcome = error_word(s.error);
  obs.on_span(s);
}

void report_round_span(observer& obs, span_kind what, const lock_state& state, const quorum_round& round,
                       const boost::system::error_code& ec, std::chrono::steady_clock::time_point began) {
  auto t = tally(round.outcomes());
  span s;
  s.what = what;
  s.name = state.name;
  s.kind = state.kind;
  s.error = ec;
  s.masters = static_cast<unsigned>(round.outcomes().size());
  s.answered = t.answered;
  s.granted = t.granted;
  report_span(obs, s, began);
}

void report_acquisition(observer& obs, const acquire_outcome& outcome, std::size_t masters, round_tally last) {
  obs.on_acquire_result(outcome);
  span s;
  s.what = span_kind::acquire;
  s.name = outcome.name;
  s.kind = outcome.kind;
  s.error = outcome.error;
  s.masters = static_cast<unsigned>(masters);
  s.answered = last.answered;
  s.granted = last.granted;
  s.attempts = outcome.attempts;
  report_span(obs, s, std::chrono::steady_clock::now() - outcome.took);
}

void lock_state::end_hold(hold_end how, lost_reason why) {
  if (!hold_observer || hold_over.exchange(true)) return;
  auto held_for = std::chrono::steady_clock::now() - held_since;
  hold_outcome outcome{name, kind, how, why, std::chrono::duration_cast<std::chrono::microseconds>(held_for)};
  hold_observer->on_hold_end(outcome);
  auto t = tally(answers);
  span s;
  s.what = span_kind::hold;
  s.name = name;
  s.kind = kind;
  s.outcome = ended_word(outcome);
  s.masters = static_cast<unsigned>(answers.size());
  s.answered = t.answered;
  s.granted = t.granted;
  report_span(*hold_observer, s, held_since);
}

}  // namespace redlock::detail
