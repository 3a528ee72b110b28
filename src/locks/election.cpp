// SPDX-License-Identifier: Apache-2.0
// Leader election (docs/algorithm.md, section 14). Safety is the fenced
// mutex's: two leaders never hold overlapping validity windows, and each
// epoch (fencing token) exceeds every earlier leader's. What is added here
// only tells: the proclamation records the epoch next to the lock and
// publishes the change; observers read the masters when told, and never
// decide anything.
#include "election.hpp"

#include "hold.hpp"
#include "lease/lock_state.hpp"
#include "quorum/replies.hpp"
#include "scripts/keys.hpp"
#include "scripts/script.hpp"

#include <redlock/status.hpp>
#include <redlock/error.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <charconv>
#include <climits>
#include <map>

namespace redlock {

std::optional<leader_info> leader_of(const std::vector<node_lock_view>& views, std::size_t quorum) {
  std::map<std::string_view, std::vector<const node_lock_view*>> holding;
  for (auto& v : views)
    if (!v.error && v.content == key_content::mutex && v.pttl.count() != -2 && v.pttl.count() != 0)
      holding[v.token].push_back(&v);
  for (auto& [token, masters] : holding) {
    if (masters.size() < quorum) continue;
    leader_info out;
    out.token = std::string(token);
    // The proclamation: 'epoch <T>[ <words>]' (leader_proclaim.lua).
    bool proclaimed = false;
    for (auto* m : masters) {
      std::string_view d = m->description;
      if (!d.starts_with("epoch ")) continue;
      d.remove_prefix(6);
      std::uint64_t epoch = 0;
      auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), epoch);
      if (ec != std::errc{} || (end != d.data() + d.size() && *end != ' ')) continue;
      proclaimed = true;
      out.epoch = std::max(out.epoch, epoch);
      if (end != d.data() + d.size()) out.description = std::string(end + 1, d.data() + d.size());
    }
    if (!proclaimed) return std::nullopt;
    // Past the quorum-th longest PTTL, fewer than a quorum hold it (-1: no
    // expiry, counted as the longest).
    std::vector<long long> pttls;
    for (auto* m : masters) pttls.push_back(m->pttl.count() < 0 ? LLONG_MAX : m->pttl.count());
    std::nth_element(pttls.begin(), pttls.begin() + static_cast<std::ptrdiff_t>(quorum - 1), pttls.end(),
                     std::greater<>());
    out.remaining = std::chrono::milliseconds(pttls[quorum - 1]);
    return out;
  }
  return std::nullopt;
}

namespace detail {

namespace asio = boost::asio;
using boost::system::error_code;

void start_campaign(std::shared_ptr<client_impl> client, std::string name, acquire_options options,
                    std::chrono::system_clock::time_point asked_at, acquire_handler handler) {
  options.fenced = true;  // the epoch
  options.renew = true;   // a leader leads until it resigns or loses the lease
  auto description = options.description;
  auto h = std::make_shared<acquire_handler>(std::move(handler));
  auto won = [client, h, description](error_code ec, lock l) mutable {
    if (ec) return complete_handler(client, std::move(*h), ec, std::move(l));
    asio::post(client->strand, [client, h, description, l = std::move(l)]() mutable {
      auto& state = lock_access::state(l);
      state->described = true;  // the proclamation lives in {R}:holder, which the release deletes
      auto words = "epoch " + std::to_string(*state->fence) + (description.empty() ? "" : " " + description);
      auto message = std::to_string(*state->fence) + " " + state->token;
      // Told or not, it leads: observers that missed it see it at their next read.
      round_ptr(new quorum_round(client->masters, scripts::leader_proclaim, {state->key, keys::holder(state->key)},
                                 {state->token, std::move(words), keys::leader_channel(state->key), message},
                                 classify_one_zero,
                                 [client, h, l](quorum_round&) mutable {
                                   complete_handler(client, std::move(*h), error_code{}, std::move(l));
                                 }))
          ->start();
    });
  };
  // The caller's cancellation slot goes with it: a campaign cancelled while
  // it waits stops as an acquisition does (cleaning up what it took).
  auto slot = asio::get_associated_cancellation_slot(*h);
  start_acquire(std::move(client), std::move(name), std::move(options), asked_at,
                acquire_handler(asio::bind_cancellation_slot(slot, std::move(won))));
}

void start_resign(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state, done_handler handler) {
  auto h = std::make_shared<done_handler>(std::move(handler));
  auto channel = keys::leader_channel(state->key);
  auto message = "resigned " + std::to_string(state->fence.value_or(0));
  start_release(client, std::move(state),
                done_handler([client, h, channel = std::move(channel), message = std::move(message)](error_code ec) {
                  asio::post(client->strand, [client, channel, message] {
                    round_ptr(new quorum_round(client->masters, {"PUBLISH", channel, message},
                                               [](const redisReply& r, node_outcome& out) {
                                                 return r.type == REDIS_REPLY_INTEGER ? verdict::yes
                                                                                      : failed_reply(r, out);
                                               },
                                               [](quorum_round&) {}))
                        ->start();
                  });
                  complete_handler(client, std::move(*h), ec);
                }));
}

void leader_watch::start() {
  auto client = client_.lock();
  if (!client) return;
  asio::post(client->strand, [self = shared_from_this(), client] {
    if (self->stopped_) return;
    self->channel_ = keys::leader_channel(client->key_for(self->name_));
    self->watch_id_ = client->listener->watch(self->channel_, [weak = self->weak_from_this()](std::uint32_t,
                                                                                              std::string_view) {
      if (auto s = weak.lock()) s->refresh();
    });
    self->refresh();
  });
}

void leader_watch::stop() {
  if (stopped_.exchange(true)) return;
  auto client = client_.lock();
  if (!client) return;
  asio::post(client->strand, [self = shared_from_this(), client] {
    if (auto timer = self->timer_.lock()) timer->cancel();
    if (self->watch_id_) client->listener->unwatch(self->channel_, self->watch_id_);
    self->watch_id_ = 0;
  });
}

// Several announcements (one per master) cost one read in flight and at most
// one more after it.
void leader_watch::refresh() {
  auto client = client_.lock();
  if (!client || stopped_) return;
  if (reading_) {
    read_again_ = true;
    return;
  }
  reading_ = true;
  start_status(client, name_,
               status_handler([self = shared_from_this(), client](error_code, std::vector<node_lock_view> views) {
                 asio::post(client->strand, [self, views = std::move(views)] { self->on_views(views); });
               }));
}

void leader_watch::on_views(const std::vector<node_lock_view>& views) {
  reading_ = false;
  auto client = client_.lock();
  if (!client || stopped_) return;
  auto now = leader_of(views, client->quorum());
  bool changed = !reported_ || now.has_value() != last_.has_value() ||
                 (now && (now->token != last_->token || now->epoch != last_->epoch));
  last_ = now;
  reported_ = true;
  if (changed)
    asio::post(client->executor, [self = shared_from_this(), now] {
      if (!self->stopped_) self->on_change_(now);
    });
  if (read_again_) {
    read_again_ = false;
    return refresh();
  }
  // A leader that dies without resigning tells no one: look again when its
  // lease would end (renewals will have moved it, if it lives).
  // (One read at a time, but a pushed change may end one while the last
  // read's wait is still pending: it is replaced, as expires_after did.)
  if (auto pending = timer_.lock()) pending->cancel();
  auto timer = std::make_shared<asio::steady_timer>(client->strand,
                                                    now ? now->remaining + std::chrono::milliseconds(5) : fallback_);
  timer_ = timer;
  timer->async_wait([timer, weak = weak_from_this()](error_code ec) {
    if (auto s = weak.lock(); s && !ec) s->refresh();
  });
}

}  // namespace detail

leader_subscription& leader_subscription::operator=(leader_subscription&& other) noexcept {
  if (this != &other) {
    stop();
    watch_ = std::move(other.watch_);
  }
  return *this;
}

leader_subscription::~leader_subscription() { stop(); }

void leader_subscription::stop() {
  if (watch_) watch_->stop();
  watch_.reset();
}

}  // namespace redlock
