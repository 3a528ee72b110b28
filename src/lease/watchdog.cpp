// SPDX-License-Identifier: Apache-2.0
#include "watchdog.hpp"

#include <redlock/error.hpp>
#include <redlock/observer.hpp>

#include <boost/asio/post.hpp>

namespace redlock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

watchdog::watchdog(asio::any_io_executor strand, asio::any_io_executor user_executor,
                   std::shared_ptr<redlock::observer> observer, const std::shared_ptr<lock_state>& state, double fraction,
                   std::chrono::milliseconds max_hold, renew_function renew)
    : state_(state),
      renew_(std::move(renew)),
      user_executor_(std::move(user_executor)),
      observer_(std::move(observer)),
      timer_(strand),
      window_end_(std::move(strand)),
      interval_(std::max(std::chrono::milliseconds(1),
                         std::chrono::duration_cast<std::chrono::milliseconds>(state->ttl * fraction))) {
  if (max_hold.count() > 0) renew_until_ = state->now() + max_hold;
}

void watchdog::start() {
  schedule(within_window(interval_));
  watch_window_end();
}

void watchdog::watch_window_end() {
  auto state = state_.lock();
  if (!state || stopped_ || !state->has_window) return;
  auto wait = state->get_valid_until() - state->now();
  // An injected clock (client_options::clock) may run fast or jump: its
  // window can end long before a timer armed in steady time fires. Look
  // again every twentieth of the TTL, so the end is signalled within a
  // tenth of it whatever that clock does.
  if (state->clock)
    wait = std::min<std::chrono::steady_clock::duration>(
        wait, std::max<std::chrono::steady_clock::duration>(std::chrono::milliseconds(1), state->ttl / 20));
  window_end_.expires_after(wait);
  window_end_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->stopped_) return;
    auto state = self->state_.lock();
    if (!state || state->released) return;
    // Renewed (or extended) meanwhile: watch the new end.
    if (state->get_valid_until() > state->now()) return self->watch_window_end();
    self->declare_lost(self->window_end_reason());
  });
}

lost_reason watchdog::window_end_reason() const {
  return renewal_failing_ ? lost_reason::quorum_lost : lost_reason::expired;
}

std::chrono::steady_clock::duration watchdog::within_window(std::chrono::steady_clock::duration delay) const {
  // Never wait past half of the window left: a fair lock handed over starts
  // with at most its queue timeout of validity until the winner's
  // confirmation lands, and a window may be shorter than the one the
  // interval was made for.
  if (auto state = state_.lock()) {
    auto left = state->get_valid_until() - state->now();
    delay = std::max<std::chrono::steady_clock::duration>(std::chrono::milliseconds(1), std::min(delay, left / 2));
    // Wake at the cap to signal it then, not up to a renewal interval later.
    if (renew_until_) delay = std::max<std::chrono::steady_clock::duration>(
                          std::chrono::steady_clock::duration::zero(), std::min(delay, *renew_until_ - state->now()));
  }
  return delay;
}

void watchdog::stop() {
  stopped_ = true;
  timer_.cancel();
  window_end_.cancel();
}

void watchdog::schedule(std::chrono::steady_clock::duration delay) {
  timer_.expires_after(delay);
  timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec && !self->stopped_) self->renew();
  });
}

void watchdog::renew() {
  auto state = state_.lock();
  if (!state || state->released) return;
  // The window ended while we slept: the lock is lost; a renewal must not
  // revive it. Said as the window's timer would (it may be due too, behind
  // us): quorum_lost after failed renewals, else expired (the client's
  // clock jumped, or the process was paused).
  if (state->get_valid_until() <= state->now()) return declare_lost(window_end_reason());
  // Held as long as allowed: the lease is left to end by itself (not
  // released: the holder may still be finishing its work in the window).
  if (renew_until_ && state->now() >= *renew_until_) return declare_lost(lost_reason::max_hold);
  renewal_failing_ = true;  // until a renewal succeeds
  renew_(state, [self = shared_from_this()](error_code ec) { self->on_renewed(ec); });
}

void watchdog::on_renewed(error_code ec) {
  auto state = state_.lock();
  if (stopped_ || !state || state->released) return;
  if (observer_) observer_->on_renewal(state->name, ec);
  if (!ec) {
    renewal_failing_ = false;
    return schedule(within_window(interval_));
  }
  auto remaining = state->get_valid_until() - state->now();
  // Refusals from so many masters that no quorum could renew: the lock is
  // gone (run_extend says not_held only then).
  if (ec == errc::not_held)
    return declare_lost(remaining > std::chrono::steady_clock::duration::zero() ? lost_reason::taken_over
                                                                                 : lost_reason::expired);
  // Anything else (timeouts, errors, too late) is transient: try again while
  // validity remains.
  if (remaining <= std::chrono::steady_clock::duration::zero())
    return declare_lost(ec == errc::validity_expired ? lost_reason::expired : lost_reason::quorum_lost);
  schedule(within_window(interval_ / 4 + std::chrono::milliseconds(1)));
}

void watchdog::declare_lost(lost_reason why) {
  auto state = state_.lock();
  if (!state || stopped_) return;
  stopped_ = true;
  timer_.cancel();
  window_end_.cancel();
  state->lost.store(static_cast<int>(why));
  state->lost_signal.emit(asio::cancellation_type::terminal);
  if (observer_) observer_->on_lease_lost(state->name, why);
  state->end_hold(hold_end::lost, why);
  if (state->on_lost) asio::post(user_executor_, [f = state->on_lost, why] { f(why); });
}

}  // namespace redlock::detail
