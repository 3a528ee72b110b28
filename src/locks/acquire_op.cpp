// SPDX-License-Identifier: Apache-2.0
// The acquisition loop of every lock kind, driven by acquire_fsm
// (docs/algorithm.md, sections 2, 9 to 15): an attempt is one quorum round
// (plus the fence raise when fenced); a failed attempt is released where it
// may have applied, then retried after a jittered delay that a release
// announcement cuts short (acquire_wake.cpp), until the wait or the
// attempts run out. The machine decides; this file sends, waits and tells
// it what happened.
#include "acquire_op.hpp"
#include "adopt.hpp"
#include "kinds.hpp"
#include "waiting/wake_ledger.hpp"

#include <redlock/error.hpp>
#include <redlock/observer.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>

namespace redlock::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using event_type = acquire_event::type;
using action_type = acquire_action::type;

acquire_terms acquire_op::terms_of(const client_impl& client, const acquire_options& options, bool together) {
  acquire_terms t;
  t.options = options;
  t.quorum = client.quorum();
  t.node_timeout = client.options.node_timeout;
  // A mutex (or semaphore) acquisition that may wait goes on the masters'
  // wake list when refused, so that a release wakes it alone (section 10).
  // (Names held together have no wake list: their waiters retry on the timer.)
  bool may_wait = options.max_attempts == 0 ? options.wait.count() > 0 : options.max_attempts > 1;
  t.listed_waiter = !is_owner_kind(options.kind) && may_wait && !together && !is_rw_kind(options.kind);
  t.checks_key_type = options.kind == lock_kind::mutex && !options.fenced && !together;
  return t;
}

void acquire_op::start() {
  auto slot = asio::get_associated_cancellation_slot(handler_);
  if (slot.is_connected()) {
    slot.assign([weak = weak_from_this(), strand = client_->strand](asio::cancellation_type) {
      asio::post(strand, [weak] {
        if (auto self = weak.lock()) self->drive(self->event(event_type::cancelled));
      });
    });
  }
  started_ = std::chrono::steady_clock::now();
  bool may_wait = options_.max_attempts == 0 ? options_.wait.count() > 0 : options_.max_attempts > 1;
  // A semaphore's waiters are marked 'p': a mutex's waiters on the same name
  // share its wake list, and only a permit's waiter may have the last free
  // permit kept for it (semaphore_acquire.lua).
  if (fsm_.terms().listed_waiter)
    waiter_id_ = client_->client_id + (is_semaphore() ? ":p" : ":") + std::to_string(client_->next_request_id++);
  // A writer that may wait puts its mark up when refused, so that new
  // readers wait for it (section 15).
  if (options_.kind == lock_kind::write && may_wait)
    writer_mark_ = client_->client_id + ":" + std::to_string(client_->next_request_id++);
  auto e = event(event_type::started);
  if (options_.kind == lock_kind::mutex && !waiter_id_.empty()) {
    e.releaser_woke_waiter = client_->woke_waiter_just_now(key_);
    // Our own release of this lock listed us behind the waiter it woke:
    // wait under that entry (section 10), as after a round that joined the
    // line. Listed on a quorum exactly when the release named a waiter on a
    // quorum.
    if (auto listed = client_->claim_listing(key_)) {
      waiter_id_ = std::move(listed->entry.id);
      queue_score_ = listed->entry.score;
      e.listed_until = listed->listed_until();
      if (e.releaser_woke_waiter) client_->note_reasked(key_);
    }
  }
  // Asking for a permit again at once: the slot we just gave back is the
  // one to try first, and the wake-up our release held back waits for that
  // attempt (dropped if it wins, sent if not).
  if (is_semaphore()) retake_slot_ = client_->note_permit_asked(key_);
  // Listen from the first attempt when that is free (this client waited on
  // this lock moments ago): a release, or a hand-over, may come before the
  // first attempt has even failed. Otherwise only once it has.
  // (Spelling the channel out costs an allocation: not when none is.)
  if (client_->listener->subscribed_any() && client_->listener->subscribed(release_channel())) watch_releases();
  drive(e);
}

acquire_event acquire_op::event(event_type what) const {
  acquire_event e;
  e.what = what;
  e.now = client_->now();
  e.real_now = std::chrono::steady_clock::now();
  e.client_stopped = client_->stopped;
  // Only the decisions that may wait need a delay (one draw each).
  if (what == event_type::started || what == event_type::cleaned_up)
    e.jittered_delay = client_->jittered(options_.retry_delay, options_.retry_jitter);
  return e;
}

void acquire_op::drive(acquire_event e) {
  for (auto a = (fed_ = e.what, fsm_.resume(e));;) {
    switch (a.what) {
      case action_type::none: return;
      case action_type::attempt: return send_attempt(a);
      case action_type::raise_fence: return start_raise(*attempt_round_);
      case action_type::hold:
        if (fed_ == event_type::handed_over) return hold_handed();
        return acquired(*attempt_round_, raised_fence_);
      case action_type::clean_up:
        if (fed_ == event_type::handed_over)
          abandon_handed();
        else
          abandon_attempt(may_hold(*attempt_round_));
        e = event(event_type::cleaned_up);
        fed_ = e.what;
        a = fsm_.resume(e);
        continue;
      case action_type::wait: return wait_for(a.delay);
      case action_type::cancel_timer:
        if (timer_) timer_->cancel();  // its completion is timer_fired
        return;
      case action_type::check_key_type:
        // A plain SET NX cannot tell someone else's data from someone
        // else's lock: the masters say what is under the name.
        return check_key_types(client_, key_, [self = shared_from_this()](bool wrong_type) {
          auto checked = self->event(event_type::key_type_checked);
          checked.wrong_type = wrong_type;
          self->drive(checked);
        });
      case action_type::complete: return complete(a.ec, {});
    }
  }
}

void acquire_op::send_attempt(const acquire_action& a) {
  if (a.join_line_only) {
    watch_releases();  // it will wait: listen while the round runs
    // Seen asking again at once: the next such release lists us itself.
    client_->note_reasked(key_);
  }
  if (a.counted)
    if (auto& obs = client_->options.observer) obs->on_acquire_attempt(name_, fsm_.attempts());
  if (!is_owner_kind(options_.kind)) token_ = client_->new_token();
  // A read-write hold is the field '<r|w>:<token>' of the lock's hash; a
  // set's token says it is one, so a release by it that names one name is
  // refused rather than free part of the set (adopt.hpp).
  if (is_rw_kind(options_.kind)) token_.insert(0, options_.kind == lock_kind::read ? "r:" : "w:");
  if (holds_names_together()) token_.insert(0, set_token_prefix);
  acquire_request req{options_.kind, key_, token_, options_.ttl, options_.fenced, false, queue_score_,
                      options_.queue_timeout};
  req.join_line_only = a.join_line_only;
  // Reentrant, fair: each master keeps the id of the request that took our
  // hold there, so that clean-ups of older requests cannot touch it.
  if (is_owner_kind(options_.kind)) req.hold_id = latest_request_ = client_->next_request_id++;
  req.may_be_handed = may_be_handed_the_lock();
  // A plain retry (acquire_fsm): the key alone, no listing.
  req.waiter = a.plain ? std::string_view() : std::string_view(waiter_id_);
  req.description = options_.description;
  req.waiter_lapse = wake_list_lapse(options_, client_->options.node_timeout);
  req.keys = keys_;
  req.writer_mark = writer_mark_;
  const unsigned attempt = fsm_.attempts();
  if (is_semaphore()) {
    req.permits = options_.permits;
    // By then a waiter has missed at least one retry of its own.
    req.reserve_after = options_.retry_delay + options_.retry_jitter;
    req.first_slot = first_slot_ =
        attempt == 1 && retake_slot_ ? *retake_slot_ : client_->random_below(options_.permits);
  }
  std::uint64_t poll_id = req.may_be_handed ? req.hold_id : 0;
  auto round = acquire_round(client_, req, [self = shared_from_this(), poll_id](quorum_round& f) {
    self->on_decided(f, poll_id);
  });
  // A grant that lands after this attempt was abandoned must be released
  // again: the first release may have run before it on that master. Only
  // for the token kinds, whose token is new at every attempt. A reentrant or
  // fair attempt's abandonment release already runs after the grant on the
  // same connection (FIFO); had the connection been replaced, this reply
  // would never have come. A semaphore's late grant of another slot than
  // the one the attempt won is released too, and so is whatever a master
  // that never answered a won attempt may have granted (acquired() leaves
  // the masters still to answer to this, rather than clean up at each win).
  if (!is_owner_kind(options_.kind))
    round->on_late_reply([self = shared_from_this(), token = late_grant_token(token_.data(), token_.size()), attempt,
                          first_slot = first_slot_](std::uint32_t node, const node_outcome& said) {
      bool unanswered = said.state == node_state::unknown && self->is_semaphore();
      if (said.state == node_state::locked || unanswered)
        self->on_late_grant(node, said, std::string_view(token.data(), token.size()), attempt, first_slot);
      // A refusal that comes after we stopped waiting put us back on that
      // master's wake list: leave it, or releases there would keep naming
      // us (and only us, and a semaphore's last free slot is kept for us)
      // until the entry lapsed. So may an answer we never read.
      if (may_have_listed(said.state) && self->fsm_.done())
        leave_wake_list(self->client_, self->key_, self->waiter_id_, {node});
    });
  else if (options_.kind == lock_kind::fair)
    round->on_late_reply([self = shared_from_this(), attempt](std::uint32_t node, const node_outcome& said) {
      self->on_late_poll_reply(node, said, attempt);
    });
  // A fair poll that fails is only followed by waiting in line: hear every
  // master first, so that cleaning up does not release (and so void the
  // hand-over terms, see on_handed) where it was merely queued.
  if (poll_id) round->settle_failure();
  round->start();
  if (poll_id) handover_.note_poll(poll_id, round->started_at());
}

void acquire_op::on_decided(quorum_round& f, std::uint64_t poll_id) {
  if (fsm_.done()) return;  // a release handed us the lock while this poll was in flight
  if (options_.report) last_round_ = node_votes_of(f);
  last_tally_ = tally(f.outcomes());
  bool won = f.decision().acquired(options_.ttl, client_->options.drift_factor, options_.min_validity);
  if (retake_slot_) {  // the first attempt of a permit asked for again at once
    client_->permit_retake_decided(key_, won && !fsm_.cancelled());
    retake_slot_.reset();
  }
  if (won && is_semaphore()) won_choice_ = f.decision().winner();
  if (!won && may_be_handed_the_lock() && !fsm_.cancelled()) {
    // The masters this poll won and those a release handed us the lock on
    // may make a quorum together (a master counts only if we have not
    // released there since this poll was sent).
    for (std::uint32_t i = 0; i < f.outcomes().size(); ++i)
      if (f.outcomes()[i].state == node_state::locked) handover_.poll_granted(i, poll_id, f.started_at());
    if (won_by_hand_over()) return;
  }
  auto e = event(event_type::round_decided);
  e.round = {won, f.succeeded(), f.failure(), 0, f.started_at()};
  for (auto& o : f.outcomes()) e.round.refused += o.state == node_state::refused;
  if (options_.kind == lock_kind::fair) e.queue_rank = rank_in_line(f);
  decide_on(f, e);
}

void acquire_op::decide_on(const quorum_round& attempt, const acquire_event& e) {
  // Held only while its actions are carried out: the round's callbacks hold
  // this operation.
  attempt_round_.reset(&attempt);
  drive(e);
  attempt_round_.reset();
}

// ---- failure, waiting ---------------------------------------------------
// A failed (or cancelled) attempt is released on every master that did not
// refuse it, including the ones that did not answer (their SET may still
// apply; FIFO order on the connection puts our release after it).
void acquire_op::abandon_attempt(std::vector<std::uint32_t> nodes) {
  abandoned_attempt_ = fsm_.attempts();
  // Grants a release handed us are given back too.
  if (may_be_handed_the_lock()) {
    for (auto i : handover_.counted())
      if (std::find(nodes.begin(), nodes.end(), i) == nodes.end()) nodes.push_back(i);
    handover_.forget(nodes, client_->next_request_id);
  }
  // A fair waiter giving back a handed hold goes back in line there, or a
  // later caller would be granted that master before it (issue 35).
  fair_place place{queue_score_, options_.queue_timeout};
  give_back(nodes, token_, latest_request_, options_.kind == lock_kind::fair ? &place : nullptr);
}

void acquire_op::give_back(const std::vector<std::uint32_t>& nodes, const std::string& token, std::uint64_t hold_id,
                           const fair_place* keeps_place) {
  clean_up_attempt(client_, options_.kind, {key_, keys_, token, hold_id, described(), options_.permits, keeps_place},
                   nodes);
}

void acquire_op::wait_for(milliseconds delay) {
  watch_releases();
  if (!timer_) timer_.emplace(client_->strand);
  timer_->expires_after(delay);
  // Expired, or cut short by a release or a cancellation: the machine decides.
  timer_->async_wait([self = shared_from_this()](error_code) { self->drive(self->event(event_type::timer_fired)); });
}

void acquire_op::complete(error_code ec, lock l) {
  if (completed_) return;
  completed_ = true;
  if (watch_id_) client_->listener->unwatch(channel_, watch_id_);
  // A fair waiter that gives up must not stay in the queue, nor keep a
  // hold a release handed it that it did not count; it passes the lock on.
  if (ec && options_.kind == lock_kind::fair)
    owner_release_round(client_, key_, token_, latest_request_, true, release_wake::first_waiter, described(),
                        nullptr, [](quorum_round&) {})
        ->start();
  // A mutex waiter that gives up leaves the wake list, so releases stop
  // waking it (a crashed one lapses instead); a writer takes its mark down.
  if (ec) leave_wake_list(client_, key_, waiter_id_, client_->masters->all());
  if (ec && !writer_mark_.empty())
    rw_release_round(client_, key_, token_, writer_mark_, false, [](quorum_round&) {})->start();
  if (auto& report = options_.report) {
    report->attempts = fsm_.attempts();
    report->last_attempt = std::move(last_round_);
    // Named once, here: every round's results were kept unnamed (the sync
    // client asks for a report at every acquisition, and uses it only when
    // one fails).
    client_->name_nodes(report->last_attempt);
  }
  if (auto& obs = client_->options.observer) {
    using std::chrono::microseconds;
    auto now = std::chrono::steady_clock::now();
    acquire_outcome outcome{name_, options_.kind, ec, std::chrono::duration_cast<microseconds>(now - started_),
                            fsm_.attempts()};
    if (release_heard_) outcome.since_release = std::chrono::duration_cast<microseconds>(now - *release_heard_);
    report_acquisition(*obs, outcome, client_->masters->size(), last_tally_);
  }
  auto slot = asio::get_associated_cancellation_slot(handler_);
  if (slot.is_connected()) slot.clear();
  complete_handler(client_, std::move(handler_), ec, std::move(l));
  if (!owner_line_.empty()) end_owner_line(client_, owner_line_);
}

}  // namespace redlock::detail
