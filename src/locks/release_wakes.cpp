// SPDX-License-Identifier: Apache-2.0
// What a client remembers of its own mutex releases that woke a waiter
// (docs/algorithm.md, section 10): that asking again at once should join
// the line behind that waiter, not race it; and, once the client is seen
// doing so, the wake-list entry its next such release writes for it, so
// that joining the line costs no round of its own. The wake list decides
// only whom a release wakes, never who holds the lock: nothing here bears
// on safety.
#include "client_impl.hpp"
#include "kinds.hpp"
#include "waiting/release_news.hpp"

namespace redlock::detail {

namespace {
// Only the latest few matter: each is stale after one node timeout.
constexpr std::size_t remembered = 16;
}  // namespace

client_impl::release_note* client_impl::find_note(const std::string& key) {
  for (auto& n : release_notes_)
    if (n.key == key) return &n;
  return nullptr;
}

bool client_impl::woke_waiter_just_now(const std::string& key) const {
  for (auto& n : release_notes_)
    if (n.key == key) return n.woke && now() - n.at < options.node_timeout;
  return false;
}

void client_impl::note_reasked(const std::string& key) {
  if (auto* n = find_note(key)) n->reasks = true;
}

std::optional<client_impl::wake_list_entry> client_impl::relisting(const std::string& key) {
  auto* n = find_note(key);
  // Not subscribed: a message naming the entry before our acquisition
  // starts would be lost; the line round subscribes first.
  if (stopped || !n || !n->reasks || !listener->subscribed(wake_channel(key))) return std::nullopt;
  return wake_list_entry{client_id + ":" + std::to_string(next_request_id++),
                         waiter_score(std::chrono::system_clock::now()), 4 * options.node_timeout};
}

void client_impl::note_release_wake(const std::string& key, const quorum_round& release,
                                    const wake_list_entry* listed) {
  bool reasks = false;
  if (auto* old = find_note(key)) {
    drop_listing(*old);  // unclaimed: we did not ask again after all
    reasks = old->reasks;
    std::erase_if(release_notes_, [&](auto& n) { return n.key == key; });
  }
  // A master lists us exactly where it names a waiter (mutex_release.lua).
  std::size_t named = 0;
  for (auto& o : release.outcomes()) named += o.state == node_state::locked && o.value == 2;
  // Masters that answer after the decision may have listed us.
  if (listed && (named == 0 || stopped)) leave_wake_list(shared_from_this(), key, listed->id, masters->all(), true);
  if (named == 0 || stopped) return;  // no one waits: the next acquisition just asks
  if (release_notes_.size() == remembered) {
    drop_listing(release_notes_.front());
    release_notes_.pop_front();
  }
  auto& note = release_notes_.emplace_back();
  note.key = key;
  note.at = now();
  note.woke = named >= quorum();
  note.reasks = reasks;
  if (!listed) return;
  note.listed = {*listed, release.started_at()};
  note.listed_real_at = std::chrono::steady_clock::now();
  // Until an acquisition claims the entry, a release that names it has woken
  // nobody: pass the wake-up on, on that master, to whoever is next.
  note.listed_watch = listener->watch(wake_channel(key), [weak = weak_from_this(), key, id = listed->id](
                                                             std::uint32_t node, std::string_view payload) {
    auto self = weak.lock();
    auto token = token_naming(payload, id);
    if (!self || token.empty()) return;
    auto* n = self->find_note(key);
    if (!n || n->listed.entry.id != id) return;
    n->passed_on = true;
    pass_wake_on(self, key, key, id, token, {node});
  });
  if (!listing_sweep_armed_) arm_listing_sweep(note.listed_real_at + options.node_timeout);
}

std::optional<client_impl::listing> client_impl::claim_listing(const std::string& key) {
  auto* n = find_note(key);
  if (!n || n->listed.entry.id.empty()) return std::nullopt;
  if (n->passed_on) {  // spent: a release named it and the wake-up went on
    drop_listing(*n);
    return std::nullopt;
  }
  listener->unwatch(wake_channel(key), n->listed_watch);
  n->listed_watch = 0;
  auto claimed = std::move(n->listed);
  n->listed.entry.id.clear();
  return claimed;
}

// An entry no acquisition took: releases there would name it, waking no one,
// until it lapsed. Take it down everywhere (a master that answered the
// release late may have listed it too), and stop listing this client until
// it is seen asking again at once.
void client_impl::drop_listing(release_note& note, bool must_reach) {
  if (note.listed.entry.id.empty()) return;
  listener->unwatch(wake_channel(note.key), note.listed_watch);
  note.listed_watch = 0;
  leave_wake_list(shared_from_this(), note.key, note.listed.entry.id, masters->all(), must_reach);
  note.listed.entry.id.clear();
  note.reasks = false;
}

void client_impl::drop_unclaimed_listings() {
  for (auto& n : release_notes_) drop_listing(n, true);
}

void client_impl::sweep_unclaimed_listings() {
  listing_sweep_armed_ = false;
  if (stopped) return;
  auto real_now = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> next;
  for (auto& n : release_notes_) {
    if (n.listed.entry.id.empty()) continue;
    auto stale_at = n.listed_real_at + options.node_timeout;
    if (stale_at <= real_now)
      drop_listing(n);
    else if (!next || stale_at < *next)
      next = stale_at;
  }
  if (next) arm_listing_sweep(*next);
}

void client_impl::arm_listing_sweep(std::chrono::steady_clock::time_point at) {
  if (!listing_sweep_) listing_sweep_.emplace(strand);
  listing_sweep_armed_ = true;
  listing_sweep_->expires_at(at);
  listing_sweep_->async_wait([weak = weak_from_this()](boost::system::error_code) {
    if (auto self = weak.lock()) self->sweep_unclaimed_listings();
  });
}

}  // namespace redlock::detail
