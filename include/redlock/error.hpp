// SPDX-License-Identifier: Apache-2.0
// Error codes of the redlock library: one category for the async API, and an
// exception type carrying the same code for the sync API.
#pragma once

#include <redlock/export.hpp>
#include <redlock/node_vote.hpp>

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace redlock {

enum class errc {
  // ---- bad input (rejected before anything is sent) ----
  empty_node_list = 1,     ///< no master URI given
  bad_uri,                 ///< a node URI could not be parsed
  bad_ttl,                 ///< TTL <= 0
  node_timeout_too_large,  ///< node timeout >= TTL (or <= 0)
  empty_name,              ///< empty lock name
  bad_drift_factor,        ///< drift factor outside [0, 1)
  bad_option,              ///< another option out of range (named in the message)
  // ---- outcomes of a lock operation ----
  not_acquired,      ///< no quorum: the lock is held by someone else (or masters failed)
  validity_expired,  ///< quorum reached, but too late: no validity left
  not_held,          ///< release/extend: the caller's token no longer holds a quorum
  empty_lock,        ///< operation on an empty (moved-from or default) lock handle
  // ---- per-master failures ----
  timeout,           ///< no reply within the node timeout (state on that master unknown)
  not_connected,     ///< the master is unreachable (connect failed, reconnecting)
  connection_lost,   ///< the connection dropped with the request outstanding
  auth_failed,       ///< AUTH rejected (or required and missing)
  wrong_type,        ///< the lock's key holds someone else's data of another type
  out_of_memory,     ///< OOM reply: maxmemory reached with noeviction
  read_only,         ///< READONLY reply: the node is a replica
  server_error,      ///< another error reply from the server
  protocol_error,    ///< the reply stream could not be parsed
  reply_too_large,   ///< a reply over the configured size or element cap
  too_many_pending,  ///< too many requests outstanding on one connection
  shutting_down,     ///< the client is being destroyed
  // ---- storage side of fencing ----
  stale_token,       ///< fenced_store: a newer token was already seen; nothing written
  // ---- added later: appended, so that the values above never change ----
  unfenced_hold,     ///< a fenced re-entry of a hold taken without a fencing token: it has none to give
  permits_mismatch,  ///< a semaphore in use with another number of permits (nothing taken)
  upgrade_refused,   ///< a write asked by an owner holding a read of the same lock: it would wait for itself
  bad_database,      ///< the master refused SELECT of the URI's database (no such index, or not allowed)
  serialization_failure,  ///< postgres_fenced_store: the database aborted the transaction (SQLSTATE 40001, 40P01); nothing committed, run it again
};

REDLOCK_EXPORT const boost::system::error_category& category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), category()};
}

/// What a caller does about an error, whichever code it is: compare with
/// `ec == redlock::condition::contended` instead of listing codes.
enum class condition {
  invalid_argument = 1,  ///< fix the call or the configuration: bad options, empty handle, wrong_type (the
                         ///< name holds someone else's data), unfenced_hold,
                         ///< permits_mismatch, upgrade_refused
  contended,             ///< someone else holds it, or the quorum came too late: wait or give up
                         ///< (not_acquired, validity_expired); or a database transaction lost a
                         ///< race with another one: run it again (serialization_failure)
  node_failure,          ///< masters unreachable, slow or refusing service (timeout, not_connected,
                         ///< connection_lost, auth_failed, bad_database, out_of_memory, read_only,
                         ///< server_error, ...)
  lost,                  ///< the lease is gone: stop acting as the holder (not_held, stale_token)
};

REDLOCK_EXPORT const boost::system::error_category& condition_category() noexcept;

inline boost::system::error_condition make_error_condition(condition c) noexcept {
  return {static_cast<int>(c), condition_category()};
}

/// The enumerator's name ("not_acquired", "timeout", ...): a stable word for
/// metric labels and machine-readable output; "unknown" for other values.
REDLOCK_EXPORT std::string_view errc_name(errc e) noexcept;

/// Prints the code's (or the condition's) message (for logs and test output).
REDLOCK_EXPORT std::ostream& operator<<(std::ostream& os, errc e);
REDLOCK_EXPORT std::ostream& operator<<(std::ostream& os, condition c);

/// Thrown by the sync API; `code()` is the same error_code the async API reports.
class REDLOCK_EXPORT error : public boost::system::system_error {
 public:
  explicit error(boost::system::error_code ec) : system_error(ec) {}
  /// `what` is the whole message (it should name the problem); empty: the code's message.
  error(boost::system::error_code ec, const std::string& what) : system_error(ec), what_(what) {}
  explicit error(errc e) : system_error(make_error_code(e)) {}
  error(errc e, const std::string& what) : system_error(make_error_code(e)), what_(what) {}
  /// A failed acquisition: its message ends with a summary of the last
  /// attempt ("after 3 attempts; last: 1 locked, 2 refused").
  error(boost::system::error_code ec, const std::string& what, std::shared_ptr<const acquire_report> report)
      : system_error(ec), what_(what), report_(std::move(report)) {}
  const char* what() const noexcept override { return what_.empty() ? system_error::what() : what_.c_str(); }
  /// For a failed acquisition: the attempts and what each master said in the
  /// last one. Null for other operations and for options refused up front.
  const acquire_report* report() const noexcept { return report_.get(); }

 private:
  std::string what_;
  std::shared_ptr<const acquire_report> report_;
};

}  // namespace redlock

template <>
struct boost::system::is_error_code_enum<redlock::errc> : std::true_type {};
template <>
struct boost::system::is_error_condition_enum<redlock::condition> : std::true_type {};
