// SPDX-License-Identifier: Apache-2.0
// The Redis key layout (docs/algorithm.md, section 1), in one place: every
// script, the library, the tests and the fault suite name keys through these.
// A lock named R (with the client's key prefix already applied) lives at key
// R, so a plain SET NX PX lock interoperates with other RedLock clients; its
// companions carry R as a hash tag so they share its slot.
#pragma once

#include "connection/resp.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail::keys {

inline std::string tagged(std::string_view key, std::string_view suffix) {
  std::string out;
  out.reserve(key.size() + suffix.size() + 2);
  out.append("{").append(key).append("}").append(suffix);
  return out;
}

/// The suffixes of a lock's companions, each spelled once: the builders
/// below, the words of the hot paths (word_of) and the check that no lock
/// is named as another's companion (companion_of) all read them here.
namespace suffix {
inline constexpr std::string_view fence = ":fence";
inline constexpr std::string_view released = ":released";
inline constexpr std::string_view wake_list = ":wake";
inline constexpr std::string_view wake_deadlines = ":wake:until";
inline constexpr std::string_view holder = ":holder";
inline constexpr std::string_view queue = ":queue";
inline constexpr std::string_view queue_deadlines = ":timeout";
inline constexpr std::string_view queue_terms = ":terms";
inline constexpr std::string_view permit_slot = ":permit:";  // followed by the slot's number
inline constexpr std::string_view permits = ":permits";
inline constexpr std::string_view waiting_writer = ":writer";
}  // namespace suffix

/// The fencing counter: permanent, never deleted (docs/fencing.md).
inline std::string fence(std::string_view key) { return tagged(key, suffix::fence); }
/// Fair lock: waiters ordered by their enqueue score (sorted set).
inline std::string queue(std::string_view key) { return tagged(key, suffix::queue); }
/// Fair lock: each waiter's drop-out deadline, server time (sorted set).
inline std::string queue_deadlines(std::string_view key) { return tagged(key, suffix::queue_deadlines); }
/// Fair lock: each waiter's terms for being handed the lock by a release
/// ('<poll id> <ttl>', hash).
inline std::string queue_terms(std::string_view key) { return tagged(key, suffix::queue_terms); }
/// Release messages for mutex and reentrant waiters (pub/sub channel; the
/// message is the release's id).
inline std::string released_channel(std::string_view key) { return tagged(key, suffix::released); }
/// Mutex: the waiters a release may wake, by when they began (sorted set),
/// and when each entry lapses unless its waiter tries again (server time,
/// sorted set). Advisory: who gets the lock is decided by SET NX alone.
inline std::string wake_list(std::string_view key) { return tagged(key, suffix::wake_list); }
inline std::string wake_deadlines(std::string_view key) { return tagged(key, suffix::wake_deadlines); }
/// Where a release wakes one of client `client_id`'s waiters by name: the
/// head of a fair queue (or hands it the lock), or the first on a mutex's
/// wake list.
inline std::string wake_channel(std::string_view key, std::string_view client_id) {
  return released_channel(key).append(":").append(client_id);
}
/// Who holds the lock, in words (`acquire_options::description`): '<owner>
/// <description>', a string living as long as the hold it describes.
/// Advisory, for operators: shown by status only while <owner> holds the
/// lock, never read by any decision.
inline std::string holder(std::string_view key) { return tagged(key, suffix::holder); }
/// Semaphore R: permit slot `i`, a mutex of its own (its fence counter and
/// holder description are that key's companions), and the number of
/// permits its clients use, which lives as long as its longest hold.
inline std::string permit(std::string_view key, unsigned i) {
  auto out = tagged(key, suffix::permit_slot);
  out.append(std::to_string(i));  // no temporary suffix string: semaphores build a key per slot
  return out;
}
inline std::string permits(std::string_view key) { return tagged(key, suffix::permits); }
/// Read-write lock: the waiting writer's mark ('<waiter id>', string):
/// while it is up, new readers are refused. It lapses unless its writer
/// retries, so a writer that went away blocks readers only that long.
inline std::string waiting_writer(std::string_view key) { return tagged(key, suffix::waiting_writer); }
/// Leader election: where campaigns and resignations tell the observers
/// that the leader changed (pub/sub channel; the message is '<epoch> <token>'
/// or 'resigned <epoch>').
inline std::string leader_channel(std::string_view key) { return tagged(key, ":leader"); }
/// Storage side of fencing (fenced_store, on the storage server, never on
/// the lock masters): the highest token seen for a resource.
inline std::string fence_seen(std::string_view resource) { return tagged(resource, ":fence:seen"); }

/// What `key` would be if it were a companion of another lock: a key made
/// of `{R}` and one of the suffixes above (a permit slot's number included)
/// is R's, whoever else names it. A lock there would share its key with R's
/// companion, and R's scripts write and delete it: a holder description
/// written over a lock's token, then deleted with R's release, frees that
/// lock under its holder. So such a key names no lock (options_check.cpp).
struct companion_key {
  std::string_view lock_key;  // R
  std::string_view what;      // the suffix, e.g. ":holder"
};
inline std::optional<companion_key> companion_of(std::string_view key) {
  static constexpr std::string_view suffixes[] = {suffix::fence, suffix::wake_list, suffix::wake_deadlines,
                                                  suffix::holder, suffix::queue, suffix::queue_deadlines,
                                                  suffix::queue_terms, suffix::permits, suffix::waiting_writer};
  if (!key.starts_with('{')) return std::nullopt;
  auto lock_key_before = [&](std::size_t close) -> std::optional<companion_key> {
    if (close == 0 || close == std::string_view::npos || key[close] != '}') return std::nullopt;
    return companion_key{key.substr(1, close - 1), key.substr(close + 1)};
  };
  for (auto s : suffixes)
    if (key.size() > s.size() + 1 && key.ends_with(s)) {
      if (auto c = lock_key_before(key.size() - s.size() - 1)) return c;
    }
  // A semaphore's permit slot: '{R}:permit:<number>'.
  constexpr std::string_view slot = suffix::permit_slot;
  auto digits = key.find_last_not_of("0123456789");
  if (digits == std::string_view::npos || digits + 1 == key.size()) return std::nullopt;
  auto at = digits + 1 - slot.size();
  if (digits + 1 < slot.size() + 2 || key.substr(at, slot.size()) != slot) return std::nullopt;
  return lock_key_before(at - 1);
}

/// The same names as words of a command (connection/resp.hpp): written
/// straight into its encoding, never built. They view `key`, which must
/// outlive the command's encoding (a quorum_round's constructor).
namespace word_of {
inline word tagged(std::string_view key, std::string_view suffix) { return {"{", key, "}", suffix}; }
inline word fence(std::string_view key) { return tagged(key, suffix::fence); }
inline word released_channel(std::string_view key) { return tagged(key, suffix::released); }
inline word wake_list(std::string_view key) { return tagged(key, suffix::wake_list); }
inline word wake_deadlines(std::string_view key) { return tagged(key, suffix::wake_deadlines); }
inline word holder(std::string_view key) { return tagged(key, suffix::holder); }
}  // namespace word_of

}  // namespace redlock::detail::keys
