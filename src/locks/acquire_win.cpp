// SPDX-License-Identifier: Apache-2.0
// What an attempt that won becomes (docs/algorithm.md, sections 2, 8, 10
// and 12): the hold, with its wake-list entries and a semaphore's stray
// slots given back; and what a grant that comes after its attempt was
// decided is worth (kept when part of the hold, else given back).
#include "acquire_op.hpp"
#include "hold.hpp"
#include "kinds.hpp"

namespace redlock::detail {

std::string acquire_op::held_key(const quorum_round& won) const {
  if (!is_semaphore()) return key_;
  return keys::permit(key_, permit_slot(first_slot_, options_.permits, won.decision().winner()));
}

// `fence` is the T that was raised: never recompute it from the acquisition
// round, whose late replies may carry larger counters nobody raised.
void acquire_op::acquired(const quorum_round& f, std::optional<std::uint64_t> fence) {
  // Where our wake list entry may have outlived the win: masters that said
  // no, and those whose answer we never read (an error, a deadline passed),
  // whose script may have refused and listed us all the same.
  std::vector<std::uint32_t> may_list_us;
  for (std::uint32_t i = 0; i < f.outcomes().size(); ++i)
    if (may_have_listed(f.outcomes()[i].state)) may_list_us.push_back(i);
  // Won by a plain retry: every master may still list us; the release of
  // this hold takes the entries down, with no round of its own.
  if (!fsm_.plain_retry()) leave_wake_list(client_, key_, waiter_id_, may_list_us);
  if (is_semaphore()) {
    // Masters that granted another slot, or may have without saying so (an
    // error, a deadline passed), give it back. Those still to answer are
    // left to on_late_grant: most grant the won slot, and a clean-up sent to
    // each at every win was 0.4 of a script call per master per section
    // (redlock-bench semaphore). The price: a stray slot there stays taken
    // one round trip longer. A failed attempt still cleans up at once: its
    // late grants are all stray, and would refuse the client's next attempt.
    std::vector<std::uint32_t> elsewhere;
    for (std::uint32_t i = 0; i < f.outcomes().size(); ++i) {
      auto& o = f.outcomes()[i];
      bool same_slot = o.state == node_state::locked && o.choice == *won_choice_;
      if (o.state != node_state::refused && o.state != node_state::pending && !same_slot) elsewhere.push_back(i);
    }
    release_permits(client_, key_, options_.permits, permit_slot(first_slot_, options_.permits, *won_choice_), token_,
                    described(), elsewhere);
  }
  // Fair: the lines we may stand in, left once we hold (begin_holding):
  // not where this poll was granted out of line, nor where it has not
  // answered yet (on_late_poll_reply).
  std::vector<std::uint32_t> in_line_on;
  if (options_.kind == lock_kind::fair) {
    won_poll_ = fsm_.attempts();
    for (std::uint32_t i = 0; i < f.outcomes().size(); ++i) {
      auto& o = f.outcomes()[i];
      if (o.state != node_state::pending && !granted_out_of_line(o)) in_line_on.push_back(i);
    }
  }
  // Unnamed: the lock names them when read, a report when handed over.
  hold({f.decision().window_end(options_.ttl, client_->options.drift_factor), fence,
        node_answers_of(f),
        fair_win::by_poll, held_key(f), std::move(in_line_on)});
}

// A master that answers the winning poll only after the win: we may stand
// in line there (queued, granted in line, or it may have run unanswered),
// unless it granted us out of line. Leave that line, as begin_holding did
// on the others; once our release is asked, it leaves every line itself.
void acquire_op::on_late_poll_reply(std::uint32_t node, const node_outcome& said, unsigned attempt) {
  if (attempt != won_poll_ || granted_out_of_line(said)) return;
  auto held = held_.lock();
  if (!held || held->released) return;
  leave_queue(client_, held->key, held->token, held->hold_id(), std::nullopt, {}, {node}, [](quorum_round&) {});
}

kind_fields acquire_op::held_fields() const {
  if (is_owner_kind(options_.kind)) return owner_fields{latest_request_};
  if (is_semaphore())
    return permit_fields{permit_slot(first_slot_, options_.permits, *won_choice_), options_.permits, key_};
  if (is_rw_kind(options_.kind)) return rw_fields{writer_mark_};
  if (holds_names_together())
    return set_fields{names_, keys_, options_.fenced ? fences_ : std::vector<std::uint64_t>{}};
  return mutex_fields{fsm_.plain_retry() ? waiter_id_ : std::string()};
}

void acquire_op::hold(win w) {
  if (options_.report) last_round_ = unnamed_results(w.answers);
  last_tally_ = tally(w.answers);  // a hand-over's, when a release handed it to us
  auto key = w.key.empty() ? key_ : std::move(w.key);
  auto state = new_lock_state(*client_, options_,
                              {name_, std::move(key), std::move(token_), held_fields(), w.valid_until, w.fence,
                               std::move(w.answers)});
  held_ = state;
  begin_holding(client_, state, options_, w.how, std::move(w.in_line_on));
  complete({}, lock_access::make(std::move(state)));
}

// A grant that arrived after its attempt's round was decided. Kept only
// when it is part of a hold still held (the won slot, for a semaphore):
// given back when its attempt was abandoned, or its hold already released
// (or dropped: nobody can release or extend it any more; the quorum's keys
// still run to their TTL). An abandoned attempt's clean-up and a hold's
// release were sent to this master after the attempt, on the same
// connection (a reply came, so it was not replaced; and a live connection
// writes every clean-up, whatever its pending limit: connection::send):
// they run after this grant there and nothing more is sent, unless the
// grant came from the EVAL re-sent after NOSCRIPT, which may have run after
// them, or is another slot than the released one. (Sending it anyway was two one-master rounds
// per uncontended pair: the masters a quorum did not wait for answer after
// the caller has released.)
void acquire_op::on_late_grant(std::uint32_t node, const node_outcome& said, std::string_view attempt_token,
                               unsigned attempt, unsigned first_slot) {
  bool abandoned = attempt <= abandoned_attempt_;
  auto held = held_.lock();
  bool let_go = abandoned || (fsm_.done() && (!held || held->released));
  // Already taken care of: an abandoned attempt's clean-up and a hold's
  // release ran after the grant; a dropped hold's keys run to their TTL
  // (a handle gone without a release cannot be told from one released).
  bool covered = let_go && said.state == node_state::locked && !said.fell_back;
  if (!is_semaphore()) {
    if (!let_go || covered) return;
    give_back({node}, std::string(attempt_token), 0);
    return;
  }
  std::optional<unsigned> granted;  // none: unanswered, any slot but the won one may be ours there
  if (said.state == node_state::locked) granted = permit_slot(first_slot, options_.permits, said.choice);
  std::optional<unsigned> won;
  if (won_choice_) won = permit_slot(first_slot, options_.permits, *won_choice_);
  // An abandoned attempt's clean-up gave back every slot of ours there; a
  // released hold's release, the won slot.
  if (covered && (abandoned || granted == won)) return;
  if (let_go) won.reset();
  if (!granted || won != granted)
    release_permits(client_, key_, options_.permits, won, std::string(attempt_token), described(), {node});
}

}  // namespace redlock::detail
