// SPDX-License-Identifier: Apache-2.0
// What each master said in an acquisition round: kept with a held lock
// (lock::nodes()) and, for any acquisition, in its report (acquire_report),
// so a failure can say why, master by master.
#pragma once

#include <redlock/export.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

/// What one master said during the acquisition round.
enum class node_state : std::uint8_t {
  locked,   ///< the master granted the lock
  refused,  ///< held by someone else there
  failed,   ///< an error reply or connection failure (see `error`)
  unknown,  ///< no reply before the deadline: may have applied; release is sent anyway
  pending,  ///< still no reply when the quorum was decided (the round completes early)
};

/// How one master voted in an acquisition round: its part of the quorum
/// (not the acquisition's result).
struct node_vote {
  std::string node;                 ///< URI without the password
  node_state state = node_state::pending;
  boost::system::error_code error;  ///< set for failed and unknown
  std::chrono::microseconds latency{0};
};

/// How an acquisition ended, master by master: filled when it ends, won or
/// not, when acquire_options::report is set (the sync client's redlock::error
/// carries one for every failed acquisition).
struct acquire_report {
  unsigned attempts = 0;
  /// The last attempt's round, one entry per master in client_options::nodes
  /// order. Empty when no round ran (an option refused before any attempt,
  /// or a re-entry decided by the client alone).
  std::vector<node_vote> last_attempt;
};

/// The old name of node_vote (it read as the acquisition's result); goes
/// in 1.0.
using node_result [[deprecated("use node_vote")]] = node_vote;

/// "locked", "refused", "failed", "unknown", "pending".
REDLOCK_EXPORT std::string_view to_string(node_state s) noexcept;

/// One line per master for an operator: "redis://a:6379 refused (312 us)",
/// "redis://b:6379 failed: Connection refused".
REDLOCK_EXPORT std::string describe(const node_vote& r);

/// A short summary of a round: "1 locked, 2 refused".
REDLOCK_EXPORT std::string summarize(const std::vector<node_vote>& round);

}  // namespace redlock
