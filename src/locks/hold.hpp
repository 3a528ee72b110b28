// SPDX-License-Identifier: Apache-2.0
// What holding an acquired lock entails, as explicit steps: the state behind
// the caller's handle (built, nothing else), then holding it: the client's
// registry of reentrant/fair holds (so the owner re-enters instead of
// acquiring again), leaving the fair queue, and the renewal watchdog.
#pragma once

#include "locks/client_impl.hpp"
#include "lease/lock_state.hpp"

#include <redlock/lock.hpp>
#include <redlock/options.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

/// Where the client registers a reentrant/fair hold: key + '\n' + owner field.
inline std::string registry_key(const std::string& key, const std::string& field) { return key + "\n" + field; }

/// Where the client registers a read-write hold of `owner` (re-entered by
/// the client alone, whichever side it holds).
inline std::string rw_owner_field(const std::string& client_id, const std::string& owner) {
  return "rw:" + client_id + ":" + owner;
}

/// This owner's live hold of `key` in this client, if any (a reentrant or
/// fair owner's next acquisition re-enters it).
std::shared_ptr<lock_state> find_hold(client_impl& client, const std::string& key, const std::string& field);

/// What an acquisition established.
struct acquired_hold {
  std::string name, key, token;
  kind_fields of_kind;                  ///< what the hold keeps of its kind (lock_state::of_kind)
  steady_time valid_until{};            ///< the window's end (client clock)
  std::optional<std::uint64_t> fence;   ///< the fencing token that was raised, if fenced
  node_answers answers;                 ///< each master's answer, in node order
};

/// How a fair lock was won, which decides what its leave-the-queue round
/// (fair_dequeue.lua) must still do (docs/algorithm.md, section 11).
enum class fair_win {
  by_poll,       ///< our polls were granted: we are still in line on every master
  handed,        ///< a quorum handed it over (and took us out of line there) for our whole ttl
  handed_short,  ///< handed over, but held only until our queue deadline: the ttl comes with the confirmation
};

/// The state behind the caller's lock handle. Builds it, nothing more.
std::shared_ptr<lock_state> new_lock_state(const client_impl& client, const acquire_options& options,
                                           acquired_hold hold);

/// Holding begins: register a reentrant/fair hold, leave the fair queues
/// where that is still needed (after the caller has its lock: that round
/// costs it no latency; `in_line_on`: the masters a winner by polls may
/// stand in line on), start the watchdog of a renewed lock.
void begin_holding(const std::shared_ptr<client_impl>& client, const std::shared_ptr<lock_state>& state,
                   const acquire_options& options, fair_win how, std::vector<std::uint32_t> in_line_on);

}  // namespace redlock::detail
