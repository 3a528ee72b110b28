// SPDX-License-Identifier: Apache-2.0
// `redlock doctor` checks ACL rights with a hand-written list of the
// commands, keys and channels the library uses (src/doctor/probes.cpp):
// every command a script calls must be on it, and every key it names must
// be one of the lock's.
#define BOOST_TEST_MODULE unit_doctor_probes
#include <boost/test/unit_test.hpp>

#include "doctor/probes.hpp"

#include <algorithm>

using redlock::detail::acl_probes;
using redlock::detail::names_of_lock;
using redlock::detail::script_commands;

BOOST_AUTO_TEST_CASE(every_command_the_scripts_call_is_probed) {
  auto lock = names_of_lock("app:", "x");
  auto probes = acl_probes(lock);
  auto commands = script_commands();
  // The scan itself found the scripts' calls (a broken scan would pass vacuously).
  BOOST_TEST(commands.size() >= 15u);
  for (const char* known : {"SET", "PUBLISH", "ZADD", "HINCRBY", "PEXPIRE", "INCR"})
    BOOST_TEST((std::find(commands.begin(), commands.end(), known) != commands.end()), known);
  for (auto& c : commands) {
    bool probed = std::any_of(probes.begin(), probes.end(), [&](auto& p) { return p.front() == c; });
    BOOST_TEST(probed, "scripts call " << c << ", which doctor's ACL probes do not check");
  }
}

BOOST_AUTO_TEST_CASE(probes_name_the_lock_keys_and_channels_with_the_prefix) {
  auto lock = names_of_lock("app:", "x");
  BOOST_TEST(lock.key == "app:x");
  BOOST_TEST(lock.fence == "{app:x}:fence");
  BOOST_TEST(lock.channel == "{app:x}:released");
  BOOST_TEST(lock.wake_channel.rfind("{app:x}:released:", 0) == 0u);
  constexpr int n = 14;
  bool uses[n] = {};
  const std::string* names[n] = {&lock.key,         &lock.fence,       &lock.queue,        &lock.deadlines,
                                 &lock.terms,       &lock.channel,     &lock.wake_channel, &lock.wake_list,
                                 &lock.wake_deadlines, &lock.holder,   &lock.permit_slot,  &lock.permits,
                                 &lock.writer,      &lock.leader_channel};
  for (auto& p : acl_probes(lock))
    for (int i = 0; i < n; ++i) uses[i] |= std::find(p.begin(), p.end(), *names[i]) != p.end();
  for (int i = 0; i < n; ++i) BOOST_TEST(uses[i], *names[i] << " is never probed");
}
