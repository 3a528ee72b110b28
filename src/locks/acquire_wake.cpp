// SPDX-License-Identifier: Apache-2.0
// How a waiting acquisition is woken: release announcements (docs/algorithm.md,
// section 10), a fair release that hands it the lock (section 11), and
// cancellation by the caller.
#include "acquire_op.hpp"
#include "kinds.hpp"

#include <redlock/error.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>
#include <charconv>

namespace redlock::detail {

namespace asio = boost::asio;

void acquire_op::on_handed(std::uint32_t node, std::uint64_t poll_id) {
  if (fsm_.done() || !may_be_handed_the_lock()) return;
  // A grant on terms from before we last released on that master: the
  // release may have run before or after ours there. Not counted; the next
  // poll finds out (and takes the lock there if it is ours).
  if (!handover_.handed(node, poll_id)) return drive(event(acquire_event::type::release_heard));
  if (!won_by_hand_over() && handover_.has_quorum()) {
    // A quorum, but too little validity left (the polls they name are
    // old). Poll again: the holds are ours, so that poll is granted there
    // and counts from its own send time. Nothing is released here: a
    // release while a poll is in flight would undo that poll's grants
    // after they were counted (the nemesis caught this under a client
    // clock jump).
    handover_.forget({}, client_->next_request_id);
    drive(event(acquire_event::type::release_heard));
  }
}

// A quorum of masters handed us the lock with validity left: the machine
// decides (hold it, or, cancelled, give it back).
bool acquire_op::won_by_hand_over() {
  auto held_for = std::min(options_.ttl, options_.queue_timeout);
  auto until = handover_.window_end(held_for, options_.ttl, client_->options.drift_factor);
  if (!until) return false;
  auto left = *until - client_->now();
  if (left <= options_.min_validity || left <= std::chrono::steady_clock::duration::zero()) return false;
  handed_until_ = until;
  drive(event(acquire_event::type::handed_over));
  return true;
}

void acquire_op::hold_handed() {
  if (timer_) timer_->cancel();  // waiting between polls: the machine is done
  auto held_for = std::min(options_.ttl, options_.queue_timeout);
  // Made in place (a prvalue): moving a local small_vector here tripped a
  // false -Wstringop-overread in GCC 12's optimized build.
  auto handed_answers = [this] {
    node_answers answers;
    answers.reserve(client_->masters->size());
    for (std::uint32_t i = 0; i < client_->masters->size(); ++i)
      answers.push_back({handover_.counted_on(i) ? node_state::locked : node_state::pending, {}, {}});
    return answers;
  };
  hold({*handed_until_, std::nullopt, handed_answers(),
        held_for < options_.ttl ? fair_win::handed_short : fair_win::handed});
}

void acquire_op::abandon_handed() {
  auto nodes = handover_.counted();
  give_back(nodes, token_, latest_request_);
  handover_.forget(nodes, client_->next_request_id);
}

// How many waiters are ahead of us on a quorum of masters (the quorum-th
// smallest of the ranks the refusing masters reported); 0 if unknown.
std::size_t acquire_op::rank_in_line(const quorum_round& f) const {
  std::vector<std::int64_t> ranks;
  for (auto& o : f.outcomes())
    if (o.state == node_state::refused) ranks.push_back(o.value);
  auto q = client_->quorum();
  if (ranks.size() < q) return 0;
  std::nth_element(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(q - 1), ranks.end());
  return static_cast<std::size_t>(ranks[q - 1]);
}

// ---- wake-ups (docs/algorithm.md, section 10) ------------------------------
// Retry as soon as the holder releases, not after the whole delay: a
// reentrant waiter once the release is known on a quorum, a mutex waiter
// once masters one short of a quorum named it (and again at a quorum), a
// fair waiter when its client's channel names it.
void acquire_op::watch_releases() {
  // Names held together wait on the timer: a set's release wakes the
  // single-name waiters of each name it frees (release_all.lua), and no
  // release names a set's waiter.
  if (watch_id_ || holds_names_together()) return;
  channel_ = release_channel();
  watch_id_ = client_->listener->watch(channel_, [weak = weak_from_this()](std::uint32_t node,
                                                                             std::string_view payload) {
    auto self = weak.lock();
    if (!self || self->fsm_.done()) return;
    if (self->options_.kind == lock_kind::fair) {
      // '+<poll id> <field>': that master handed the lock to its head.
      if (payload.starts_with('+')) {
        auto space = payload.find(' ');
        std::uint64_t poll_id = 0;
        if (space == std::string_view::npos || payload.substr(space + 1) != self->token_) return;
        std::from_chars(payload.data() + 1, payload.data() + space, poll_id);
        self->release_heard_ = std::chrono::steady_clock::now();  // before it may complete us
        return self->on_handed(node, poll_id);
      }
      // Only the head is named, so the first copy may wake it: if the
      // others have not released yet, the next copy retries it again.
      if (payload != self->token_) return;  // another of this client's waiters is first
    } else if (!self->waiter_id_.empty()) {
      if (!self->named_by_release(payload)) return;
    } else if (self->client_->own_release_before(payload, self->own_releases_before_) ||
               !self->news_.heard(payload)) {
      // Everyone hears reentrant releases: retrying before the lock is free
      // on a quorum only fails, and once per copy per waiter; late copies of
      // our own release from before we began are no news.
      return;
    }
    self->release_heard_ = std::chrono::steady_clock::now();
    self->drive(self->event(acquire_event::type::release_heard));
  });
}

std::string acquire_op::release_channel() const {
  bool woken_by_name = options_.kind == lock_kind::fair || !waiter_id_.empty();
  return woken_by_name ? client_->wake_channel(key_) : keys::released_channel(key_);
}

// A mutex release wakes the first waiter on the masters' wake list by name,
// '=<waiter id> <released token>', on its client's channel. Masters may
// name different waiters (their lists can differ): retry once one release's
// copies named us one short of a quorum, and again at a quorum in case that
// retry was refused where the release had not yet run (release_news::named).
bool acquire_op::named_by_release(std::string_view payload) {
  auto token = token_naming(payload, waiter_id_);
  return !token.empty() && news_.named(token);
}

}  // namespace redlock::detail
