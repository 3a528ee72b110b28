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

round_ptr fence_raise_round(const std::shared_ptr<node_set>& masters, const std::vector<std::string>& lock_keys,
                            const std::string& token, const std::vector<std::uint64_t>& token_values,
                            quorum_round::decided_fn done) {
  std::vector<std::string> script_keys(lock_keys);
  std::vector<std::string> args{token};
  for (std::size_t i = 0; i < lock_keys.size(); ++i) {
    script_keys.push_back(keys::fence(lock_keys[i]));
    args.push_back(std::to_string(token_values[i]));
  }
  return round_ptr(new quorum_round(masters, scripts::fence_raise, std::move(script_keys), std::move(args),
                                    classify_one_zero, std::move(done)));
}

}  // namespace redlock::detail
