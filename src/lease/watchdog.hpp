// SPDX-License-Identifier: Apache-2.0
// Lease renewal: extends a held lock through the quorum every
// ttl * renew_fraction, and when it cannot keep the lease marks the lock lost,
// signals its lost_slot() and runs on_lost. Lives on the client's strand.
#pragma once

#include "lease/lock_state.hpp"

#include <redlock/observer.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>
#include <optional>

namespace redlock::detail {

class watchdog : public std::enable_shared_from_this<watchdog> {
 public:
  /// Sends one renewal of `state` for its ttl and calls `done` with the
  /// round's result (errc::not_held only when refusals make a quorum
  /// impossible). Never calls `done` when the client is gone or stopping.
  using renew_function =
      std::function<void(const std::shared_ptr<lock_state>& state, std::function<void(boost::system::error_code)> done)>;

  /// `strand`: the client's (the timer and every callback run there);
  /// `user_executor`: where on_lost runs; `max_hold`: renew no longer than
  /// this from now, then signal lost_reason::max_hold (zero: no cap).
  watchdog(boost::asio::any_io_executor strand, boost::asio::any_io_executor user_executor,
           std::shared_ptr<redlock::observer> observer, const std::shared_ptr<lock_state>& state, double fraction,
           std::chrono::milliseconds max_hold, renew_function renew);
  void start();
  /// Called on release: no renewal is sent afterwards.
  void stop();

 private:
  void schedule(std::chrono::steady_clock::duration delay);
  /// `delay`, but no more than half of the validity window left, nor past
  /// the end of renewing (max_hold).
  std::chrono::steady_clock::duration within_window(std::chrono::steady_clock::duration delay) const;
  void renew();
  void on_renewed(boost::system::error_code ec);
  /// Wakes when the window ends (with an injected clock, also every
  /// twentieth of the TTL before): a lease whose renewal is still in flight
  /// (masters not answering), or whose clock jumped past its end, is lost
  /// then, not a node timeout or a renewal interval later.
  void watch_window_end();
  /// Why a window found over is lost: quorum_lost while renewals fail (the
  /// masters did not renew it), else expired (a jump, a pause).
  lost_reason window_end_reason() const;
  void declare_lost(lost_reason why);

  // Weak: a lock whose every handle was dropped stops being renewed and expires.
  std::weak_ptr<lock_state> state_;
  renew_function renew_;
  boost::asio::any_io_executor user_executor_;
  std::shared_ptr<observer> observer_;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer window_end_;
  std::chrono::milliseconds interval_;
  std::optional<steady_time> renew_until_;  // max_hold: no renewal from then on
  bool stopped_ = false;
  // A renewal is in flight or the last one failed: a window that ends now
  // ends because the masters did not renew it (quorum_lost), not by a jump.
  bool renewal_failing_ = false;
};

}  // namespace redlock::detail
