// SPDX-License-Identifier: Apache-2.0
// The state behind a redlock::lock handle.
#pragma once

#include <redlock/clock.hpp>
#include <redlock/lock.hpp>
#include <redlock/observer.hpp>

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/container/small_vector.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace redlock::detail {

/// Fills in the masters' names that round results leave empty (results in
/// node order; `names` may be null): for lock::nodes() and for a report.
inline void name_nodes(std::vector<node_vote>& nodes, const std::vector<std::string>* names) {
  for (std::size_t i = 0; names && i < nodes.size() && i < names->size(); ++i)
    if (nodes[i].node.empty()) nodes[i].node = (*names)[i];
}

/// One master's answer to the round that won a lock: a node_vote without
/// its name.
struct node_answer {
  node_state state = node_state::pending;
  boost::system::error_code error;
  std::chrono::microseconds latency{0};
};
/// Every master's, in node order; inline for up to five masters.
using node_answers = boost::container::small_vector<node_answer, 5>;

/// The node_votes of `answers`, unnamed (name_nodes names them).
inline std::vector<node_vote> unnamed_results(const node_answers& answers) {
  std::vector<node_vote> results;
  results.reserve(answers.size());
  for (auto& a : answers) results.push_back({std::string(), a.state, a.error, a.latency});
  return results;
}

class watchdog;

// What a hold keeps of its kind, besides what every hold has
// (lock_state::of_kind).
/// A mutex on one name.
struct mutex_fields {
  /// Won by a waiter's plain retry: its name on the wake lists, which its
  /// release takes down (mutex_release.lua); '' for none.
  std::string listed_as;
};
/// A reentrant or fair owner's hold.
struct owner_fields {
  std::uint64_t hold_id = 0;  ///< the latest request id of the winning acquisition
};
/// A semaphore's permit: the hold's `key` is its slot's key; its releases
/// wake the semaphore's waiters, listed under the semaphore's own key.
struct permit_fields {
  unsigned permit = 0;
  unsigned permits = 0;
  std::string semaphore_key;
};
/// A hold of a read-write lock.
struct rw_fields {
  /// Write side: the writer's waiter id, whose mark ({R}:writer) its
  /// release takes down where a refusal left it up ('' for none).
  std::string writer_mark;
};
/// Names held together (acquire_options::other_names): all of them, sorted,
/// their keys and (fenced) their tokens.
struct set_fields {
  std::vector<std::string> names, keys;
  std::vector<std::uint64_t> fences;
};
using kind_fields = std::variant<mutex_fields, owner_fields, permit_fields, rw_fields, set_fields>;

struct lock_state {
  std::string name;
  std::string key;
  std::string token;
  std::chrono::milliseconds ttl{0};
  // Atomic so a watchdog/extend on the I/O thread can move it while the owner reads.
  std::atomic<steady_time::rep> valid_until{0};
  std::optional<std::uint64_t> fence;
  // Each master's answer, kept inline. lock::nodes() turns them into
  // node_votes, named from `node_names` (the client's, shared), at its
  // first call: a vector of them, and every master's name, at every
  // acquisition cost allocations (redlock-bench alloc), and few callers look.
  node_answers answers;
  std::shared_ptr<const std::vector<std::string>> node_names;
  mutable std::vector<node_vote> nodes;
  mutable std::once_flag nodes_named;
  const std::vector<node_vote>& named_nodes() const {
    std::call_once(nodes_named, [this] {
      nodes = unnamed_results(answers);
      name_nodes(nodes, node_names.get());
    });
    return nodes;
  }
  std::shared_ptr<const clock_source> clock;  // null: steady clock
  const void* owner = nullptr;                 // the client_impl that acquired it
  lock_kind kind = lock_kind::mutex;
  // Reentrant, fair, read-write: levels held by this owner (client side is authoritative).
  std::atomic<int> holds{1};
  std::string registry_key;  // reentrant, fair, an owner's read-write hold: entry in client_impl::held
  kind_fields of_kind;
  template <typename Fields>
  const Fields* fields_if() const noexcept {
    return std::get_if<Fields>(&of_kind);
  }
  bool holds_names_together() const noexcept { return std::holds_alternative<set_fields>(of_kind); }
  /// A reentrant or fair hold's request id; 0 for the other kinds.
  std::uint64_t hold_id() const noexcept {
    auto* owner = fields_if<owner_fields>();
    return owner ? owner->hold_id : 0;
  }
  /// Where a release of this hold wakes a waiter: its own key's wake list,
  /// or its semaphore's.
  const std::string& waiters_key() const noexcept {
    auto* permit = fields_if<permit_fields>();
    return permit ? permit->semaphore_key : key;
  }

  // Lease renewal (strand only, except `lost`, read by the owner).
  std::atomic<int> lost{0};  // lost_reason
  boost::asio::cancellation_signal lost_signal;
  std::function<void(lost_reason)> on_lost;
  // The watchdog and the confirmation timer below are owned by their own
  // pending operations, not by this state: a handle may outlive its client,
  // and an I/O object must not be destroyed after its io_context. The
  // io_context's destruction destroys them with the operations.
  std::weak_ptr<watchdog> dog;
  /// A fair lock handed over for less than its ttl, not renewed: when its
  /// confirmation (which extends it to the ttl) is sent. The release
  /// cancels it (strand only).
  std::weak_ptr<boost::asio::steady_timer> confirmation;
  bool released = false;
  /// False for an adopted lock until its first extend: it has had no window
  /// of ours yet, so none has ended (strand only).
  bool has_window = true;
  /// It may have a holder description next to it ({R}:holder), which extend
  /// lengthens and the last release deletes. Without one they skip that key:
  /// each extra call in a release costs the masters about a GET. Adopted
  /// locks may have one: unknown, so true.
  bool described = true;

  /// Adopted hash-kind locks (async_client::adopt): the hold id is unknown,
  /// so their extend and release act on any hold of their owner field
  /// (2^53 - 1: exact in a Lua number, above every real request id).
  static constexpr std::uint64_t adopted_hold_id = (std::uint64_t{1} << 53) - 1;

  // The hold as the observer hears of it: begun (begin_holding) when the
  // client has an observer, ended once, at the first of the last release,
  // the lease's loss, or the last handle dropped (adopted locks: never
  // begun, never ended). Real time, as every latency the observer hears.
  std::shared_ptr<observer> hold_observer;
  std::chrono::steady_clock::time_point held_since{};
  std::atomic<bool> hold_over{false};
  /// Reports the end of the hold to its observer, the first time only.
  void end_hold(hold_end how, lost_reason why = lost_reason::none);  // lease/report.cpp
  lock_state() = default;
  lock_state(const lock_state&) = delete;
  lock_state& operator=(const lock_state&) = delete;
  ~lock_state() { end_hold(hold_end::dropped); }

  steady_time now() const { return clock ? clock->now() : std::chrono::steady_clock::now(); }
  void set_valid_until(steady_time t) { valid_until.store(t.time_since_epoch().count(), std::memory_order_release); }
  steady_time get_valid_until() const {
    return steady_time(steady_time::duration(valid_until.load(std::memory_order_acquire)));
  }
  /// A round (extend, renewal, re-entry, fair confirmation) vouched for the
  /// lock until `until`. The window only moves later: no round of ours
  /// shortens a key, so the earlier deadline still stands. A window that has
  /// ended stays ended: from its end the client could not vouch for the lock
  /// (another holder may have begun), so a round decided after it cannot
  /// revive it. A released or lost lock keeps none. False when the window was
  /// not moved for one of these reasons (strand only).
  bool extend_window(steady_time until) {
    if (released || lost.load() != 0 || (has_window && get_valid_until() <= now())) return false;
    has_window = true;
    if (until > get_valid_until()) set_valid_until(until);
    return true;
  }
  /// The window has ended, or renewal gave the lock up: nothing may be
  /// built on this hold any more (no re-entry).
  bool lapsed() const { return lost.load() != 0 || get_valid_until() <= now(); }
};

/// How the library makes lock handles and reaches their state (both private
/// in the public lock class).
struct lock_access {
  static lock make(std::shared_ptr<lock_state> state) noexcept { return lock(std::move(state)); }
  static const std::shared_ptr<lock_state>& state(const lock& l) noexcept { return l.state_; }
};

}  // namespace redlock::detail
