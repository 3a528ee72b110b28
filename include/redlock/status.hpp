// SPDX-License-Identifier: Apache-2.0
// What each master holds under a lock's name (async_client::async_status,
// client::status, `redlock status`): read-only views, for operators and
// for leader_of.
#pragma once

#include <redlock/export.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// What a lock's key holds on one master.
enum class key_content {
  free,     ///< no key
  mutex,    ///< a mutex: `node_status::token` is the holder's token
  owners,   ///< a reentrant or fair lock: `node_status::owners` hold it
  foreign,  ///< someone else's data under the lock's name (`foreign_type`); never touched
  semaphore,  ///< a semaphore in use: `node_status::permits` and `permit_holds`
  rwlock,     ///< a read-write lock: `owners` are its holds, 'r:<token>' (readers) or 'w:<token>' (the writer)
};

/// One owner of a reentrant or fair lock on one master.
struct owner_hold {
  std::string owner;        ///< the owner field, "<client id>:<owner>"
  std::uint64_t count = 0;  ///< how many times it entered
};

/// One held permit of a semaphore on one master.
struct permit_hold {
  unsigned permit = 0;                 ///< the slot, 0 to permits - 1
  std::string token;                   ///< its holder's token
  std::chrono::milliseconds pttl{-2};  ///< as PTTL
  std::optional<std::uint64_t> fence;  ///< the slot's fence counter, if any
  std::string description;             ///< the holder's acquire_options::description, if it gave one
};

/// One master's view of a lock (async_client::async_status).
struct node_status {
  std::string node;                 ///< URI without the password
  boost::system::error_code error;  ///< set when the master did not answer (the rest is then empty)
  key_content content = key_content::free;
  std::string token;                   ///< content == mutex: the holder's token
  std::vector<owner_hold> owners;      ///< content == owners: who holds it
  std::string foreign_type;            ///< content == foreign: the key's Redis type ("list", "hash", ...)
  std::chrono::milliseconds pttl{-2};  ///< as PTTL: -2 no key, -1 no expiry
  std::optional<std::uint64_t> fence;  ///< the fence counter, if any
  std::vector<std::string> waiters;    ///< fair locks: the queued owner fields, in order
  std::string description;             ///< the holder's acquire_options::description, if it gave one
  std::optional<unsigned> permits;        ///< content == semaphore: its number of permits
  std::vector<permit_hold> permit_holds;  ///< content == semaphore: the slots held, in slot order
};

/// "free", "mutex", "owners", "foreign", "semaphore", "rwlock": for logs and machine-readable output.
REDLOCK_EXPORT std::string_view key_content_name(key_content c) noexcept;

}  // namespace redlock
