// SPDX-License-Identifier: Apache-2.0
#include "wake_ledger.hpp"

#include "release_news.hpp"

#include <algorithm>

namespace redlock::detail {

namespace {
// Only the latest few matter: a release note is stale after one node
// timeout, a permit note after a tenth of one.
constexpr std::size_t remembered = 16;
constexpr std::size_t remembered_semaphores = 16;
}  // namespace

// ---- mutex releases that named a waiter --------------------------------------

wake_ledger::release_note* wake_ledger::find_note(const std::string& key) {
  auto it = std::ranges::find(release_notes_, key, &release_note::key);
  return it == release_notes_.end() ? nullptr : &*it;
}

const wake_ledger::release_note* wake_ledger::find_note(const std::string& key) const {
  return const_cast<wake_ledger*>(this)->find_note(key);
}

bool wake_ledger::woke_waiter_just_now(const std::string& key, steady_time now) const {
  auto* n = find_note(key);
  return n && n->woke && now - n->at < node_timeout_;
}

void wake_ledger::note_reasked(const std::string& key) {
  if (auto* n = find_note(key)) n->reasks = true;
}

bool wake_ledger::relists(const std::string& key) const {
  auto* n = find_note(key);
  return n && n->reasks;
}

// An entry no acquisition took: releases there would name it, waking no one,
// until it lapsed. It is taken down everywhere (a master that answered the
// release late may have listed it too), and this client is not listed again
// until it is seen asking again at once.
std::optional<wake_ledger::unclaimed_listing> wake_ledger::drop_listing(release_note& note) {
  if (note.listed.entry.id.empty()) return std::nullopt;
  unclaimed_listing out{note.key, std::move(note.listed.entry.id), note.listed_watch};
  note.listed.entry.id.clear();
  note.listed_watch = 0;
  note.reasks = false;
  return out;
}

wake_ledger::release_noted wake_ledger::note_release(const std::string& key, const release_replies& replies,
                                                     const wake_list_entry* listed, bool stopping,
                                                     steady_time sent_at, steady_time now, real_time real_now) {
  release_noted out;
  bool reasks = false;
  if (auto* old = find_note(key)) {
    if (auto unclaimed = drop_listing(*old)) out.take_down.push_back(std::move(*unclaimed));  // we did not ask again
    reasks = old->reasks;
    std::erase_if(release_notes_, [&](auto& n) { return n.key == key; });
  }
  // No one waits (the next acquisition just asks), or the client stops.
  if (replies.named == 0 || stopping) return out;
  if (release_notes_.size() == remembered) {
    if (auto unclaimed = drop_listing(release_notes_.front())) out.take_down.push_back(std::move(*unclaimed));
    release_notes_.pop_front();
  }
  auto& note = release_notes_.emplace_back();
  note.key = key;
  note.at = now;
  // The waiter retries once release_news::wake_copies of its copies named
  // it, and masters yet to answer may still name it (integration_mutex's
  // a_releaser_asking_again_at_once... lost about one run in fifteen under
  // load to that race: answers 2, 1, and a third still on its way).
  note.woke = replies.named + replies.unread >= release_news::wake_copies(quorum_);
  note.reasks = reasks;
  if (!listed) return out;
  // A master lists us exactly where it names a waiter (mutex_release.lua).
  out.listing_kept = true;
  note.listed = {*listed, sent_at};
  note.listed_real_at = real_now;
  if (!sweep_armed_) {
    sweep_armed_ = true;
    out.sweep_at = real_now + node_timeout_;
  }
  return out;
}

void wake_ledger::listing_watched(const std::string& key, std::uint64_t watch) {
  if (auto* n = find_note(key)) n->listed_watch = watch;
}

// Until an acquisition claims the entry, a release that names it has woken
// nobody: the wake-up goes on, on that master, to whoever is next.
bool wake_ledger::listing_named(const std::string& key, const std::string& id) {
  auto* n = find_note(key);
  if (!n || n->listed.entry.id != id) return false;
  n->passed_on = true;
  return true;
}

std::optional<wake_ledger::claim> wake_ledger::claim_listing(const std::string& key) {
  auto* n = find_note(key);
  if (!n || n->listed.entry.id.empty()) return std::nullopt;
  claim out{std::move(n->listed), n->listed_watch, n->passed_on};
  if (out.spent) n->reasks = false;  // as for any listing taken down unclaimed
  n->listed.entry.id.clear();
  n->listed_watch = 0;
  return out;
}

wake_ledger::sweep wake_ledger::sweep_listings(real_time real_now) {
  sweep out;
  sweep_armed_ = false;
  for (auto& n : release_notes_) {
    if (n.listed.entry.id.empty()) continue;
    auto stale_at = n.listed_real_at + node_timeout_;
    if (stale_at <= real_now)
      out.take_down.push_back(*drop_listing(n));
    else if (!out.next || stale_at < *out.next)
      out.next = stale_at;
  }
  sweep_armed_ = out.next.has_value();
  return out;
}

std::vector<wake_ledger::unclaimed_listing> wake_ledger::drop_listings() {
  std::vector<unclaimed_listing> out;
  for (auto& n : release_notes_)
    if (auto unclaimed = drop_listing(n)) out.push_back(std::move(*unclaimed));
  return out;
}

// ---- permit releases ------------------------------------------------------------

wake_ledger::permit_note* wake_ledger::find_permit_note(const std::string& key) {
  auto it = std::ranges::find(permit_notes_, key, &permit_note::key);
  return it == permit_notes_.end() ? nullptr : &*it;
}

const wake_ledger::permit_note* wake_ledger::find_permit_note(const std::string& key) const {
  return const_cast<wake_ledger*>(this)->find_permit_note(key);
}

std::vector<std::uint32_t> wake_ledger::all_nodes() const {
  std::vector<std::uint32_t> out(nodes_);
  for (std::uint32_t i = 0; i < nodes_; ++i) out[i] = i;
  return out;
}

std::optional<wake_ledger::held_back_wake> wake_ledger::take_held_back(permit_note& note, bool must_reach) {
  if (note.held_back.empty()) return std::nullopt;
  held_back_wake out{note.key, note.permit, note.token, std::move(note.held_back), must_reach};
  note.held_back.clear();
  return out;
}

bool wake_ledger::retakes_permits(const std::string& semaphore_key) const {
  auto* n = find_permit_note(semaphore_key);
  return n && n->retakes;
}

wake_ledger::permit_release_noted wake_ledger::note_permit_release(const std::string& semaphore_key, unsigned permit,
                                                                   const std::string& token, bool quiet,
                                                                   const release_replies& replies, bool stopping,
                                                                   real_time real_now) {
  permit_release_noted out;
  auto* note = find_permit_note(semaphore_key);
  if (!note) {
    if (permit_notes_.size() == remembered_semaphores) {
      if (auto wake = take_held_back(permit_notes_.front())) out.send.push_back(std::move(*wake));
      permit_notes_.pop_front();
    }
    note = &permit_notes_.emplace_back();
    note->key = semaphore_key;
  }
  // An earlier release's (two permits released together).
  if (auto wake = take_held_back(*note)) out.send.push_back(std::move(*wake));
  note->at = real_now;
  note->permit = permit;
  note->token = token;
  note->asked = false;
  if (!quiet) return out;
  // A waiter wakes once release_news::wake_copies of one release's copies
  // named it: the wake-up goes to every master when one answered 3 (a live
  // waiter heads its list) or one had not answered by the decision (it may
  // have).
  // 'pass' names no one where the slot is taken or no one waits.
  if (!replies.waiter_left && replies.unread == 0) return out;
  note->held_back = all_nodes();
  if (stopping) {
    out.send.push_back(*take_held_back(*note, true));
    return out;
  }
  note->wake_at = note->at + retake_window();
  // Every wake_at is its release's decision plus the same window: a timer
  // already armed for later than now expires first.
  if (!wake_timer_at_ || *wake_timer_at_ <= real_now) out.arm_at = wake_timer_at_ = note->wake_at;
  return out;
}

std::optional<unsigned> wake_ledger::note_permit_asked(const std::string& semaphore_key, real_time real_now) {
  auto* note = find_permit_note(semaphore_key);
  if (!note || note->asked || real_now - note->at > retake_window()) return std::nullopt;
  note->retakes = true;
  note->asked = true;
  return note->permit;
}

std::optional<wake_ledger::held_back_wake> wake_ledger::permit_retake_decided(const std::string& semaphore_key,
                                                                              bool won) {
  auto* note = find_permit_note(semaphore_key);
  if (!note || !note->asked) return std::nullopt;  // a later release of ours took over the note
  note->asked = false;
  // Won: a slot is taken again, and its holder's release wakes the next.
  // Refused, cancelled or failed: the slot may still be free.
  if (won) {
    note->held_back.clear();
    return std::nullopt;
  }
  return take_held_back(*note);
}

wake_ledger::due_wakes wake_ledger::wakes_due(real_time real_now) {
  due_wakes out;
  for (auto& n : permit_notes_) {
    if (n.held_back.empty() || n.asked) continue;  // an ask's decision sends it or drops it
    if (n.wake_at <= real_now) {
      n.retakes = false;  // not asked again at once this time: wake at once next time
      out.send.push_back(*take_held_back(n));
    } else if (!out.next || n.wake_at < *out.next) {
      out.next = n.wake_at;
    }
  }
  if (out.next) wake_timer_at_ = out.next;
  return out;
}

std::vector<wake_ledger::held_back_wake> wake_ledger::take_held_back_wakes() {
  std::vector<held_back_wake> out;
  for (auto& n : permit_notes_)
    if (auto wake = take_held_back(n, true)) out.push_back(std::move(*wake));
  return out;
}

}  // namespace redlock::detail
