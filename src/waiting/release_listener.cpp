// SPDX-License-Identifier: Apache-2.0
#include "release_listener.hpp"

namespace redlock::detail {

void release_listener::ensure_connections() {
  if (!subscribers_.empty()) return;
  // Callbacks hold the listener weakly: the connections may outlive it.
  std::weak_ptr<release_listener> weak = weak_from_this();
  for (std::uint32_t i = 0; i < masters_.size(); ++i) {
    auto sub = std::make_shared<connection>(strand_, masters_[i], config_, tls_);
    std::weak_ptr<connection> weak_sub = sub;
    sub->enable_push(
        [weak, i](const redisReply& r) {
          if (auto l = weak.lock()) l->on_push(i, r);
        },
        [weak, weak_sub] {
          // (Re)connected: subscribe to every channel someone watches.
          auto l = weak.lock();
          auto s = weak_sub.lock();
          if (!l || !s || l->watchers_.empty()) return;
          std::vector<std::string_view> argv{"SUBSCRIBE"};
          for (auto& [channel, _] : l->watchers_) argv.push_back(channel);
          std::string cmd;
          append_command(cmd, argv);
          s->send_push(cmd);
        });
    subscribers_.push_back(std::move(sub));
  }
}

void release_listener::send_to_all(const std::string& command) {
  for (auto& s : subscribers_) s->send_push(command);
}

void release_listener::keep_connections_open(bool on) {
  // While someone may wait on a channel, a dropped or silent subscriber
  // connection comes back by itself and resubscribes: a waiter must not be
  // left with only its (possibly long) retry delay.
  for (auto& s : subscribers_) s->keep_push_open(on);
}

release_listener::waiter_id release_listener::watch(const std::string& channel, wake_fn wake) {
  ensure_connections();
  auto [it, fresh] = watchers_.try_emplace(channel);
  idle_since_.erase(channel);
  auto id = next_id_++;
  it->second.emplace(id, std::move(wake));
  if (fresh) {
    if (watchers_.size() == 1) keep_connections_open(true);
    std::string cmd;
    append_command(cmd, {"SUBSCRIBE", channel});
    send_to_all(cmd);
  }
  return id;
}

void release_listener::unwatch(const std::string& channel, waiter_id id) {
  auto it = watchers_.find(channel);
  if (it == watchers_.end()) return;
  it->second.erase(id);
  if (!it->second.empty()) return;
  idle_since_[channel] = std::chrono::steady_clock::now();
  schedule_sweep();
}

void release_listener::schedule_sweep() {
  if (sweep_pending_) return;
  if (!sweep_) sweep_.emplace(strand_);
  sweep_pending_ = true;
  sweep_->expires_after(linger);
  sweep_->async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    auto l = weak.lock();
    if (!l) return;
    l->sweep_pending_ = false;
    if (!ec) l->unsubscribe_idle();
  });
}

void release_listener::unsubscribe_idle() {
  auto cutoff = std::chrono::steady_clock::now() - linger;
  std::vector<std::string_view> argv{"UNSUBSCRIBE"};
  std::vector<std::string> gone;
  for (auto& [channel, since] : idle_since_)
    if (since <= cutoff) gone.push_back(channel);
  for (auto& channel : gone) {
    idle_since_.erase(channel);
    watchers_.erase(channel);
  }
  if (!gone.empty()) {
    for (auto& channel : gone) argv.push_back(channel);
    std::string cmd;
    append_command(cmd, argv);
    send_to_all(cmd);
    if (watchers_.empty()) keep_connections_open(false);
  }
  if (!idle_since_.empty()) schedule_sweep();
}

void release_listener::on_push(std::uint32_t node, const redisReply& r) {
  // ["message", channel, payload]; subscribe confirmations are ignored.
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 3) return;
  auto kind = reply_text(*r.element[0]);
  if (kind != "message") return;
  auto it = watchers_.find(reply_text(*r.element[1]));
  if (it == watchers_.end()) return;
  std::string payload(reply_text(*r.element[2]));
  // Copy: a wake-up may unwatch (and so erase) while we iterate.
  std::vector<wake_fn> wakes;
  for (auto& [_, w] : it->second) wakes.push_back(w);
  for (auto& w : wakes) w(node, payload);
}

void release_listener::shutdown() {
  watchers_.clear();
  idle_since_.clear();
  if (sweep_) sweep_->cancel();
  for (auto& s : subscribers_) s->shutdown();
}

}  // namespace redlock::detail
