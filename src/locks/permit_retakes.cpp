// SPDX-License-Identifier: Apache-2.0
// What a client remembers of its own permit releases (docs/algorithm.md,
// section 12): a worker that releases a permit and asks again at once takes
// its slot back before any waiter its release woke could get there, so that
// waiter's round fails on every master. Once the client is seen doing that,
// its permit releases name no one (mutex_release.lua, 'quiet') and the
// wake-up is held back for a tenth of a node timeout: sent then if the
// client has not asked again (mutex_release.lua, 'pass', which names the
// first waiter only where the slot is still free). The wake list decides
// only whom a release wakes, never who holds a permit: nothing here bears
// on safety; a wake-up lost here costs a waiter at most its retry delay.
#include "client_impl.hpp"
#include "kinds.hpp"

#include <algorithm>

namespace redlock::detail {

namespace {
// A few semaphores at a time: a note matters for a tenth of a node timeout.
constexpr std::size_t remembered_semaphores = 16;
}  // namespace

client_impl::permit_note* client_impl::find_permit_note(const std::string& key) {
  auto it = std::ranges::find(permit_notes_, key, &permit_note::key);
  return it == permit_notes_.end() ? nullptr : &*it;
}

bool client_impl::retakes_permits(const std::string& semaphore_key) const {
  auto it = std::ranges::find(permit_notes_, semaphore_key, &permit_note::key);
  return !stopped && it != permit_notes_.end() && it->retakes;
}

void client_impl::note_permit_release(const std::string& semaphore_key, unsigned permit, const std::string& token,
                                      const quorum_round& release, bool quiet) {
  auto* note = find_permit_note(semaphore_key);
  if (!note) {
    if (permit_notes_.size() == remembered_semaphores) {
      send_held_back_wake(permit_notes_.front());
      permit_notes_.pop_front();
    }
    note = &permit_notes_.emplace_back();
    note->key = semaphore_key;
  }
  send_held_back_wake(*note);  // an earlier release's (two permits released together)
  note->at = std::chrono::steady_clock::now();
  note->permit = permit;
  note->token = token;
  note->asked = false;
  if (!quiet) return;
  // A waiter wakes once a quorum of one release's copies named it: the
  // wake-up goes to every master when one answered 3 (a live waiter heads
  // its list) or one had not answered by the decision (it may have).
  // 'pass' names no one where the slot is taken or no one waits.
  bool someone_waits = false, all_answered = true;
  for (auto& o : release.outcomes()) {
    someone_waits |= o.state == node_state::locked && o.value == 3;
    all_answered &= o.state == node_state::locked || o.state == node_state::refused;
  }
  if (!someone_waits && all_answered) return;
  note->held_back = masters->all();
  if (stopped) return send_held_back_wake(*note, true);
  note->wake_at = note->at + retake_window();
  // Every wake_at is its release's decision plus the same window: a timer
  // already armed expires first.
  if (!held_back_wakes_ || held_back_wakes_->expiry() <= std::chrono::steady_clock::now())
    arm_held_back_wakes(note->wake_at);
}

void client_impl::arm_held_back_wakes(std::chrono::steady_clock::time_point at) {
  if (!held_back_wakes_) held_back_wakes_.emplace(strand);
  held_back_wakes_->expires_at(at);
  held_back_wakes_->async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    if (auto self = weak.lock(); self && !ec) self->send_due_wakes();
  });
}

std::optional<unsigned> client_impl::note_permit_asked(const std::string& semaphore_key) {
  auto* note = find_permit_note(semaphore_key);
  if (!note || note->asked || std::chrono::steady_clock::now() - note->at > retake_window()) return std::nullopt;
  note->retakes = true;
  note->asked = true;
  return note->permit;
}

void client_impl::permit_retake_decided(const std::string& semaphore_key, bool won) {
  auto* note = find_permit_note(semaphore_key);
  if (!note || !note->asked) return;  // a later release of ours took over the note
  note->asked = false;
  // Won: a slot is taken again, and its holder's release wakes the next.
  // Refused, cancelled or failed: the slot may still be free.
  if (won)
    note->held_back.clear();
  else
    send_held_back_wake(*note);
}

void client_impl::send_due_wakes() {
  auto now = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> next;
  for (auto& n : permit_notes_) {
    if (n.held_back.empty() || n.asked) continue;  // an ask's decision sends it or drops it
    if (n.wake_at <= now) {
      n.retakes = false;  // not asked again at once this time: wake at once next time
      send_held_back_wake(n);
    } else if (!next || n.wake_at < *next) {
      next = n.wake_at;
    }
  }
  if (next) arm_held_back_wakes(*next);
}

void client_impl::send_held_back_wake(permit_note& note, bool must_reach) {
  if (note.held_back.empty()) return;
  // With the release's own token: to the waiter, the message that release
  // would have sent.
  pass_wake_on(shared_from_this(), keys::permit(note.key, note.permit), note.key, "", note.token, note.held_back,
               must_reach);
  note.held_back.clear();
}

void client_impl::send_held_back_wakes() {
  if (held_back_wakes_) held_back_wakes_->cancel();
  for (auto& n : permit_notes_) send_held_back_wake(n, true);
}

}  // namespace redlock::detail
