// SPDX-License-Identifier: Apache-2.0
// What one master's two replies to the lease probe say (lease_probe.cpp):
// the owner read (GET for a string lock, HEXISTS for a hash lock) and PTTL.
// Pure, so the rule is unit-tested (test_checkers.cpp): a reply that is not
// an answer about the key must read as "unreadable", never as "not ours",
// or the lease-expiry checker reports a violation that did not happen.
#pragma once

#include "history.hpp"

#include <string>

namespace redlock::fault {

/// One reply as the probe saw it (a copy of the few hiredis fields it needs).
struct probe_reply {
  enum class type : std::uint8_t { none, string, nil, integer, error, other } is = type::none;
  std::string text;       ///< string: the value; error: the message
  long long integer = 0;  ///< integer
};

/// The master's view of the lease: ours until `replied` + PTTL (scaled by
/// the master's clock `rate`), not ours (no key, another owner, another
/// kind of key), or unreadable (no reply, or an error such as -LOADING from
/// a master restarting from its AOF: its PTTL right after may already be
/// answered once loading ended).
master_view judge_master_reading(const probe_reply& owner, const probe_reply& pttl, const std::string& token,
                                 bool hash, time_point replied, double rate);

}  // namespace redlock::fault
