// SPDX-License-Identifier: Apache-2.0
// The synchronous facade: owns an I/O thread and an async_client. Errors are
// thrown as redlock::error carrying the same codes as the async API.
#pragma once

#include <redlock/export.hpp>

#include <redlock/async_client.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

namespace redlock {

class guard;

class REDLOCK_EXPORT client {
 public:
  explicit client(client_options options);
  /// Closes the connections once the releases still on their way to a
  /// master got there (at most connect_timeout + node_timeout). Releases
  /// nothing itself: locks still held expire after their TTL.
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// Blocks until acquired. Throws redlock::error: errc::not_acquired when
  /// the attempts or the wait ran out, or the error that prevented it.
  lock acquire(const std::string& name, const acquire_options& opts = {});
  /// Like acquire, but an ordinary refusal (not_acquired, validity_expired)
  /// returns an empty optional instead of throwing.
  std::optional<lock> try_acquire(const std::string& name, const acquire_options& opts = {});
  /// Throws errc::not_held if the lock had already been lost.
  void release(const lock& l);
  void extend(const lock& l, milliseconds ttl);
  /// Each master's view of `name` (async_client::async_status). Read-only.
  std::vector<node_lock_view> status(const std::string& name);
  /// A handle for a hold taken elsewhere, from its name and token
  /// (async_client::adopt): acts on that hold alone.
  lock adopt(const std::string& name, const std::string& token, milliseconds ttl,
             const adopt_options& how = {}) const;

  /// The same calls reporting failure through `ec` instead of throwing (as
  /// in Boost.Beast): every error the throwing form would throw, including
  /// bad options; only a call from the client's own I/O thread still throws
  /// std::logic_error. acquire() sets errc::not_acquired when the attempts or
  /// the wait ran out, and returns an empty lock on any failure.
  lock acquire(const std::string& name, const acquire_options& opts, boost::system::error_code& ec);
  void release(const lock& l, boost::system::error_code& ec);
  void extend(const lock& l, milliseconds ttl, boost::system::error_code& ec);
  std::vector<node_lock_view> status(const std::string& name, boost::system::error_code& ec);

  /// Leader election (async_client::async_campaign): blocks until this
  /// caller leads `name` or `opts.wait` ran out (errc::not_acquired).
  /// lock::fence() is the epoch.
  lock campaign(const std::string& name, const acquire_options& opts = {});
  /// Steps down and tells the observers (async_client::async_resign).
  void resign(const lock& leadership);
  /// Who leads `name` now (one read of every master; redlock::leader_of).
  std::optional<leader_info> leader(const std::string& name);
  /// The same three reporting failure through `ec` (an empty lock, no leader).
  lock campaign(const std::string& name, const acquire_options& opts, boost::system::error_code& ec);
  void resign(const lock& leadership, boost::system::error_code& ec);
  std::optional<leader_info> leader(const std::string& name, boost::system::error_code& ec);

  /// Cancellable forms: a stop request on `stop` (from any thread) cancels
  /// the acquisition as a cancellation slot does in the async API. It takes
  /// effect at once while waiting between attempts; an attempt in flight is
  /// decided first (within the node timeout), so that whatever it took is
  /// released. The call returns asio::error::operation_aborted (thrown as
  /// redlock::error by the throwing forms, try_acquire's included) once the
  /// releases of what it took and the removal of its place in line (wake
  /// lists, fair queue, writer mark) are sent to every master, each behind
  /// the attempt on its connection. A token already stopped: returns so at
  /// once, sending nothing.
  lock acquire(const std::string& name, const acquire_options& opts, std::stop_token stop);
  std::optional<lock> try_acquire(const std::string& name, const acquire_options& opts, std::stop_token stop);
  lock acquire(const std::string& name, const acquire_options& opts, std::stop_token stop,
               boost::system::error_code& ec);
  lock campaign(const std::string& name, const acquire_options& opts, std::stop_token stop);
  lock campaign(const std::string& name, const acquire_options& opts, std::stop_token stop,
                boost::system::error_code& ec);

  /// acquire() wrapped in a guard that releases when it goes out of scope.
  guard lock_guard(const std::string& name, const acquire_options& opts = {});

  /// The async API on the facade's own I/O thread.
  async_client& async() noexcept;

 private:
  // Each waits for the async operation on the I/O thread (one bridge:
  // client.cpp, wait_for); none throws but for a call from that thread.
  // `stop`: cancels the operation; `message`: why a check failed; `report`:
  // the caller's acquire_options::report, or one made for the exception.
  std::pair<boost::system::error_code, lock> wait_acquire(const std::string& name, const acquire_options& given,
                                                          std::stop_token stop, std::string& message,
                                                          std::shared_ptr<acquire_report>& report);
  boost::system::error_code wait_release(const lock& l);
  boost::system::error_code wait_extend(const lock& l, milliseconds ttl, std::string& message);
  std::pair<boost::system::error_code, std::vector<node_lock_view>> wait_status(const std::string& name);
  lock wait_campaign(const std::string& name, const acquire_options& given, std::stop_token stop,
                     boost::system::error_code& ec, std::string& message, std::shared_ptr<acquire_report>& report);

  /// Runs a function on the async client's strand (wait_for's cancellations).
  std::function<void(std::function<void()>)> on_strand();

  struct io_thread;
  std::unique_ptr<io_thread> io_;
  std::unique_ptr<async_client> async_;
};

/// Move-only RAII holder: releases in its destructor, never throws from it.
class REDLOCK_EXPORT guard {
 public:
  guard() = default;
  guard(client& c, lock l) noexcept : client_(&c), lock_(std::move(l)) {}
  guard(guard&& other) noexcept;
  guard& operator=(guard&& other) noexcept;
  guard(const guard&) = delete;
  guard& operator=(const guard&) = delete;
  ~guard();

  const lock& get() const noexcept { return lock_; }
  const lock* operator->() const noexcept { return &lock_; }
  explicit operator bool() const noexcept { return static_cast<bool>(lock_); }
  /// Releases now; throws like client::release. Afterwards the guard is empty.
  void release();

 private:
  void release_quietly() noexcept;
  client* client_ = nullptr;
  lock lock_;
};

}  // namespace redlock
