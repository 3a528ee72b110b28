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
  mutex,    ///< a mutex: `node_lock_view::token` is the holder's token
  reentrant,  ///< a reentrant or fair lock (a fair lock is reentrant too): `node_lock_view::owners` hold it
  foreign,  ///< someone else's data under the lock's name (`foreign_type`); never touched
  semaphore,  ///< a semaphore in use: `node_lock_view::permits` and `permit_holds`
  rwlock,     ///< a read-write lock: `owners` are its holds, 'r:<token>' (readers) or 'w:<token>' (the writer)
  /// The old name of `reentrant` (it read as "any lock with owners", but a
  /// read-write lock has owners too); goes in 1.0.
  owners [[deprecated("use key_content::reentrant")]] = reentrant,
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

/// What one master holds under a lock's name (async_client::async_status):
/// its view of the lock, not the master's health.
struct node_lock_view {
  std::string node;                 ///< URI without the password
  boost::system::error_code error;  ///< set when the master did not answer (the rest is then empty)
  key_content content = key_content::free;
  std::string token;                   ///< content == mutex: the holder's token
  std::vector<owner_hold> owners;      ///< content == reentrant or rwlock: who holds it
  std::string foreign_type;            ///< content == foreign: the key's Redis type ("list", "hash", ...)
  std::chrono::milliseconds pttl{-2};  ///< as PTTL: -2 no key, -1 no expiry
  std::optional<std::uint64_t> fence;  ///< the fence counter, if any
  std::vector<std::string> waiters;    ///< fair locks: the queued owner fields, in order
  std::string description;             ///< the holder's acquire_options::description, if it gave one
  std::optional<unsigned> permits;        ///< content == semaphore: its number of permits
  std::vector<permit_hold> permit_holds;  ///< content == semaphore: the slots held, in slot order
};

/// What async_client::async_list looks for.
struct list_options {
  /// At most this many names: the listing stops there and says it was
  /// truncated (a keyspace of millions of keys is walked only that far).
  std::size_t max_names = 10000;
  /// Keys asked for per SCAN call (its COUNT): how much work each call
  /// costs a master before it serves other clients again.
  unsigned scan_count = 1000;
};

/// One master's part of a lock_listing (async_client::async_list): whether
/// its keys could be walked.
struct node_listing {
  std::string node;                 ///< URI without the password
  boost::system::error_code error;  ///< set when it did not answer (what it had is not listed)
};

/// The names of the locks on the masters, found by SCAN (never KEYS): the
/// lock keys under the client's key_prefix, shown without it, and the
/// semaphores (which have no key of their own); their companions (fence
/// counters, wake lists, queues) are not names. Read each with async_status.
struct lock_listing {
  std::vector<std::string> names;  ///< sorted, each once
  bool truncated = false;          ///< more names than list_options::max_names: some are not listed
  std::vector<node_listing> nodes;    ///< per master, in node order
};

/// One hold a forced release removed on one master.
struct removed_hold {
  /// "mutex" (a mutex, one name of a set, a leader), "owner" (reentrant,
  /// fair), "reader", "writer", or "permit".
  std::string what;
  std::string token;                    ///< the token, or the owner field
  std::optional<std::uint64_t> number;  ///< an owner's entry count; a permit's slot
  std::string description;              ///< the holder's acquire_options::description, if it gave one
};

/// What a forced release (async_client::async_force_release) did on one master.
struct node_forced_release {
  std::string node;                 ///< URI without the password
  boost::system::error_code error;  ///< did not answer; errc::wrong_type: the key is someone else's data (untouched)
  /// What the name held there before: "free", "mutex", "owners", "rwlock",
  /// "semaphore" (joined by '+' when a semaphore and a lock key share it).
  std::string found;
  std::vector<removed_hold> removed;  ///< empty: nothing held, or only another kind than asked (left alone)
};

/// "free", "mutex", "owners", "foreign", "semaphore", "rwlock": for logs and machine-readable output.
/// key_content::reentrant stays "owners" there, so scripts that read
/// `redlock status --json` keep working.
REDLOCK_EXPORT std::string_view key_content_name(key_content c) noexcept;

/// The old names, which read as a master's health and as a SCAN cursor;
/// they go in 1.0.
using node_status [[deprecated("use node_lock_view")]] = node_lock_view;
using node_scan [[deprecated("use node_listing")]] = node_listing;

}  // namespace redlock
