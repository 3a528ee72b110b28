// SPDX-License-Identifier: Apache-2.0
#include <redlock/error.hpp>

#include <ostream>

namespace redlock {

namespace {

class category_impl final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "redlock"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::empty_node_list: return "no Redis master given";
      case errc::bad_uri: return "a node URI could not be parsed";
      case errc::bad_ttl: return "TTL must be greater than zero";
      case errc::node_timeout_too_large: return "node timeout must be positive and much smaller than the TTL";
      case errc::empty_name: return "lock name is empty";
      case errc::bad_drift_factor: return "drift factor must be in [0, 1)";
      case errc::bad_option: return "an option is out of range";
      case errc::not_acquired: return "lock not acquired: no quorum of masters granted it";
      case errc::validity_expired: return "quorum reached too late: no validity left";
      case errc::not_held: return "lock not held: expired or taken over on a quorum of masters";
      case errc::empty_lock: return "operation on an empty lock handle";
      case errc::timeout: return "master did not answer within the node timeout";
      case errc::not_connected: return "master unreachable";
      case errc::connection_lost: return "connection to the master lost";
      case errc::auth_failed: return "authentication with the master failed";
      case errc::wrong_type:
        return "the lock key, or a companion key the lock needs ({R}:queue, {R}:fence, {R}:writer), holds data of "
               "another type (not a lock, or a fence counter that is not a number): left untouched";
      case errc::out_of_memory: return "master out of memory (OOM, maxmemory reached)";
      case errc::read_only: return "master is read-only (a replica)";
      case errc::server_error: return "master returned an error";
      case errc::protocol_error: return "unparsable reply from the master";
      case errc::reply_too_large: return "reply from the master exceeds the configured cap";
      case errc::too_many_pending: return "too many requests outstanding on one connection";
      case errc::shutting_down: return "client is shutting down";
      case errc::stale_token: return "stale fencing token: a newer holder already wrote; nothing was written";
      case errc::unfenced_hold:
        return "re-entry asked for a fencing token, but the hold it re-enters was acquired without one";
      case errc::permits_mismatch:
        return "the semaphore is in use with another number of permits: every client must give the same; "
               "nothing was taken";
      case errc::upgrade_refused:
        return "write lock asked by an owner that holds a read lock of it: refused (release the read first; "
               "two owners upgrading at once would wait for each other forever)";
      case errc::bad_database:
        return "the master refused to select the database the URI names (an index beyond its 'databases', or "
               "SELECT not allowed to the user); nothing was sent";
      case errc::serialization_failure:
        return "the database aborted the transaction to keep transactions serializable (a serialization "
               "failure or a deadlock); nothing of it was committed: run it again";
    }
    return "unknown redlock error";
  }

  boost::system::error_condition default_error_condition(int ev) const noexcept override {
    switch (static_cast<errc>(ev)) {
      case errc::empty_node_list:
      case errc::bad_uri:
      case errc::bad_ttl:
      case errc::node_timeout_too_large:
      case errc::empty_name:
      case errc::bad_drift_factor:
      case errc::bad_option:
      case errc::empty_lock:
      case errc::wrong_type:
      case errc::unfenced_hold:
      case errc::permits_mismatch:
      case errc::upgrade_refused:
        return condition::invalid_argument;
      case errc::not_acquired:
      case errc::validity_expired:
      case errc::serialization_failure:
        return condition::contended;
      case errc::timeout:
      case errc::not_connected:
      case errc::connection_lost:
      case errc::auth_failed:
      case errc::bad_database:
      case errc::out_of_memory:
      case errc::read_only:
      case errc::server_error:
      case errc::protocol_error:
      case errc::reply_too_large:
      case errc::too_many_pending:
        return condition::node_failure;
      case errc::not_held:
      case errc::stale_token:
        return condition::lost;
      case errc::shutting_down:
        break;
    }
    return {ev, *this};
  }
};

class condition_category_impl final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "redlock.condition"; }
  std::string message(int ev) const override {
    switch (static_cast<condition>(ev)) {
      case condition::invalid_argument: return "invalid argument or configuration";
      case condition::contended: return "the lock is held by someone else (or the quorum came too late)";
      case condition::node_failure: return "masters unreachable, slow or failing";
      case condition::lost: return "the lease is lost";
    }
    return "unknown redlock condition";
  }
};

}  // namespace

const boost::system::error_category& condition_category() noexcept {
  static const condition_category_impl instance;
  return instance;
}

const boost::system::error_category& category() noexcept {
  static const category_impl instance;
  return instance;
}

std::string_view errc_name(errc e) noexcept {
  switch (e) {
    case errc::empty_node_list: return "empty_node_list";
    case errc::bad_uri: return "bad_uri";
    case errc::bad_ttl: return "bad_ttl";
    case errc::node_timeout_too_large: return "node_timeout_too_large";
    case errc::empty_name: return "empty_name";
    case errc::bad_drift_factor: return "bad_drift_factor";
    case errc::bad_option: return "bad_option";
    case errc::not_acquired: return "not_acquired";
    case errc::validity_expired: return "validity_expired";
    case errc::not_held: return "not_held";
    case errc::empty_lock: return "empty_lock";
    case errc::timeout: return "timeout";
    case errc::not_connected: return "not_connected";
    case errc::connection_lost: return "connection_lost";
    case errc::auth_failed: return "auth_failed";
    case errc::wrong_type: return "wrong_type";
    case errc::out_of_memory: return "out_of_memory";
    case errc::read_only: return "read_only";
    case errc::server_error: return "server_error";
    case errc::protocol_error: return "protocol_error";
    case errc::reply_too_large: return "reply_too_large";
    case errc::too_many_pending: return "too_many_pending";
    case errc::shutting_down: return "shutting_down";
    case errc::stale_token: return "stale_token";
    case errc::unfenced_hold: return "unfenced_hold";
    case errc::permits_mismatch: return "permits_mismatch";
    case errc::upgrade_refused: return "upgrade_refused";
    case errc::bad_database: return "bad_database";
    case errc::serialization_failure: return "serialization_failure";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, errc e) { return os << category().message(static_cast<int>(e)); }
std::ostream& operator<<(std::ostream& os, condition c) {
  return os << condition_category().message(static_cast<int>(c));
}

}  // namespace redlock
