// SPDX-License-Identifier: Apache-2.0
// The sends that keep a name's wake list right when no release script does
// it (docs/algorithm.md, sections 10 and 12): a waiter leaving the list, an
// unclaimed wake-up passed on, the entries a client's own releases listed it
// under, and the wake-ups its quiet permit releases held back. What to send
// and when is the wake ledger's decision (waiting/wake_ledger.hpp); here it
// is sent, and the timers the ledger asks for are run.
#include "client_impl.hpp"
#include "kinds.hpp"

#include "quorum/replies.hpp"
#include "scripts/keys.hpp"
#include "scripts/script.hpp"
#include "waiting/release_news.hpp"

namespace redlock::detail {

void leave_wake_list(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& waiter,
                     const std::vector<std::uint32_t>& nodes, bool must_reach) {
  if (waiter.empty() || nodes.empty()) return;
  for (auto& list : {keys::wake_list(key), keys::wake_deadlines(key)}) {
    round_ptr round(new quorum_round(client->masters, {"ZREM", list, waiter}, classify_one_zero, [](quorum_round&) {}));
    if (must_reach) round->must_reach_every_master();
    round->start_on(nodes);
  }
}

void pass_wake_on(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& waiters_key,
                  const std::string& entry, std::string_view token, const std::vector<std::uint32_t>& nodes,
                  bool must_reach) {
  auto classify = [](const redisReply&, node_outcome&) { return verdict::yes; };  // nothing waits on it
  round_ptr round(new quorum_round(client->masters, scripts::mutex_release,
                                   {key, keys::wake_list(waiters_key), keys::wake_deadlines(waiters_key)},
                                   {std::string(token), keys::released_channel(waiters_key), "pass", entry},
                                   classify, [](quorum_round&) {}));
  if (must_reach) round->must_reach_every_master();
  round->start_on(nodes);
}

namespace {
// A release's answers as the ledger reads them: 2 named a waiter, 3 left
// one to name (a quiet release), and how many masters had not answered yet.
release_replies replies_of(const quorum_round& release) {
  release_replies r;
  for (auto& o : release.outcomes()) {
    r.named += o.state == node_state::locked && o.value == 2;
    r.waiter_left |= o.state == node_state::locked && o.value == 3;
    r.unread += o.state != node_state::locked && o.state != node_state::refused;
  }
  return r;
}
}  // namespace

// ---- mutex releases that named a waiter (section 10) ---------------------------

std::optional<wake_list_entry> client_impl::relisting(const std::string& key) {
  // Not subscribed: a message naming the entry before our acquisition
  // starts would be lost; the line round subscribes first.
  if (stopped || !wakes_.relists(key) || !listener->subscribed(wake_channel(key))) return std::nullopt;
  return wake_list_entry{client_id + ":" + std::to_string(next_request_id++),
                         waiter_score(std::chrono::system_clock::now()), wakes_.relisting_lapse()};
}

void client_impl::note_release_wake(const std::string& key, const quorum_round& release,
                                    const wake_list_entry* listed) {
  auto noted = wakes_.note_release(key, replies_of(release), listed, stopped, release.started_at(), now(),
                                   std::chrono::steady_clock::now());
  for (auto& unclaimed : noted.take_down) take_down(unclaimed);
  if (!listed) return;
  // Masters that answer after the decision may have listed us.
  if (!noted.listing_kept) return leave_wake_list(shared_from_this(), key, listed->id, masters->all(), true);
  // Until an acquisition claims the entry, a release that names it has woken
  // nobody: pass the wake-up on, on that master, to whoever is next.
  auto watch = listener->watch(wake_channel(key), [weak = weak_from_this(), key, id = listed->id](
                                                      std::uint32_t node, std::string_view payload) {
    auto self = weak.lock();
    auto token = token_naming(payload, id);
    if (self && !token.empty() && self->wakes_.listing_named(key, id))
      pass_wake_on(self, key, key, id, token, {node});
  });
  wakes_.listing_watched(key, watch);
  if (noted.sweep_at) arm(listing_sweep_, *noted.sweep_at, &client_impl::sweep_unclaimed_listings);
}

std::optional<wake_ledger::listing> client_impl::claim_listing(const std::string& key) {
  auto claim = wakes_.claim_listing(key);
  if (!claim) return std::nullopt;
  listener->unwatch(wake_channel(key), claim->watch);
  if (!claim->spent) return std::move(claim->listed);
  // Spent: a release named it and the wake-up went on. Take it down.
  leave_wake_list(shared_from_this(), key, claim->listed.entry.id, masters->all());
  return std::nullopt;
}

void client_impl::take_down(const wake_ledger::unclaimed_listing& unclaimed, bool must_reach) {
  listener->unwatch(wake_channel(unclaimed.key), unclaimed.watch);
  leave_wake_list(shared_from_this(), unclaimed.key, unclaimed.id, masters->all(), must_reach);
}

void client_impl::sweep_unclaimed_listings() {
  if (stopped) return;
  auto sweep = wakes_.sweep_listings(std::chrono::steady_clock::now());
  for (auto& unclaimed : sweep.take_down) take_down(unclaimed);
  if (sweep.next) arm(listing_sweep_, *sweep.next, &client_impl::sweep_unclaimed_listings);
}

// ---- permit releases (section 12) -----------------------------------------------

void client_impl::note_permit_release(const std::string& semaphore_key, unsigned permit, const std::string& token,
                                      const quorum_round& release, bool quiet) {
  auto noted = wakes_.note_permit_release(semaphore_key, permit, token, quiet, replies_of(release), stopped,
                                          std::chrono::steady_clock::now());
  for (auto& wake : noted.send) send_held_back(wake);
  if (noted.arm_at) arm(held_back_wakes_, *noted.arm_at, &client_impl::send_due_wakes);
}

void client_impl::permit_retake_decided(const std::string& semaphore_key, bool won) {
  if (auto wake = wakes_.permit_retake_decided(semaphore_key, won)) send_held_back(*wake);
}

void client_impl::send_held_back(const wake_ledger::held_back_wake& wake) {
  pass_wake_on(shared_from_this(), keys::permit(wake.semaphore_key, wake.permit), wake.semaphore_key, "", wake.token,
               wake.nodes, wake.must_reach);
}

void client_impl::send_due_wakes() {
  auto due = wakes_.wakes_due(std::chrono::steady_clock::now());
  for (auto& wake : due.send) send_held_back(wake);
  if (due.next) arm(held_back_wakes_, *due.next, &client_impl::send_due_wakes);
}

// Both timers run on the strand; cancelled, they call nothing (the client stops).
void client_impl::arm(std::optional<boost::asio::steady_timer>& timer, std::chrono::steady_clock::time_point at,
                      void (client_impl::*fired)()) {
  if (!timer) timer.emplace(strand);
  timer->expires_at(at);
  timer->async_wait([weak = weak_from_this(), fired](boost::system::error_code ec) {
    if (auto self = weak.lock(); self && !ec) (self.get()->*fired)();
  });
}

void client_impl::settle_wakes() {
  if (listing_sweep_) listing_sweep_->cancel();
  for (auto& unclaimed : wakes_.drop_listings()) take_down(unclaimed, true);
  if (held_back_wakes_) held_back_wakes_->cancel();
  for (auto& wake : wakes_.take_held_back_wakes()) send_held_back(wake);
}

}  // namespace redlock::detail
