// SPDX-License-Identifier: Apache-2.0
// The decisions of one acquisition, without I/O (docs/algorithm.md, sections
// 2 and 9 to 15): when to send an attempt and of which sort, what a decided
// round means, when to clean up, how long to wait, when to give up. Events
// go in (a round decided, a timer fired, a release heard, a cancellation)
// and one action comes out; acquire_op carries the actions out and reports
// what happened as the next event, as Boost.Redis's exec_fsm does for a
// request. Pure: every input, the clocks and the jittered delay included,
// comes with the event (unit-tested in test/unit/test_acquire_fsm.cpp).
#pragma once

#include <redlock/clock.hpp>
#include <redlock/options.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace redlock::detail {

/// What an acquisition knows at its start, fixed for its life.
struct acquire_terms {
  acquire_options options;        ///< the caller's (kind, wait, attempts, delays, ttl, ...)
  std::size_t quorum = 1;
  milliseconds node_timeout{50};
  /// A mutex (or semaphore) acquisition that may wait: it has a name on the
  /// masters' wake lists, written by its script attempts a quorum refused.
  bool listed_waiter = false;
  /// A refusal may be someone else's data under the name, which a plain
  /// SET NX cannot tell (an unfenced mutex over one name): look before
  /// reporting not_acquired.
  bool checks_key_type = false;
};

/// One decided round (an attempt, or the fence raise), as the acquisition needs it.
struct round_summary {
  bool won = false;     ///< a quorum said yes with enough validity left
  bool quorum = false;  ///< a quorum said yes (won, or too little validity left)
  boost::system::error_code failure;  ///< why not, when it is not a plain refusal
  std::size_t refused = 0;            ///< masters that refused it
  steady_time started_at{};           ///< its send time (client clock)
};

struct acquire_event {
  enum class type {
    started,           ///< the acquisition begins (`listed_until`: our release listed us behind a woken waiter)
    round_decided,     ///< an attempt's round was decided (`round`, `queue_rank`)
    fence_raised,      ///< the fence raise was decided (`round`: won = raised in time)
    cleaned_up,        ///< the clean-up asked for was sent
    timer_fired,       ///< the retry timer completed (expired or cancelled)
    release_heard,     ///< a release that may let us in was announced (or named us)
    handed_over,       ///< releases handed us the lock on a quorum (fair), with validity left
    cancelled,         ///< the caller cancelled
    key_type_checked,  ///< the masters were asked what is under the name (`wrong_type`)
  };
  type what = type::started;
  steady_time now{};                                ///< client clock
  std::chrono::steady_clock::time_point real_now{};  ///< the wait budget's clock
  milliseconds jittered_delay{0};  ///< a fresh retry delay +/- jitter (for a decision that may wait)
  bool client_stopped = false;     ///< the client is shutting down
  bool releaser_woke_waiter = false;  ///< this client's release of the lock just woke a waiter (section 10)
  std::optional<steady_time> listed_until;  ///< started: listed by our own release, until then
  round_summary round{};
  std::size_t queue_rank = 0;  ///< fair: waiters ahead of us on a quorum at that round
  bool wrong_type = false;
};

struct acquire_action {
  enum class type {
    none,            ///< nothing to do
    attempt,         ///< send an attempt (`join_line_only`, `plain`; `counted`: an attempt, not only a listing)
    raise_fence,     ///< send the fence raise for the round just won
    hold,            ///< the lock is ours: make the handle and complete
    clean_up,        ///< release what the last attempt (or hand-over) may hold, then report cleaned_up
    wait,            ///< start the retry timer for `delay`, listening for releases
    cancel_timer,    ///< cut the retry timer short (its completion is timer_fired)
    check_key_type,  ///< ask what is under the name, then report key_type_checked
    complete,        ///< complete with `ec`, and take down what a waiter left on the masters
  };
  acquire_action() = default;
  acquire_action(type t) : what(t) {}  // NOLINT(google-explicit-constructor): `return {type::hold};`
  type what = type::none;
  bool join_line_only = false;
  bool plain = false;
  bool counted = false;
  milliseconds delay{0};
  boost::system::error_code ec;
};

class acquire_fsm {
 public:
  explicit acquire_fsm(acquire_terms terms) : terms_(std::move(terms)) {}

  acquire_action resume(const acquire_event& e);

  const acquire_terms& terms() const noexcept { return terms_; }
  unsigned attempts() const noexcept { return attempts_; }
  bool done() const noexcept { return phase_ == phase::done; }
  bool cancelled() const noexcept { return cancelled_; }
  /// The attempt in flight is a woken waiter's plain retry.
  bool plain_retry() const noexcept { return plain_; }
  /// Until when our wake-list entries surely outlive a retry (client clock).
  steady_time listed_until() const noexcept { return listed_until_; }

 private:
  enum class phase : std::uint8_t {
    attempting,        ///< an attempt (or its fence raise) is in flight
    attempting_woken,  ///< ... and a release was announced meanwhile (or during the clean-up of a
                       ///< refused attempt): if it fails, retry at once
    cleaning_up,       ///< a failed attempt's clean-up is being sent
    waiting,           ///< on the retry timer
    checking,          ///< asking what is under the name before reporting not_acquired
    done,              ///< completed (or the lock handed over)
  };

  acquire_action attempt(const acquire_event& e);
  acquire_action decided(const acquire_event& e);
  acquire_action raised(const acquire_event& e);
  acquire_action clean_up(boost::system::error_code why);
  acquire_action retry_or_fail(const acquire_event& e);
  acquire_action complete(boost::system::error_code ec);
  bool permanent(const boost::system::error_code& why) const;

  acquire_terms terms_;
  phase phase_ = phase::attempting;
  bool started_ = false;
  bool cancelled_ = false;
  unsigned attempts_ = 0;
  std::chrono::steady_clock::time_point wait_deadline_{};
  boost::system::error_code why_;  // the failure being cleaned up after
  std::size_t queue_rank_ = 0;
  // Mutex waiters (section 10): this round only joins the line behind a
  // woken waiter (not an attempt); the line was joined; a release was heard
  // since the last attempt; the attempt in flight is a plain retry.
  bool joins_line_ = false, joined_line_ = false;
  bool woken_ = false;
  bool plain_ = false;
  steady_time listed_until_{};
};

}  // namespace redlock::detail
