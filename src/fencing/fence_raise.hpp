// SPDX-License-Identifier: Apache-2.0
// The raise round of a fenced acquisition (docs/fencing.md): T = the largest
// fence counter the acquiring quorum returned; raise the counter to T on a
// quorum of masters where we still hold the lock. Any later holder's quorum
// meets ours on one of those masters, and its INCR there runs after our hold
// ended, so its token exceeds T.
#pragma once

#include "quorum/quorum_round.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace redlock::detail {

/// The round (not started): "yes" where the counter is now >= `token_value`
/// under our hold (`lua/fence_raise.lua`), "no" where we no longer hold.
round_ptr fence_raise_round(const std::shared_ptr<node_set>& masters, const std::string& key,
                            const std::string& token, std::uint64_t token_value, quorum_round::decided_fn done);
/// The same for a lock over several keys: each key's counter to its own
/// value, all in one call per master ("yes" only where we hold every key).
round_ptr fence_raise_round(const std::shared_ptr<node_set>& masters, const std::vector<std::string>& lock_keys,
                            const std::string& token, const std::vector<std::uint64_t>& token_values,
                            quorum_round::decided_fn done);

}  // namespace redlock::detail
