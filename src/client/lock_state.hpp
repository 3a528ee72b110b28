// SPDX-License-Identifier: Apache-2.0
// The state behind a redlock::lock handle.
#pragma once

#include <redlock/clock.hpp>
#include <redlock/lock.hpp>

#include <boost/asio/cancellation_signal.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

class watchdog;

struct lock_state {
  std::string name;
  std::string key;
  std::string token;
  std::chrono::milliseconds ttl{0};
  // Atomic so a watchdog/extend on the I/O thread can move it while the owner reads.
  std::atomic<steady_time::rep> valid_until{0};
  std::optional<std::uint64_t> fence;
  std::vector<node_result> nodes;
  std::shared_ptr<const clock_source> clock;  // null: steady clock
  const void* owner = nullptr;                 // the client_impl that acquired it
  lock_kind kind = lock_kind::mutex;
  std::atomic<int> holds{1};  // reentrant/fair: levels held by this owner (client side is authoritative)
  std::string registry_key;   // reentrant/fair: entry in client_impl::held
  std::uint64_t hold_id = 0;  // reentrant/fair: the latest request id of the winning acquisition

  // Lease renewal (strand only, except `lost`, read by the owner).
  std::atomic<int> lost{0};  // lost_reason
  boost::asio::cancellation_signal lost_signal;
  std::function<void(lost_reason)> on_lost;
  std::shared_ptr<watchdog> dog;
  bool released = false;

  steady_time now() const { return clock ? clock->now() : std::chrono::steady_clock::now(); }
  void set_valid_until(steady_time t) { valid_until.store(t.time_since_epoch().count(), std::memory_order_release); }
  steady_time get_valid_until() const {
    return steady_time(steady_time::duration(valid_until.load(std::memory_order_acquire)));
  }
};

}  // namespace redlock::detail
