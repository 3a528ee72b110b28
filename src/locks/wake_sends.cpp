// SPDX-License-Identifier: Apache-2.0
// The sends that keep a name's wake list right when no release script
// does it: a waiter leaving the list, an unclaimed wake-up passed on
// (docs/algorithm.md, section 10).
#include "kinds.hpp"

#include "quorum/replies.hpp"
#include "scripts/keys.hpp"
#include "scripts/script.hpp"

namespace redlock::detail {

void leave_wake_list(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& waiter,
                     const std::vector<std::uint32_t>& nodes, bool must_reach) {
  if (waiter.empty() || nodes.empty()) return;
  for (auto& list : {keys::wake_list(key), keys::wake_deadlines(key)}) {
    round_ptr round(new quorum_round(client->masters, {"ZREM", list, waiter}, classify_one_zero, [](quorum_round&) {}));
    if (must_reach) round->must_reach_every_master();
    round->start_on(nodes);
  }
}

void pass_wake_on(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& waiters_key,
                  const std::string& entry, std::string_view token, const std::vector<std::uint32_t>& nodes,
                  bool must_reach) {
  auto classify = [](const redisReply&, node_outcome&) { return verdict::yes; };  // nothing waits on it
  round_ptr round(new quorum_round(client->masters, scripts::mutex_release,
                                   {key, keys::wake_list(waiters_key), keys::wake_deadlines(waiters_key)},
                                   {std::string(token), keys::released_channel(waiters_key), "pass", entry},
                                   classify, [](quorum_round&) {}));
  if (must_reach) round->must_reach_every_master();
  round->start_on(nodes);
}

}  // namespace redlock::detail
