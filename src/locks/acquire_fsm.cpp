// SPDX-License-Identifier: Apache-2.0
#include "acquire_fsm.hpp"

#include "retry_policy.hpp"
#include "waiting/wake_ledger.hpp"

#include <redlock/error.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>

namespace redlock::detail {

using boost::system::error_code;
using action = acquire_action;

acquire_action acquire_fsm::resume(const acquire_event& e) {
  using t = acquire_event::type;
  if (phase_ == phase::done) return {};  // e.g. a poll decided after a hand-over won
  switch (e.what) {
    case t::started: {
      started_ = true;
      wait_deadline_ = e.real_now + terms_.options.wait;
      // Our own release listed us behind the waiter it woke, on a quorum:
      // wait as after a round that joined the line, without the round.
      if (e.listed_until && e.releaser_woke_waiter) {
        joined_line_ = joins_line_ = true;
        listed_until_ = *e.listed_until;
        why_ = errc::not_acquired;
        return retry_or_fail(e);
      }
      return attempt(e);
    }
    case t::round_decided:
      return decided(e);
    case t::fence_raised:
      return raised(e);
    case t::cleaned_up:
      if (cancelled_) return complete(boost::asio::error::operation_aborted);
      return retry_or_fail(e);
    case t::timer_fired:
      if (phase_ != phase::waiting) return {};
      if (cancelled_) return complete(boost::asio::error::operation_aborted);
      return attempt(e);
    case t::release_heard:
      woken_ = true;
      if (phase_ == phase::waiting) return {action::type::cancel_timer};  // the timer's completion retries
      // Mid-attempt or mid-clean-up: the refusal may predate the release,
      // so the retry after the clean-up goes at once.
      if (phase_ == phase::attempting || phase_ == phase::cleaning_up) phase_ = phase::attempting_woken;
      return {};
    case t::handed_over:
      if (cancelled_) return clean_up(boost::asio::error::operation_aborted);
      phase_ = phase::done;
      return {action::type::hold};
    case t::cancelled:
      if (cancelled_) return {};
      cancelled_ = true;
      if (phase_ == phase::waiting) return {action::type::cancel_timer};
      return {};
    case t::key_type_checked:
      return complete(e.wrong_type ? make_error_code(errc::wrong_type) : why_);
  }
  return {};
}

acquire_action acquire_fsm::attempt(const acquire_event& e) {
  if (e.client_stopped) return complete(errc::shutting_down);
  phase_ = phase::attempting;
  const auto& o = terms_.options;
  // This client's release of the lock has just woken a waiter: a first
  // attempt now would race that waiter for the masters' votes, and one of
  // the two would fail (and clean up). Join the line behind it instead; a
  // release names us in turn. Not an attempt: it cannot take the lock.
  joins_line_ = attempts_ == 0 && !joined_line_ && o.kind == lock_kind::mutex && terms_.listed_waiter &&
                e.releaser_woke_waiter;
  joined_line_ = joined_line_ || joins_line_;
  if (!joins_line_) ++attempts_;
  // A woken mutex waiter still on a quorum of wake lists retries with the
  // plain SET NX PX: the lock is the same key either way, and the script's
  // only extra, listing it, is done. A release names it again while its
  // entries live; the release of the hold it wins this way takes them down.
  plain_ = !joins_line_ && woken_ && terms_.listed_waiter && o.kind == lock_kind::mutex && !o.fenced &&
           o.description.empty() && e.now < listed_until_;
  woken_ = false;
  action a{action::type::attempt};
  a.join_line_only = joins_line_;
  a.plain = plain_;
  a.counted = !joins_line_;
  return a;
}

acquire_action acquire_fsm::decided(const acquire_event& e) {
  const auto& r = e.round;
  // Listed where it refused us, for the entry's lapse from the send time; a
  // retry lands well inside the first half of it.
  if (terms_.listed_waiter && !plain_ && r.refused >= terms_.quorum)
    listed_until_ = r.started_at + wake_list_lapse(terms_.options, terms_.node_timeout) / 2;
  queue_rank_ = e.queue_rank;
  if (r.won) {
    if (cancelled_) return clean_up({});
    if (terms_.options.fenced) return {action::type::raise_fence};
    phase_ = phase::done;
    return {action::type::hold};
  }
  error_code why = r.quorum ? make_error_code(errc::validity_expired) : r.failure;
  if (!why) why = errc::not_acquired;
  return clean_up(why);
}

acquire_action acquire_fsm::raised(const acquire_event& e) {
  if (e.round.won) {
    if (cancelled_) return clean_up({});
    phase_ = phase::done;
    return {action::type::hold};
  }
  error_code why = e.round.quorum ? make_error_code(errc::validity_expired) : e.round.failure;
  if (!why) why = errc::not_acquired;
  return clean_up(why);
}

// A failed (or cancelled) attempt: released wherever it may have applied,
// then retried or given up (cleaned_up).
acquire_action acquire_fsm::clean_up(error_code why) {
  phase_ = phase_ == phase::attempting_woken ? phase::attempting_woken : phase::cleaning_up;
  why_ = why;
  action a{action::type::clean_up};
  a.ec = why;
  return a;
}

bool acquire_fsm::permanent(const error_code& why) const {
  // Errors that retrying cannot fix end the wait at once.
  return why == errc::wrong_type || why == errc::auth_failed || why == errc::permits_mismatch ||
         why == errc::bad_database;
}

acquire_action acquire_fsm::retry_or_fail(const acquire_event& e) {
  const auto& o = terms_.options;
  bool count_ok = o.max_attempts == 0 ? o.wait.count() > 0 : attempts_ < o.max_attempts;
  auto delay = fair_backoff(e.jittered_delay, queue_rank_, o);
  if (o.wait.count() > 0) {
    auto remaining = wait_deadline_ - e.real_now;
    if (remaining <= std::chrono::steady_clock::duration::zero()) count_ok = false;
    delay = std::min(delay, std::chrono::duration_cast<milliseconds>(remaining));
  }
  // A round that only joined the line was no attempt: one real attempt
  // follows, even when the wait ran out meanwhile.
  if (joins_line_) count_ok = true;
  if (!count_ok || permanent(why_)) {
    // A plain SET NX cannot tell someone else's data from someone else's
    // lock: before reporting "not acquired", look at the key's type.
    if (why_ == errc::not_acquired && terms_.checks_key_type) {
      phase_ = phase::checking;
      return {action::type::check_key_type};
    }
    return complete(why_);
  }
  // Released while this attempt was in flight: its refusal may predate the
  // release, so try again now rather than after the delay.
  if (phase_ == phase::attempting_woken) delay = milliseconds(0);
  // Joined the line behind a woken waiter: it has one node timeout to take
  // the lock. If it never does (it died or gave up, or the masters named
  // different waiters and so woke none), the lock is not left free for a
  // whole retry delay; if it does, this try is refused and keeps us listed.
  if (joins_line_) delay = std::min(delay, terms_.node_timeout);
  // A refused plain retry listed nothing: the wake-list entries it relied on
  // live on only until listed_until_ (a release's listing of its own client
  // for four node timeouts, far less than a retry delay). Try again (with
  // the script, which lists it for its own lapse) before they lapse, or a
  // release after that names no one and this waiter sleeps out its delay
  // with the lock free.
  if (plain_) delay = std::min(delay, std::chrono::duration_cast<milliseconds>(listed_until_ - e.now));
  phase_ = phase::waiting;
  action a{action::type::wait};
  a.delay = std::max(milliseconds(0), delay);
  return a;
}

acquire_action acquire_fsm::complete(error_code ec) {
  phase_ = phase::done;
  action a{action::type::complete};
  a.ec = ec;
  return a;
}

}  // namespace redlock::detail
