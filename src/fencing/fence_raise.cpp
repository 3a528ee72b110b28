// SPDX-License-Identifier: Apache-2.0
#include "fence_raise.hpp"

#include "quorum/replies.hpp"
#include "scripts/keys.hpp"
#include "scripts/script.hpp"

namespace redlock::detail {

round_ptr fence_raise_round(const std::shared_ptr<node_set>& masters, const std::string& key,
                            const std::string& token, std::uint64_t token_value, quorum_round::decided_fn done) {
  return round_ptr(new quorum_round(masters, scripts::fence_raise, {key, keys::fence(key)},
                                    {token, std::to_string(token_value)}, classify_one_zero, std::move(done)));
}

}  // namespace redlock::detail
