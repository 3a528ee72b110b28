// SPDX-License-Identifier: Apache-2.0
// redlock::diagnose: audits a deployment of masters the way `redlock doctor`
// does (docs/user-guide.md, "redlock doctor"): independence (no replicas,
// no Sentinel or Cluster, no server listed twice, at least 3), persistence,
// eviction, clocks, round trips against the timeouts, ACL rights and the
// scripts. It changes nothing on the masters beyond loading the library's
// scripts, as every client does.
#pragma once

#include <redlock/export.hpp>
#include <redlock/options.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace redlock {

/// What the audit judges the masters against.
struct doctor_options {
  /// The TTL you plan to use: the clock skew between masters is compared
  /// with its drift allowance, round trips with its length.
  milliseconds ttl{10000};
  /// PINGs per master to measure the round trip (its p50 and p99).
  unsigned round_trips = 50;
  /// Whose ACL rights to check (with ACL DRYRUN); empty: the user each URI
  /// logs in as ("default" without one).
  std::string acl_user{};
  /// The lock name whose keys and channels the ACL check uses, with the
  /// client's key_prefix (rights often depend on a key pattern).
  std::string name{"redlock-doctor"};
};

enum class severity : int {
  warning,  ///< unsafe in some failures, or not checked: read the message
  error,    ///< breaks the algorithm's assumptions (or the library cannot work)
};

/// One problem found.
struct finding {
  severity level = severity::error;
  /// One word naming the check: node_count, unreachable, mode, replica,
  /// has_replicas, same_server, persistence, eviction, clock_skew,
  /// round_trip, acl, scripts, unchecked.
  std::string check;
  std::string node;     ///< the master (URI without the password); empty: the deployment
  std::string message;  ///< one line: what is wrong and what to do
};

/// What was read from one master.
struct node_facts {
  std::string node;   ///< URI without the password
  bool reachable = false;
  std::string error;  ///< why not, when unreachable
  std::string version, mode, role, run_id;
  std::size_t replicas = 0;
  std::optional<bool> aof;             ///< appendonly
  std::string appendfsync;             ///< empty when CONFIG GET was refused
  std::string maxmemory_policy;
  std::chrono::microseconds rtt_p50{0}, rtt_p99{0};
  /// Server clock (TIME) minus ours, at the middle of the fastest round trip.
  std::optional<std::chrono::microseconds> clock_offset;
  std::chrono::microseconds clock_uncertainty{0};  ///< +/- half that round trip
};

struct doctor_report {
  std::vector<node_facts> nodes;  ///< in the order of client_options::nodes
  std::vector<finding> findings;  ///< empty: nothing wrong found
  std::size_t count(severity level) const;
};

/// Connects to every master as a client would (TLS, AUTH, SELECT from the
/// URIs), one after another, and reports what it finds. Blocks; bad options
/// throw redlock::error naming the problem. Unreachable masters are findings.
REDLOCK_EXPORT doctor_report diagnose(const client_options& client, const doctor_options& options = {});

}  // namespace redlock
