// SPDX-License-Identifier: Apache-2.0
// Acquisition of every lock kind: the RedLock round, validity, the fencing
// raise round, release of failed attempts, jittered retries woken early by
// release messages, re-entry of reentrant/fair holds, and the fair queue,
// whose head a release hands the lock to (docs/algorithm.md, section 11).
#include "kinds.hpp"
#include "lease/watchdog.hpp"
#include "operations.hpp"
#include "quorum/validity.hpp"
#include "retry_policy.hpp"
#include "scripts/script.hpp"

#include <redlock/error.hpp>
#include <redlock/observer.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <deque>
#include <optional>
#include <utility>

namespace redlock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

bool is_hash_kind(lock_kind k) { return k != lock_kind::mutex; }

class acquire_op : public std::enable_shared_from_this<acquire_op> {
 public:
  acquire_op(std::shared_ptr<client_impl> client, std::string name, acquire_options options,
             std::chrono::system_clock::time_point asked_at, acquire_handler handler)
      : client_(std::move(client)),
        name_(std::move(name)),
        key_(client_->key_for(name_)),
        options_(std::move(options)),
        handler_(std::move(handler)),
        // One score for this waiter on every master, so all agree on the FIFO
        // order: microseconds since the epoch (exact in a double until 2255).
        queue_score_(static_cast<double>(
            std::chrono::duration_cast<std::chrono::microseconds>(asked_at.time_since_epoch()).count())) {
    if (is_hash_kind(options_.kind)) token_ = client_->client_id + ":" + options_.owner;
    handed_.resize(client_->nodes.size());
    first_valid_poll_.resize(client_->nodes.size());
  }

  void start() {
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
    if (is_hash_kind(options_.kind)) {
      auto it = client_->held.find(registry_key());
      if (it != client_->held.end()) held_ = it->second.lock();
      if (held_ && (held_->released || held_->holds.load() <= 0)) held_.reset();
      // A hold whose window ended (or that renewal gave up) is over for its
      // owner, whatever the masters still hold: re-entering it would stretch
      // a critical section that already ran out of time.
      if (held_ && held_->lapsed()) return complete(errc::not_held, {});
      if (held_ && options_.fenced && !held_->fence) return complete(errc::unfenced_hold, {});
    }
    // Listen from the first attempt when that is free (this client waited on
    // this lock moments ago): a release, or a hand-over, may come before the
    // first attempt has even failed. Otherwise only once it has.
    if (!held_ && client_->listener.subscribed(release_channel())) watch_releases();
    attempt();
  }

 private:
  std::string registry_key() const { return key_ + "\n" + token_; }

  void attempt() {
    if (client_->stopped) return complete(errc::shutting_down, {});
    ++attempts_;
    if (auto& obs = client_->options.observer) obs->on_acquire_attempt(name_, attempts_);
    if (options_.kind == lock_kind::mutex) token_ = client_->new_token();
    acquire_request req{options_.kind, key_, token_, options_.ttl, options_.fenced && !held_, held_ != nullptr,
                        queue_score_, options_.queue_timeout};
    // Reentrant, fair: each master keeps the id of the request that took our
    // hold there, so that clean-ups of older requests cannot touch it.
    if (held_)
      req.hold_id = held_->hold_id;
    else if (is_hash_kind(options_.kind))
      req.hold_id = latest_request_ = client_->next_request_id++;
    req.may_be_handed = may_be_handed_the_lock();
    std::uint64_t poll_id = req.may_be_handed ? req.hold_id : 0;
    auto round = acquire_round(client_, req, [self = shared_from_this(), poll_id](fanout& f) {
      self->on_decided(f, poll_id);
    });
    // A grant that lands after this attempt was abandoned must be released
    // again: the first release may have run before it on that master.
    round->on_late_yes([self = shared_from_this(), token = token_, attempt = attempts_](std::uint32_t node) {
      if (self->held_) {
        // Only a failed re-entry is undone; a late level of a good one stays.
        if (self->abandoned_) self->undo_reentry_on({node});
        return;
      }
      // Only for the mutex, whose token is new at every attempt. A reentrant
      // or fair attempt's abandonment release already runs after the grant
      // on the same connection (FIFO); had the connection been replaced, this
      // reply would never have come.
      if (self->options_.kind == lock_kind::mutex && (self->attempts_ != attempt || self->abandoned_))
        release_abandoned(self->client_, self->options_.kind, self->key_, token, /*hold_id: mutex has none*/ 0,
                          {node});
    });
    abandoned_ = false;
    // A fair poll that fails is only followed by waiting in line: hear every
    // master first, so that cleaning up does not release (and so void the
    // hand-over terms, see on_handed) where it was merely queued. A failed
    // re-entry says "not held" only when every refusal was counted.
    if (poll_id || held_) round->settle_failure();
    round->start();
    if (poll_id) {
      polls_.emplace_back(poll_id, round->started_at());
      if (polls_.size() > 32) polls_.pop_front();
    }
  }

  // `poll_id`: the fair poll this round carried (0 if none).
  void on_decided(fanout& f, std::uint64_t poll_id) {
    if (done_) return;  // a release handed us the lock while this poll was in flight
    if (held_) return on_reentry_decided(f);
    error_code why;
    if (f.succeeded()) {
      if (has_validity_left(f.started_at(), f.decided_at())) {
        if (cancelled_) return abandon_attempt({}, may_hold(f));
        if (!options_.fenced) return complete({}, make_lock(f, std::nullopt));
        return start_raise(f);
      }
      why = errc::validity_expired;
    } else {
      why = f.failure();
      if (!why) why = errc::not_acquired;
    }
    if (options_.kind == lock_kind::fair) queue_rank_ = rank_in_line(f);
    if (may_be_handed_the_lock() && !cancelled_) {
      // The masters this poll won and those a release handed us the lock on
      // may make a quorum together (a master counts only if we have not
      // released there since this poll was sent; see on_handed).
      for (std::uint32_t i = 0; i < f.outcomes().size(); ++i)
        if (f.outcomes()[i].state == node_state::locked && poll_id >= first_valid_poll_[i])
          note_handed(i, f.started_at());
      if (won_by_hand_over()) return;
    }
    abandon_attempt(why, may_hold(f));
  }

  // The fair hand-over (docs/algorithm.md, section 11). A release that finds
  // us first in line gives us the lock on its master and names the poll
  // whose terms it used; the lock is ours once a quorum of masters did so.
  // Not for fenced waiters: they draw their fence counter themselves.
  bool may_be_handed_the_lock() const { return options_.kind == lock_kind::fair && !options_.fenced && !held_; }

  void on_handed(std::uint32_t node, std::uint64_t poll_id) {
    if (done_ || !may_be_handed_the_lock()) return;
    std::optional<steady_time> sent;
    if (poll_id >= first_valid_poll_[node])
      for (auto& [id, at] : polls_)
        if (id == poll_id) sent = at;
    // A grant on terms from before we last released on that master: the
    // release may have run before or after ours there. Not counted; the next
    // poll finds out (and takes the lock there if it is ours).
    if (!sent) return wake();
    note_handed(node, *sent);
    if (!won_by_hand_over() && handed_count_ >= client_->quorum) {
      // A quorum, but too little validity left (the polls they name are
      // old). Poll again: the holds are ours, so that poll is granted there
      // and counts from its own send time. Nothing is released here: a
      // release while a poll is in flight would undo that poll's grants
      // after they were counted (the nemesis caught this under a client
      // clock jump).
      forget_handed({});
      wake();
    }
  }

  // The master's hold lives at least until the poll it names was sent plus
  // our ttl, or our queue timeout if shorter (reentrant_release.lua).
  void note_handed(std::uint32_t node, steady_time poll_sent) {
    if (handed_[node]) return;
    handed_[node] = poll_sent;
    ++handed_count_;
  }

  bool won_by_hand_over() {
    if (handed_count_ < client_->quorum) return false;
    steady_time earliest = steady_time::max();
    for (auto& h : handed_)
      if (h) earliest = std::min(earliest, *h);
    auto held_for = std::min(options_.ttl, options_.queue_timeout);
    auto valid_until = earliest + held_for - drift_allowance(options_.ttl, client_->options.drift_factor);
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(valid_until - client_->now());
    if (left <= std::chrono::microseconds(options_.min_validity) || left <= std::chrono::microseconds(0)) return false;
    if (cancelled_) {
      abandon_handed();
      complete(asio::error::operation_aborted, {});
      return true;
    }
    std::vector<node_result> nodes;
    for (std::uint32_t i = 0; i < handed_.size(); ++i)
      nodes.push_back({client_->nodes[i]->display(), handed_[i] ? node_state::locked : node_state::pending, {}, {}});
    if (waiting_) timer_->cancel();
    complete({}, make_lock(valid_until, std::nullopt, std::move(nodes), held_for < options_.ttl));
    return true;
  }

  void abandon_handed() {
    std::vector<std::uint32_t> nodes;
    for (std::uint32_t i = 0; i < handed_.size(); ++i)
      if (handed_[i]) nodes.push_back(i);
    release_abandoned(client_, options_.kind, key_, token_, latest_request_, nodes);
    forget_handed(nodes);
  }

  // We release on these masters (every one we counted a grant on): a grant
  // there counts again only if it names a poll sent after this release
  // (FIFO on the connection: that poll, and so that grant, ran after it).
  void forget_handed(const std::vector<std::uint32_t>& released) {
    std::fill(handed_.begin(), handed_.end(), std::nullopt);
    handed_count_ = 0;
    for (auto n : released) first_valid_poll_[n] = client_->next_request_id;
  }

  // Poll now: at once if we are between polls, else right after this one.
  void wake() {
    if (waiting_)
      timer_->cancel();  // the timer's handler retries now
    else
      woken_ = true;  // an attempt is in flight: retry at once if it fails
  }

  // How many waiters are ahead of us on a quorum of masters (the quorum-th
  // smallest of the ranks the refusing masters reported); 0 if unknown.
  std::size_t rank_in_line(const fanout& f) const {
    std::vector<std::int64_t> ranks;
    for (auto& o : f.outcomes())
      if (o.state == node_state::refused) ranks.push_back(o.value);
    if (ranks.size() < client_->quorum) return 0;
    std::nth_element(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(client_->quorum - 1), ranks.end());
    return static_cast<std::size_t>(ranks[client_->quorum - 1]);
  }

  // One more level of a hold this owner already has: no new token, no queue.
  void on_reentry_decided(fanout& f) {
    auto why = lease_round_error(f);
    // The owner's last release, or the loss of the lease, while this round
    // was in flight ends the hold on every master, this level included.
    if (!why && (held_->released || held_->lost.load() != 0)) why = errc::not_held;
    if (!why && !has_validity_left(f.started_at(), f.decided_at())) why = errc::validity_expired;
    if (!why) {
      held_->holds.fetch_add(1);
      // Like an extend: the window moves later, never earlier (the scripts
      // never shorten a key either).
      held_->extend_window(f.started_at() + options_.ttl - drift_allowance(options_.ttl, client_->options.drift_factor));
      return complete({}, lock(held_));
    }
    // Undo only our own increment, only where it applied.
    std::vector<std::uint32_t> applied;
    for (std::uint32_t i = 0; i < f.outcomes().size(); ++i)
      if (f.outcomes()[i].state == node_state::locked) applied.push_back(i);
    abandoned_ = true;
    undo_reentry_on(applied);
    complete(why, {});
  }

  void undo_reentry_on(const std::vector<std::uint32_t>& nodes) {
    if (!nodes.empty()) undo_reentry(client_, key_, token_, nodes);
  }

  bool has_validity_left(steady_time started, steady_time decided) const {
    auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(decided - started);
    auto left = validity_left(options_.ttl, elapsed, client_->options.drift_factor);
    return left > std::chrono::microseconds(options_.min_validity) && left > std::chrono::microseconds(0);
  }

  // Failed (or cancelled) attempt: release now on every master that did not
  // refuse it, including the ones that did not answer (their SET may still
  // apply; FIFO order on the connection puts our release after it). Then
  // retry or give up.
  void abandon_attempt(error_code why, std::vector<std::uint32_t> nodes) {
    abandoned_ = true;
    // Grants a release handed us are given back too.
    for (std::uint32_t i = 0; i < handed_.size(); ++i)
      if (handed_[i] && std::find(nodes.begin(), nodes.end(), i) == nodes.end()) nodes.push_back(i);
    forget_handed(nodes);
    release_abandoned(client_, options_.kind, key_, token_, latest_request_, nodes);
    if (cancelled_) return complete(asio::error::operation_aborted, {});
    retry_or_fail(why);
  }

  // Fencing (docs/fencing.md): T = max of the counters our quorum returned;
  // raise the counter to T on a quorum of masters where we still hold the
  // lock. Any later holder's quorum meets ours on one of those masters, and
  // its INCR there runs after our hold ended, so its token exceeds T.
  void start_raise(const fanout& acquired) {
    auto token_value = static_cast<std::uint64_t>(acquired.max_value());
    auto started = acquired.started_at();
    boost::intrusive_ptr<const fanout> acquired_ref(&acquired);
    round_ptr raise(new fanout(client_, scripts::fence_raise, {key_, client_impl::fence_key(key_)},
                               {token_, std::to_string(token_value)}, classify_one_zero,
                               [self = shared_from_this(), acquired_ref, started, token_value](fanout& r) {
                                 self->on_raised(*acquired_ref, r, started, token_value);
                               }));
    raise->start();
  }

  void on_raised(const fanout& acquired, const fanout& raise, steady_time started, std::uint64_t token_value) {
    error_code why;
    if (raise.succeeded()) {
      // The token is only as good as the time left: the whole acquisition,
      // raise round included, must fit in the validity window.
      if (has_validity_left(started, raise.decided_at())) {
        if (cancelled_) return abandon_attempt({}, may_hold(acquired));
        return complete({}, make_lock(acquired, token_value));
      }
      why = errc::validity_expired;
    } else {
      why = raise.failure();
      if (!why) why = errc::not_acquired;
    }
    abandon_attempt(why, may_hold(acquired));
  }

  // `fence` is the T that was raised: never recompute it from the acquisition
  // round, whose late replies may carry larger counters nobody raised.
  lock make_lock(const fanout& f, std::optional<std::uint64_t> fence) {
    std::vector<node_result> nodes;
    nodes.reserve(f.outcomes().size());
    for (std::size_t i = 0; i < f.outcomes().size(); ++i) {
      auto& o = f.outcomes()[i];
      nodes.push_back({client_->nodes[i]->display(), o.state, o.error, o.latency});
    }
    auto drift = drift_allowance(options_.ttl, client_->options.drift_factor);
    return make_lock(f.started_at() + options_.ttl - drift, fence, std::move(nodes), false);
  }

  // `confirm`: the masters hold it only until our queue deadline (a hand-over);
  // leaving the queue extends it to the ttl, and the validity with it.
  lock make_lock(steady_time valid_until, std::optional<std::uint64_t> fence, std::vector<node_result> nodes,
                 bool confirm) {
    auto s = std::make_shared<lock_state>();
    s->name = name_;
    s->key = key_;
    s->token = token_;
    s->ttl = options_.ttl;
    s->clock = client_->options.clock;
    s->owner = client_.get();
    s->kind = options_.kind;
    s->hold_id = latest_request_;
    s->set_valid_until(valid_until);
    s->fence = fence;
    s->nodes = std::move(nodes);
    if (is_hash_kind(options_.kind)) {
      s->registry_key = registry_key();
      client_->held[s->registry_key] = s;
    }
    // Granted at quorum: masters that did not grant it may still queue us
    // (ahead of others there). Leave every queue now, not at the sweep; but
    // only once the caller has its lock: sending to every master first
    // delayed it by about 100 µs in the contended_fair bench (each write
    // wakes a master that competes for the CPU).
    if (options_.kind == lock_kind::fair) {
      std::optional<milliseconds> extend_to;
      if (confirm) extend_to = options_.ttl;
      auto drift = drift_allowance(options_.ttl, client_->options.drift_factor);
      auto on_left = [weak = std::weak_ptr<lock_state>(s), confirm, drift](fanout& f) {
        auto state = weak.lock();
        if (!confirm || !state || !f.succeeded()) return;
        state->extend_window(f.started_at() + state->ttl - drift);
      };
      asio::post(client_->strand, [client = client_, key = key_, token = token_, hold_id = latest_request_,
                                   extend_to, on_left = std::move(on_left)]() mutable {
        leave_queue(client, key, token, hold_id, extend_to, std::move(on_left));
      });
    }
    if (options_.renew) {
      s->on_lost = options_.on_lost;
      s->dog = std::make_shared<watchdog>(client_, s, options_.renew_fraction);
      s->dog->start();
    }
    return lock(std::move(s));
  }

  void retry_or_fail(error_code why) {
    bool count_ok = options_.max_attempts == 0 ? options_.wait.count() > 0 : attempts_ < options_.max_attempts;
    // Errors that retrying cannot fix end the wait at once.
    bool permanent = why == errc::wrong_type || why == errc::auth_failed;
    auto delay = fair_backoff(client_->jittered(options_.retry_delay, options_.retry_jitter), queue_rank_, options_);
    if (options_.wait.count() > 0) {
      auto remaining = wait_deadline_ - std::chrono::steady_clock::now();
      if (remaining <= std::chrono::steady_clock::duration::zero()) count_ok = false;
      delay = std::min(delay, std::chrono::duration_cast<std::chrono::milliseconds>(remaining));
    }
    if (!count_ok || permanent) return finish_failed(why);
    watch_releases();
    // Released while this attempt was in flight: its refusal may predate the
    // release, so try again now rather than after the delay.
    if (std::exchange(woken_, false)) delay = milliseconds(0);
    if (!timer_) timer_.emplace(client_->strand);
    timer_->expires_after(delay);
    waiting_ = true;
    timer_->async_wait([self = shared_from_this()](error_code) {
      self->waiting_ = false;
      if (self->done_) return;  // handed the lock while waiting
      if (self->cancelled_) return self->complete(asio::error::operation_aborted, {});
      self->attempt();
    });
  }

  // A plain SET NX cannot tell someone else's data from someone else's lock:
  // before reporting "not acquired", look at the key's type.
  void finish_failed(error_code why) {
    if (why != errc::not_acquired || options_.kind != lock_kind::mutex || options_.fenced) return complete(why, {});
    check_key_types(client_, key_, [self = shared_from_this(), why](bool wrong_type) {
      self->complete(wrong_type ? make_error_code(errc::wrong_type) : why, {});
    });
  }

  // Retry as soon as the holder releases, not after the whole delay (docs/
  // algorithm.md, section 10): mutex and reentrant waiters once the release
  // is known on a quorum, a fair waiter when its client's channel names it.
  void watch_releases() {
    if (watch_id_) return;
    channel_ = release_channel();
    watch_id_ = client_->listener.watch(channel_, [weak = weak_from_this()](std::uint32_t node,
                                                                               std::string_view payload) {
      auto self = weak.lock();
      if (!self || self->done_) return;
      if (self->options_.kind == lock_kind::fair) {
        // '+<poll id> <field>': that master handed the lock to its head.
        if (payload.starts_with('+')) {
          auto space = payload.find(' ');
          std::uint64_t poll_id = 0;
          if (space == std::string_view::npos || payload.substr(space + 1) != self->token_) return;
          std::from_chars(payload.data() + 1, payload.data() + space, poll_id);
          return self->on_handed(node, poll_id);
        }
        // Only the head is named, so the first copy may wake it: if the
        // others have not released yet, the next copy retries it again.
        if (payload != self->token_) return;  // another of this client's waiters is first
      } else if (!self->free_on_quorum(payload)) {
        // Everyone hears mutex and reentrant releases: retrying before the
        // lock is free on a quorum only fails, and once per copy per waiter.
        return;
      }
      self->wake();
    });
  }

  std::string release_channel() const {
    return options_.kind == lock_kind::fair ? client_->fair_wake_channel(key_) : client_impl::channel(key_);
  }

  // Each master announces a release after deleting the key there: true for
  // the copy that makes the release known on a quorum (later copies: false).
  bool free_on_quorum(std::string_view release_id) {
    release_news* news = nullptr;
    for (auto& r : recent_releases_)
      if (r.id == release_id) news = &r;
    if (!news) {
      news = &recent_releases_[next_release_slot_++ % recent_releases_.size()];
      *news = {std::string(release_id), 0};
    }
    return ++news->copies == client_->quorum;
  }

  void cancel() {
    if (done_) return;
    cancelled_ = true;
    if (waiting_) timer_->cancel();
  }

  void complete(error_code ec, lock l) {
    if (done_) return;
    done_ = true;
    if (watch_id_) client_->listener.unwatch(channel_, watch_id_);
    // A fair waiter that gives up must not stay in the queue, nor keep a
    // hold a release handed it that it did not count; it passes the lock on.
    if (ec && options_.kind == lock_kind::fair && !held_)
      release_round(client_, options_.kind, key_, token_, latest_request_, true, true, [](fanout&) {})->start();
    if (auto& obs = client_->options.observer)
      obs->on_acquire_result(name_, ec, std::chrono::duration_cast<std::chrono::microseconds>(
                                            std::chrono::steady_clock::now() - started_));
    auto slot = asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected()) slot.clear();
    complete_handler(client_, std::move(handler_), ec, std::move(l));
  }

  std::shared_ptr<client_impl> client_;
  std::string name_;
  std::string key_;
  acquire_options options_;
  acquire_handler handler_;
  std::string token_;                   // random per attempt (mutex) or the owner field
  std::shared_ptr<lock_state> held_;    // reentrant/fair: this owner's current hold
  std::uint64_t latest_request_ = 0;    // reentrant/fair: the id of our latest first-entry request
  double queue_score_ = 0;
  std::size_t queue_rank_ = 0;  // fair: waiters ahead of us at the last attempt
  // Fair hand-over: per master, the send time of the poll a release named
  // when it handed us the lock there (since our last abandonment).
  std::vector<std::optional<steady_time>> handed_;
  std::size_t handed_count_ = 0;
  std::vector<std::uint64_t> first_valid_poll_;  // per master: grants naming earlier polls are not counted
  std::deque<std::pair<std::uint64_t, steady_time>> polls_;  // recent polls: id, send time
  struct release_news {
    std::string id;
    std::size_t copies = 0;  // masters that announced it
  };
  std::array<release_news, 4> recent_releases_;
  std::size_t next_release_slot_ = 0;
  unsigned attempts_ = 0;
  std::chrono::steady_clock::time_point started_, wait_deadline_;
  std::optional<asio::steady_timer> timer_;
  std::string channel_;
  release_listener::waiter_id watch_id_ = 0;
  bool waiting_ = false;
  bool woken_ = false;      // a release was announced while an attempt was in flight
  bool abandoned_ = false;  // the current attempt failed and was released
  bool cancelled_ = false;
  bool done_ = false;
};

}  // namespace

void start_acquire(std::shared_ptr<client_impl> client, std::string name, acquire_options options,
                   std::chrono::system_clock::time_point asked_at, acquire_handler handler) {
  std::make_shared<acquire_op>(std::move(client), std::move(name), std::move(options), asked_at, std::move(handler))
      ->start();
}

}  // namespace redlock::detail
