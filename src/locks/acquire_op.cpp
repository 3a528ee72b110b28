// SPDX-License-Identifier: Apache-2.0
// The acquisition loop of every lock kind (docs/algorithm.md, sections 2, 9
// to 11): an attempt is one quorum round (plus the fence raise when fenced);
// a failed attempt is released where it may have applied, then retried after
// a jittered delay that a release announcement cuts short (acquire_wake.cpp),
// until the wait or the attempts run out. The fence raise is in
// acquire_fence.cpp, the entry point (and re-entries) in acquire_start.cpp,
// the win and late grants in acquire_win.cpp.
#include "acquire_op.hpp"
#include "adopt.hpp"
#include "kinds.hpp"
#include "retry_policy.hpp"

#include <redlock/error.hpp>
#include <redlock/observer.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>

namespace redlock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

void acquire_op::start() {
  auto slot = asio::get_associated_cancellation_slot(handler_);
  if (slot.is_connected()) {
    slot.assign([weak = weak_from_this(), strand = client_->strand](asio::cancellation_type) {
      asio::post(strand, [weak] {
        if (auto self = weak.lock()) self->cancel();
      });
    });
  }
  started_ = std::chrono::steady_clock::now();
  wait_deadline_ = started_ + options_.wait;
  // A mutex acquisition that may wait goes on the masters' wake list when
  // refused, so that a release wakes it alone (section 10).
  bool may_wait = options_.max_attempts == 0 ? options_.wait.count() > 0 : options_.max_attempts > 1;
  // (Names held together have no wake list: their waiters retry on the timer.)
  if (!is_hash_kind() && may_wait && !holds_names_together() && !is_rw())
    waiter_id_ = client_->client_id + ":" + std::to_string(client_->next_request_id++);
  // A writer that may wait puts its mark up when refused, so that new
  // readers wait for it (section 15).
  if (options_.kind == lock_kind::write && may_wait)
    writer_mark_ = client_->client_id + ":" + std::to_string(client_->next_request_id++);
  // Our own release of this lock listed us behind the waiter it woke:
  // wait under that entry (section 10).
  std::optional<client_impl::listing> listed;
  if (options_.kind == lock_kind::mutex && !waiter_id_.empty()) listed = client_->claim_listing(key_);
  if (listed) {
    waiter_id_ = std::move(listed->entry.id);
    queue_score_ = listed->entry.score;
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
  // Listed on a quorum exactly when the release named a waiter on a quorum.
  if (listed && client_->woke_waiter_just_now(key_)) return wait_behind_woken(*listed);
  attempt();
}

// In line behind the waiter our release woke, listed by that release on a
// quorum: as after a round that joined the line (retry_or_fail), without
// the round.
void acquire_op::wait_behind_woken(const client_impl::listing& listed) {
  client_->note_reasked(key_);
  joined_line_ = true;
  listed_until_ = listed.sent_at + listed.entry.lapse / 2;
  phase_ = phase::attempting;
  joins_line_ = true;
  retry_or_fail(make_error_code(errc::not_acquired));
}

void acquire_op::attempt() {
  if (client_->stopped) return complete(errc::shutting_down, {});
  phase_ = phase::attempting;
  // This client's release of the lock has just woken a waiter: a first
  // attempt now would race that waiter for the masters' votes, and one of
  // the two would fail (and clean up). Join the line behind it instead; a
  // release names us in turn. Not an attempt: it cannot take the lock.
  joins_line_ = attempts_ == 0 && !joined_line_ && options_.kind == lock_kind::mutex && !waiter_id_.empty() &&
                client_->woke_waiter_just_now(key_);
  joined_line_ = joined_line_ || joins_line_;
  if (joins_line_) {
    watch_releases();  // it will wait: listen while the round runs
    // Seen asking again at once: the next such release lists us itself.
    client_->note_reasked(key_);
  }
  if (!joins_line_) {
    ++attempts_;
    if (auto& obs = client_->options.observer) obs->on_acquire_attempt(name_, attempts_);
  }
  if (!is_hash_kind()) token_ = client_->new_token();
  // A read-write hold is the field '<r|w>:<token>' of the lock's hash; a
  // set's token says it is one, so a release by it that names one name is
  // refused rather than free part of the set (adopt.hpp).
  if (is_rw()) token_.insert(0, options_.kind == lock_kind::read ? "r:" : "w:");
  if (holds_names_together()) token_.insert(0, set_token_prefix);
  acquire_request req{options_.kind, key_, token_, options_.ttl, options_.fenced, false, queue_score_,
                      options_.queue_timeout};
  req.join_line_only = joins_line_;
  // Reentrant, fair: each master keeps the id of the request that took our
  // hold there, so that clean-ups of older requests cannot touch it.
  if (is_hash_kind()) req.hold_id = latest_request_ = client_->next_request_id++;
  req.may_be_handed = may_be_handed_the_lock();
  // A woken mutex waiter that is still on a quorum of wake lists retries
  // with the plain SET NX PX: the lock is the same key either way, and the
  // script's only extra, listing it, is done. A release names it again
  // while its entries live; the release of the hold it wins this way takes
  // them down (mutex_release.lua). About a third of a contended section's
  // script calls (redlock-bench contended).
  plain_retry_ = !joins_line_ && woken_ && !waiter_id_.empty() && options_.kind == lock_kind::mutex &&
                 !options_.fenced && !described() && client_->now() < listed_until_;
  woken_ = false;
  req.waiter = plain_retry_ ? std::string_view() : std::string_view(waiter_id_);
  req.description = options_.description;
  req.waiter_lapse = wake_list_lapse(options_, client_->options.node_timeout);
  req.keys = keys_;
  req.writer_mark = writer_mark_;
  if (is_semaphore()) {
    req.permits = options_.permits;
    req.first_slot = first_slot_ =
        attempts_ == 1 && retake_slot_ ? *retake_slot_ : client_->random_below(options_.permits);
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
  if (!is_hash_kind())
    round->on_late_reply([self = shared_from_this(), token = late_grant_token(token_.data(), token_.size()),
                          attempt = attempts_, first_slot = first_slot_](std::uint32_t node, const node_outcome& said) {
      bool unanswered = said.state == node_state::unknown && self->is_semaphore();
      if (said.state == node_state::locked || unanswered)
        self->on_late_grant(node, said, std::string_view(token.data(), token.size()), attempt, first_slot);
      // A refusal that comes after we stopped waiting put us back on that
      // master's wake list: leave it, or releases there would keep naming
      // us (and only us) until the entry lapsed.
      if (said.state == node_state::refused && self->phase_ == phase::done)
        leave_wake_list(self->client_, self->key_, self->waiter_id_, {node});
    });
  // A fair poll that fails is only followed by waiting in line: hear every
  // master first, so that cleaning up does not release (and so void the
  // hand-over terms, see on_handed) where it was merely queued.
  if (poll_id) round->settle_failure();
  round->start();
  if (poll_id) handover_.note_poll(poll_id, round->started_at());
}

void acquire_op::on_decided(quorum_round& f, std::uint64_t poll_id) {
  if (phase_ == phase::done) return;  // a release handed us the lock while this poll was in flight
  if (options_.report) last_round_ = node_results_of(f);
  if (!waiter_id_.empty() && !plain_retry_) {
    std::size_t refused = 0;
    for (auto& o : f.outcomes()) refused += o.state == node_state::refused;
    // Listed where it refused us, for the entry's lapse from the send time;
    // a retry lands well inside the first half of it.
    if (refused >= client_->quorum())
      listed_until_ = f.started_at() + wake_list_lapse(options_, client_->options.node_timeout) / 2;
  }
  bool won = f.decision().acquired(options_.ttl, client_->options.drift_factor, options_.min_validity);
  if (retake_slot_) {  // the first attempt of a permit asked for again at once
    client_->permit_retake_decided(key_, won && !cancelled());
    retake_slot_.reset();
  }
  error_code why;
  if (won) {
    if (cancelled()) return abandon_attempt({}, may_hold(f));
    if (is_semaphore()) won_choice_ = f.decision().winner();
    if (!options_.fenced) return acquired(f, std::nullopt);
    return start_raise(f);
  }
  if (f.succeeded()) {
    why = errc::validity_expired;
  } else {
    why = f.failure();
    if (!why) why = errc::not_acquired;
  }
  if (options_.kind == lock_kind::fair) queue_rank_ = rank_in_line(f);
  if (may_be_handed_the_lock() && !cancelled()) {
    // The masters this poll won and those a release handed us the lock on
    // may make a quorum together (a master counts only if we have not
    // released there since this poll was sent).
    for (std::uint32_t i = 0; i < f.outcomes().size(); ++i)
      if (f.outcomes()[i].state == node_state::locked) handover_.poll_granted(i, poll_id, f.started_at());
    if (won_by_hand_over()) return;
  }
  abandon_attempt(why, may_hold(f));
}

// ---- failure, retry ------------------------------------------------------
// Failed (or cancelled) attempt: release now on every master that did not
// refuse it, including the ones that did not answer (their SET may still
// apply; FIFO order on the connection puts our release after it). Then
// retry or give up.
void acquire_op::abandon_attempt(error_code why, std::vector<std::uint32_t> nodes) {
  abandoned_attempt_ = attempts_;
  // Grants a release handed us are given back too.
  if (may_be_handed_the_lock()) {
    for (auto i : handover_.counted())
      if (std::find(nodes.begin(), nodes.end(), i) == nodes.end()) nodes.push_back(i);
    handover_.forget(nodes, client_->next_request_id);
  }
  if (is_semaphore())
    release_permits(client_, key_, options_.permits, std::nullopt, token_, described(), nodes);
  else if (holds_names_together() && !nodes.empty())
    release_all_round(client_, keys_, token_, described(), [](quorum_round&) {})->start_on(nodes);
  else if (!holds_names_together())
    release_abandoned(client_, options_.kind, key_, token_, latest_request_, described(), nodes);
  if (cancelled()) return complete(asio::error::operation_aborted, {});
  retry_or_fail(why);
}

void acquire_op::retry_or_fail(error_code why) {
  bool count_ok = options_.max_attempts == 0 ? options_.wait.count() > 0 : attempts_ < options_.max_attempts;
  // Errors that retrying cannot fix end the wait at once.
  bool permanent = why == errc::wrong_type || why == errc::auth_failed || why == errc::bad_database ||
                   why == errc::permits_mismatch;
  auto delay = fair_backoff(client_->jittered(options_.retry_delay, options_.retry_jitter), queue_rank_, options_);
  if (options_.wait.count() > 0) {
    auto remaining = wait_deadline_ - std::chrono::steady_clock::now();
    if (remaining <= std::chrono::steady_clock::duration::zero()) count_ok = false;
    delay = std::min(delay, std::chrono::duration_cast<std::chrono::milliseconds>(remaining));
  }
  // A round that only joined the line was no attempt: one real attempt
  // follows, even when the wait ran out meanwhile.
  if (joins_line_) count_ok = true;
  if (!count_ok || permanent) return finish_failed(why);
  watch_releases();
  // Released while this attempt was in flight: its refusal may predate the
  // release, so try again now rather than after the delay.
  if (phase_ == phase::attempting_woken) delay = milliseconds(0);
  // Joined the line behind a woken waiter: it has one node timeout to take
  // the lock. If it never does (it died or gave up, or the masters named
  // different waiters and so woke none), the lock is not left free for a
  // whole retry delay; if it does, this try is refused and keeps us listed.
  if (joins_line_) delay = std::min(delay, client_->options.node_timeout);
  // A refused plain retry listed nothing: the wake-list entries it relied on
  // live on only until listed_until_ (a release's listing of its own client
  // for four node timeouts, far less than a retry delay). Try again (with
  // the script, which lists it for its own lapse) before they lapse, or a
  // release after that names no one and this waiter sleeps out its delay
  // with the lock free.
  if (plain_retry_) {
    auto listed_for = std::chrono::duration_cast<milliseconds>(listed_until_ - client_->now());
    delay = std::max(milliseconds(0), std::min(delay, listed_for));
  }
  if (!timer_) timer_.emplace(client_->strand);
  timer_->expires_after(delay);
  phase_ = phase::waiting;
  timer_->async_wait([self = shared_from_this()](error_code) {
    switch (self->phase_) {
      case phase::done: return;  // handed the lock while waiting
      case phase::cancelled: return self->complete(asio::error::operation_aborted, {});
      default: return self->attempt();
    }
  });
}

// A plain SET NX cannot tell someone else's data from someone else's lock:
// before reporting "not acquired", look at the key's type.
void acquire_op::finish_failed(error_code why) {
  if (why != errc::not_acquired || options_.kind != lock_kind::mutex || options_.fenced || holds_names_together())
    return complete(why, {});
  check_key_types(client_, key_, [self = shared_from_this(), why](bool wrong_type) {
    self->complete(wrong_type ? make_error_code(errc::wrong_type) : why, {});
  });
}

void acquire_op::complete(error_code ec, lock l) {
  if (phase_ == phase::done) return;
  phase_ = phase::done;
  if (watch_id_) client_->listener->unwatch(channel_, watch_id_);
  // A fair waiter that gives up must not stay in the queue, nor keep a
  // hold a release handed it that it did not count; it passes the lock on.
  if (ec && options_.kind == lock_kind::fair)
    release_round(client_, options_.kind, key_, token_, latest_request_, true, release_wake::first_waiter,
                  described(), key_, [](quorum_round&) {})
        ->start();
  // A mutex waiter that gives up leaves the wake list, so releases stop
  // waking it (a crashed one lapses instead); a writer takes its mark down.
  if (ec) leave_wake_list(client_, key_, waiter_id_, client_->masters->all());
  if (ec && !writer_mark_.empty())
    rw_release_round(client_, key_, token_, writer_mark_, false, [](quorum_round&) {})->start();
  if (auto& report = options_.report) {
    report->attempts = attempts_;
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
                            attempts_};
    if (release_heard_) outcome.since_release = std::chrono::duration_cast<microseconds>(now - *release_heard_);
    obs->on_acquire_result(outcome);
  }
  auto slot = asio::get_associated_cancellation_slot(handler_);
  if (slot.is_connected()) slot.clear();
  complete_handler(client_, std::move(handler_), ec, std::move(l));
  if (!owner_line_.empty()) end_owner_line(client_, owner_line_);
}

}  // namespace redlock::detail
