// SPDX-License-Identifier: Apache-2.0
// Releases over several keys with one token (lua/release_all.lua): names
// held together, and the slots a semaphore attempt took.
#include "kinds.hpp"

#include "quorum/replies.hpp"
#include "scripts/keys.hpp"
#include "scripts/script.hpp"

namespace redlock::detail {

namespace {
// release_all.lua over `lock_keys`; `wake`: a holder's release, which wakes
// each freed name's first mutex waiter.
round_ptr release_keys_round(const std::shared_ptr<client_impl>& client, const std::vector<std::string>& lock_keys,
                             const std::string& token, bool described, bool wake, quorum_round::decided_fn done) {
  std::vector<std::string> script_keys(lock_keys);
  std::vector<std::string> args{token, std::to_string(lock_keys.size()), wake ? "wake" : ""};
  if (wake) {
    for (auto& k : lock_keys) {
      script_keys.push_back(keys::wake_list(k));
      script_keys.push_back(keys::wake_deadlines(k));
      args.push_back(keys::released_channel(k));
    }
  }
  if (described)
    for (auto& k : lock_keys) script_keys.push_back(keys::holder(k));
  return as_release(round_ptr(new quorum_round(client->masters, scripts::release_all, std::move(script_keys),
                                               std::move(args), classify_one_zero, std::move(done))));
}
}  // namespace

round_ptr release_all_round(const std::shared_ptr<client_impl>& client, const std::vector<std::string>& lock_keys,
                            const std::string& token, bool described, quorum_round::decided_fn done) {
  return release_keys_round(client, lock_keys, token, described, false, std::move(done));
}

round_ptr release_set_round(const std::shared_ptr<client_impl>& client, const std::vector<std::string>& lock_keys,
                            const std::string& token, bool described, quorum_round::decided_fn done) {
  return release_keys_round(client, lock_keys, token, described, true, std::move(done));
}

void release_permits(const std::shared_ptr<client_impl>& client, const std::string& key, unsigned permits,
                     std::optional<unsigned> keep, const std::string& token, bool described,
                     const std::vector<std::uint32_t>& nodes) {
  if (nodes.empty()) return;
  std::vector<std::string> slots;
  for (unsigned i = 0; i < permits; ++i)
    if (keep != i) slots.push_back(keys::permit(key, i));
  release_all_round(client, slots, token, described, [](quorum_round&) {})->start_on(nodes);
}

}  // namespace redlock::detail
