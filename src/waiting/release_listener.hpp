// SPDX-License-Identifier: Apache-2.0
// Wake-ups for waiters: one subscriber connection per master per client,
// channels multiplexed on it. A waiter watches its lock's release channel
// and retries at once on a message instead of sleeping out its retry delay.
// A channel is subscribed while someone watches it and unsubscribed about a
// second after the last watcher left: a client that waits on the same lock
// again and again (the common case under contention) keeps its subscription
// instead of paying SUBSCRIBE and UNSUBSCRIBE on every master each time.
// While any channel is subscribed the subscriber connections reconnect and
// resubscribe by themselves after a drop, and PING when quiet so a silent
// (stopped, blackholed) master is noticed within the stall timeout.
#pragma once

#include "connection/connection.hpp"

#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <optional>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

/// Owned by one client through a shared_ptr: the connections' callbacks hold
/// it weakly, so it may go away while a message is in flight.
class release_listener : public std::enable_shared_from_this<release_listener> {
 public:
  using waiter_id = std::uint64_t;
  /// `node`: the master the message came from.
  using wake_fn = std::function<void(std::uint32_t node, std::string_view payload)>;

  /// `masters`: where the client's locks live; `tls`: owned by the client,
  /// which outlives its listener's connections (they are shut down with it).
  release_listener(strand_type strand, std::vector<node_address> masters, connection_config config,
                   boost::asio::ssl::context* tls)
      : strand_(std::move(strand)), masters_(std::move(masters)), config_(std::move(config)), tls_(tls) {}

  /// How long a channel nobody watches stays subscribed.
  static constexpr std::chrono::milliseconds linger{1000};

  /// Starts watching `channel` (subscribing on every master if it is new).
  waiter_id watch(const std::string& channel, wake_fn wake);
  /// Stops; the channel is unsubscribed once nobody watched it for `linger`.
  void unwatch(const std::string& channel, waiter_id id);
  /// Subscribed already (watched, or lingering): watching it costs nothing.
  bool subscribed(std::string_view channel) const { return watchers_.find(channel) != watchers_.end(); }
  /// Some channel is subscribed (lets a caller skip spelling one out).
  bool subscribed_any() const { return !watchers_.empty(); }

  void shutdown();

 private:
  void ensure_connections();
  void send_to_all(const std::string& command);
  void keep_connections_open(bool on);
  void on_push(std::uint32_t node, const redisReply& reply);
  void schedule_sweep();
  void unsubscribe_idle();

  strand_type strand_;
  std::vector<node_address> masters_;
  connection_config config_;
  boost::asio::ssl::context* tls_;
  std::vector<std::shared_ptr<connection>> subscribers_;
  // Every subscribed channel; an empty map: nobody watches it since `idle_since_`.
  std::map<std::string, std::map<waiter_id, wake_fn>, std::less<>> watchers_;
  std::map<std::string, std::chrono::steady_clock::time_point, std::less<>> idle_since_;
  std::optional<boost::asio::steady_timer> sweep_;
  bool sweep_pending_ = false;
  waiter_id next_id_ = 1;
};

}  // namespace redlock::detail
