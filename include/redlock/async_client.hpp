// SPDX-License-Identifier: Apache-2.0
// The asynchronous API: every operation takes any Asio completion token
// (a callback, asio::use_future, asio::use_awaitable, asio::deferred, ...).
// Without one it returns an asio::deferred operation: `co_await` it in a
// coroutine, or call it later with a token.
#pragma once

#include <redlock/export.hpp>

#include <redlock/election.hpp>
#include <redlock/error.hpp>
#include <redlock/lock.hpp>
#include <redlock/options.hpp>
#include <redlock/signatures.hpp>
#include <redlock/status.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

namespace detail {
class client_impl;
}

/// The asynchronous client: one connection per master on the given
/// executor; thread-safe to call from any thread.
class REDLOCK_EXPORT async_client {
 public:
  using executor_type = boost::asio::any_io_executor;
  using acquire_signature = redlock::acquire_signature;
  using done_signature = redlock::done_signature;
  using status_signature = redlock::status_signature;
  using leader_signature = redlock::leader_signature;

  /// Validates the options (throws redlock::error naming the bad one) and
  /// prepares one connection per master. Connections are opened lazily; an
  /// unreachable master is reported per operation, the others still work.
  async_client(executor_type executor, client_options options);
  /// Closes the connections; operations still in flight complete with
  /// errc::shutting_down, except releases: each still goes to every master
  /// that may hold its key (at most connect_timeout + node_timeout more,
  /// while the executor runs). Locks still held expire after their TTL.
  ~async_client();
  async_client(const async_client&) = delete;
  async_client& operator=(const async_client&) = delete;

  executor_type get_executor() const noexcept;
  const client_options& options() const noexcept;
  std::size_t quorum() const noexcept;

  /// Acquires `name` on a quorum of masters, retrying as `opts` allow.
  /// Completes with a lock on success; with errc::not_acquired,
  /// errc::validity_expired or the first per-master error otherwise. Per-operation
  /// cancellation (a bound cancellation slot) stops retrying and releases.
  template <typename Token = boost::asio::deferred_t>
  auto async_acquire(std::string name, acquire_options opts, Token&& token = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, acquire_signature>(
        [this](auto handler, std::string n, acquire_options o) {
          start_acquire(std::move(n), o, std::move(handler));
        },
        token, std::move(name), opts);
  }

  /// Releases on every master (compare-and-delete) and publishes the release.
  /// The lock has no validity left from this call on. Completes with success
  /// when a quorum confirmed; errc::not_held when so many masters no longer
  /// had our token that no quorum could (expired or taken over); otherwise
  /// the error of a master that did not answer (the keys there are deleted
  /// when the request runs, or expire with their TTL).
  template <typename Token = boost::asio::deferred_t>
  auto async_release(lock l, Token&& token = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, done_signature>(
        [this](auto handler, lock held) { start_release(std::move(held), std::move(handler)); }, token,
        std::move(l));
  }

  /// Makes the lease last at least `ttl` from now on a quorum (compare, then
  /// lengthen; a key is never shortened) and moves the lock's validity window
  /// later (never earlier). errc::not_held only when refusals made a quorum
  /// impossible (the lease is gone); a transient error such as errc::timeout
  /// when masters did not answer (the window stays where it was).
  template <typename Token = boost::asio::deferred_t>
  auto async_extend(lock l, milliseconds ttl, Token&& token = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, done_signature>(
        [this](auto handler, lock held, milliseconds t) { start_extend(std::move(held), t, std::move(handler)); },
        token, std::move(l), ttl);
  }

  /// Each master's view of `name` (holder, PTTL, fence counter), waiting for
  /// every master up to the node timeout. Read-only.
  template <typename Token = boost::asio::deferred_t>
  auto async_status(std::string name, Token&& token = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, status_signature>(
        [this](auto handler, std::string n) { start_status(std::move(n), std::move(handler)); }, token,
        std::move(name));
  }

  /// The names of the locks on every master, by SCAN (COUNT
  /// list_options::scan_count, never KEYS: the masters keep serving between
  /// calls), up to list_options::max_names; each master's cursor walked to
  /// its end, with a per-call deadline of the node timeout. A master that
  /// does not answer is reported in lock_listing::nodes, not as an error.
  template <typename Token = boost::asio::deferred_t>
  auto async_list(list_options opts, Token&& token = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, list_signature>(
        [this](auto handler, list_options o) { start_list(o, std::move(handler)); }, token, opts);
  }

  /// An operator's tool: removes every hold of `name` on every master,
  /// whoever holds it, and announces the release as the kind's own release
  /// does (waiters retry at once; a leader's observers hear it resigned).
  /// `only`: remove holds of that representation alone (key_content::mutex,
  /// reentrant, rwlock or semaphore), leaving any other. Fence counters are
  /// kept, so fencing tokens keep increasing. A holder that is alive is not
  /// told: it keeps running until its next renewal finds its token gone.
  /// Completes with each master's outcome (errc::wrong_type where the key
  /// is someone else's data: untouched).
  template <typename Token = boost::asio::deferred_t>
  auto async_force_release(std::string name, std::optional<key_content> only = std::nullopt,
                           Token&& token = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, force_release_signature>(
        [this](auto handler, std::string n, std::optional<key_content> k) {
          start_force_release(std::move(n), k, std::move(handler));
        },
        token, std::move(name), only);
  }

  /// Leader election (redlock/election.hpp): acquires `name` as a fenced,
  /// renewed mutex (`opts.fenced` and `opts.renew` are forced on; kind must
  /// be mutex), retrying for `opts.wait`, then proclaims its epoch (the
  /// fencing token) to the masters and the observers. lock::fence() is the
  /// epoch; leadership lost is the lock's lost signal (on_lost, lost_slot).
  template <typename Token = boost::asio::deferred_t>
  auto async_campaign(std::string name, acquire_options opts, Token&& token = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, acquire_signature>(
        [this](auto handler, std::string n, acquire_options o) {
          start_campaign(std::move(n), o, std::move(handler));
        },
        token, std::move(name), opts);
  }

  /// Steps down: releases the leadership and tells the observers at once.
  template <typename Token = boost::asio::deferred_t>
  auto async_resign(lock l, Token&& token = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, done_signature>(
        [this](auto handler, lock held) { start_resign(std::move(held), std::move(handler)); }, token,
        std::move(l));
  }

  /// Who leads `name` now: one read of every master (async_status), judged
  /// by redlock::leader_of. Completes with no leader when none holds a
  /// quorum with a proclaimed epoch; with the error when the read failed.
  template <typename Token = boost::asio::deferred_t>
  auto async_leader(std::string name, Token&& token = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, leader_signature>(
        [this](auto handler, std::string n) { start_leader(std::move(n), std::move(handler)); }, token,
        std::move(name));
  }

  /// Calls `on_change` (on the client's executor) with who leads `name` now,
  /// then on every change: a new leader (with its epoch), none. Changes are
  /// pushed by the campaigns and resignations on the masters' channels; a
  /// leader that dies without resigning is seen gone when its lease ends.
  /// `fallback`: while no leader is known, the masters are read again this
  /// often anyway, in case a message was lost (a subscriber reconnecting).
  leader_subscription observe(std::string name, std::function<void(const std::optional<leader_info>&)> on_change,
                              milliseconds fallback = milliseconds(5000));

  /// A handle for a hold taken elsewhere (another process, for example
  /// `redlock acquire` in a shell script) from its name and token, so it can
  /// be extended or released. Its validity is unknown (zero) until extended.
  /// The handle acts on the hold the token names and on nothing else: a
  /// reader's token releases that reader (the key goes with the last live
  /// hold), a permit's that permit, a set's every name of the set, a
  /// reentrant or fair owner's whatever hold that owner field has
  /// (docs/algorithm.md, section 16). `how` says what the token alone does
  /// not (adopt_options): a semaphore permit's slot and number of permits,
  /// a set's other names. Throws redlock::error (bad_option, naming the
  /// problem) when the token cannot name a hold of that kind, or the kind
  /// needs what `how` does not give; a token that names no hold on the
  /// masters is found out by the extend or release (errc::not_held).
  lock adopt(const std::string& name, const std::string& token, milliseconds ttl,
             const adopt_options& how = {}) const;

 private:
  friend class client;
  /// Shuts the client down on its strand once the releases in flight were
  /// answered (bounded), then calls `then` there (the sync client waits for
  /// it before stopping its I/O thread).
  void shutdown_then(std::function<void()> then);
  /// Runs `f` on the client's strand, after every operation started before
  /// this call (the sync client emits its cancellations there: an operation
  /// assigns its cancellation slot when it starts on the strand).
  void post_on_strand(std::function<void()> f);

  void start_status(std::string name, boost::asio::any_completion_handler<status_signature> handler);
  void start_acquire(std::string name, acquire_options opts,
                     boost::asio::any_completion_handler<acquire_signature> handler);
  void start_release(lock l, boost::asio::any_completion_handler<done_signature> handler);
  void start_extend(lock l, milliseconds ttl, boost::asio::any_completion_handler<done_signature> handler);
  void start_campaign(std::string name, acquire_options opts,
                      boost::asio::any_completion_handler<acquire_signature> handler);
  void start_resign(lock l, boost::asio::any_completion_handler<done_signature> handler);
  void start_leader(std::string name, boost::asio::any_completion_handler<leader_signature> handler);
  void start_list(list_options opts, boost::asio::any_completion_handler<list_signature> handler);
  void start_force_release(std::string name, std::optional<key_content> only,
                           boost::asio::any_completion_handler<force_release_signature> handler);

  std::shared_ptr<detail::client_impl> impl_;
};

}  // namespace redlock
