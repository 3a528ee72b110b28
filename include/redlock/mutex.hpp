// SPDX-License-Identifier: Apache-2.0
// redlock::mutex: one named lock as a standard Lockable, so that
// std::unique_lock, std::scoped_lock and std::lock work with it:
//
//   redlock::mutex jobs(client, "nightly-jobs", {.ttl = 30s, .renew = true});
//   std::unique_lock guard(jobs);   // blocks until held on a quorum
//   run(jobs.held().fence());       // the lock, for its token and validity
//
// The standard interface cannot say "lost": check held().lost() or bind work
// to held().lost_slot() inside the section, as with any lock.
#pragma once

#include <redlock/client.hpp>
#include <redlock/error.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <utility>

namespace redlock {

class mutex {
 public:
  /// `options` are used for every acquisition (their retry delays pace
  /// lock(), their wait how long each of its calls lasts; try_lock() makes
  /// one attempt).
  mutex(client& c, std::string name, acquire_options options = {})
      : client_(c), name_(std::move(name)), options_(std::move(options)) {}
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;
  /// A mutex destroyed while held releases quietly (the keys expire anyway).
  ~mutex() { unlock(); }

  /// Blocks until the lock is held. While others hold it, it waits as
  /// acquire() with a wait does: an attempt per retry delay, and woken by
  /// their release (a waiter on the masters' wake lists). It waits in calls
  /// of `options.wait`, but at least a second and two retry delays, with no
  /// limit on attempts within them: an error that lasts a whole call is
  /// thrown as redlock::error (bad options, masters unreachable or refusing
  /// service), contention never is. Throws std::logic_error when this mutex
  /// is already held through this object.
  void lock() { static_cast<void>(lock(std::stop_token{})); }

  /// lock() that a stop request on `stop` (from any thread) ends: true when
  /// the lock is held, false when the stop came first. Then nothing is held
  /// and its attempt's grants and place in line are being taken down
  /// (client::acquire with a stop_token). With std::unique_lock:
  ///   if (jobs.lock(stop)) { std::unique_lock guard(jobs, std::adopt_lock); ... }
  [[nodiscard]] bool lock(std::stop_token stop) {
    if (held_) throw std::logic_error("redlock::mutex '" + name_ + "': lock() while already held");
    // With one attempt per call (the default wait of 0), lock() called
    // try_acquire again at once, round after round: thousands of SETs per
    // second on every master, and no place on the wake lists.
    auto waiting = options_;
    waiting.max_attempts = 0;
    waiting.wait = std::max({options_.wait, milliseconds(1000), 2 * (options_.retry_delay + options_.retry_jitter)});
    for (;;) {
      try {
        if (auto l = client_.try_acquire(name_, waiting, stop)) {
          held_ = std::move(*l);
          return true;
        }
      } catch (const error& e) {
        if (e.code() == boost::asio::error::operation_aborted) return false;
        throw;
      }
    }
  }

  /// One attempt: true when it is now held. Throws like lock().
  bool try_lock() {
    if (held_) return false;
    auto once = options_;
    once.wait = milliseconds(0);
    once.max_attempts = 1;
    if (auto l = client_.try_acquire(name_, once)) held_ = std::move(*l);
    return held_.has_value();
  }

  /// Releases on every master. Never throws (the standard requires it): a
  /// failed release is kept in last_release_error(), and the keys expire
  /// after their TTL.
  void unlock() noexcept {
    if (!held_) return;
    auto l = std::move(*held_);
    held_.reset();
    client_.release(l, last_release_error_);
  }

  /// The lock while held (its token, fence, validity, lost signal).
  const redlock::lock& held() const {
    if (!held_) throw error(errc::empty_lock, "redlock::mutex '" + name_ + "' is not held");
    return *held_;
  }
  bool owns_lock() const noexcept { return held_.has_value(); }
  const std::string& name() const noexcept { return name_; }
  /// Why the last unlock() could not confirm the release (empty if it could).
  boost::system::error_code last_release_error() const noexcept { return last_release_error_; }

 private:
  client& client_;
  std::string name_;
  acquire_options options_;
  std::optional<redlock::lock> held_;
  boost::system::error_code last_release_error_;
};

}  // namespace redlock
