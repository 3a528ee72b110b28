// Wake-ups for waiters: one subscriber connection per master per client,
// channels multiplexed on it. A waiter watches its lock's release channel
// and retries at once on a message instead of sleeping out its retry delay.
// A channel is subscribed while someone watches it and unsubscribed after.
#pragma once

#include "connection/connection.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

class client_impl;

class release_listener {
 public:
  using waiter_id = std::uint64_t;
  using wake_fn = std::function<void(std::string_view payload)>;

  explicit release_listener(client_impl& client) : client_(client) {}

  /// Starts watching `channel` (subscribing on every master if it is new).
  waiter_id watch(const std::string& channel, wake_fn wake);
  /// Stops; the last watcher of a channel unsubscribes it.
  void unwatch(const std::string& channel, waiter_id id);

  /// Channels currently subscribed (for tests: no leak).
  std::size_t channel_count() const noexcept { return watchers_.size(); }

  void shutdown();

 private:
  void ensure_connections();
  void send_to_all(const std::string& command);
  void on_push(const redisReply& reply);

  client_impl& client_;
  std::vector<std::shared_ptr<connection>> subscribers_;
  std::map<std::string, std::map<waiter_id, wake_fn>, std::less<>> watchers_;
  waiter_id next_id_ = 1;
};

}  // namespace redlock::detail
