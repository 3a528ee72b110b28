// SPDX-License-Identifier: Apache-2.0
// The commands, keys and channels the library uses on a master, as command
// lines for ACL DRYRUN: what `redlock doctor` checks a user's rights with.
// unit_doctor_probes checks that every command a script calls is here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// The keys and channels of one lock (client_impl's key layout).
struct lock_names {
  std::string key, fence, queue, deadlines, terms, channel, wake_channel, wake_list, wake_deadlines, holder;
  // Semaphores (a sample slot and the permits record), read-write locks
  // (the waiting writer's mark) and leader election (its channel).
  std::string permit_slot, permits, writer, leader_channel;
};
lock_names names_of_lock(const std::string& key_prefix, const std::string& name);

/// One command line per (command, key or channel) the library sends or its
/// scripts call, with plausible arguments.
std::vector<std::vector<std::string>> acl_probes(const lock_names& lock);

/// The commands the embedded scripts call (redis.call / redis.pcall), upper
/// case, each once.
std::vector<std::string> script_commands();

}  // namespace redlock::detail
