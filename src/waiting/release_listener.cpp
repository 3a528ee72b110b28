#include "release_listener.hpp"

#include "client/client_impl.hpp"

namespace redlock::detail {

void release_listener::ensure_connections() {
  if (!subscribers_.empty()) return;
  // Callbacks hold the client weakly: the connections may outlive it.
  std::weak_ptr<client_impl> weak = client_.shared_from_this();
  for (auto& node : client_.nodes) {
    auto sub = std::make_shared<connection>(client_.strand, node->address(), client_.options, client_.tls.get());
    std::weak_ptr<connection> weak_sub = sub;
    sub->enable_push(
        [weak](const redisReply& r) {
          if (auto c = weak.lock()) c->listener.on_push(r);
        },
        [weak, weak_sub] {
          // (Re)connected: subscribe to every channel someone watches.
          auto c = weak.lock();
          auto s = weak_sub.lock();
          if (!c || !s || c->listener.watchers_.empty()) return;
          std::vector<std::string_view> argv{"SUBSCRIBE"};
          for (auto& [channel, _] : c->listener.watchers_) argv.push_back(channel);
          std::string cmd;
          append_command(cmd, argv.data(), argv.size());
          s->send_push(cmd);
        });
    subscribers_.push_back(std::move(sub));
  }
}

void release_listener::send_to_all(const std::string& command) {
  for (auto& s : subscribers_) s->send_push(command);
}

release_listener::waiter_id release_listener::watch(const std::string& channel, wake_fn wake) {
  ensure_connections();
  auto [it, fresh] = watchers_.try_emplace(channel);
  auto id = next_id_++;
  it->second.emplace(id, std::move(wake));
  if (fresh) {
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
  watchers_.erase(it);
  std::string cmd;
  append_command(cmd, {"UNSUBSCRIBE", channel});
  send_to_all(cmd);
}

void release_listener::on_push(const redisReply& r) {
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
  for (auto& w : wakes) w(payload);
}

void release_listener::shutdown() {
  watchers_.clear();
  for (auto& s : subscribers_) s->shutdown();
}

}  // namespace redlock::detail
