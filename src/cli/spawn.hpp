// SPDX-License-Identifier: Apache-2.0
// Starting `redlock run`'s COMMAND (run.cpp waits for it and ends it).
#pragma once

#include <redlock/lock.hpp>

#include <span>
#include <string>
#include <vector>
#include <sys/types.h>

namespace redlock::cli {

/// The command's environment: ours, with the lock's REDLOCK_* variables set.
std::vector<std::string> command_environment(const std::string& name, const redlock::lock& l);

/// Starts `command` (execvp's search) with `env`; it dies with redlock
/// (PR_SET_PDEATHSIG) and gets the default disposition of `default_signals`
/// and SIGCHLD. Returns 0, with the child's pid in `child`, or an errno.
int spawn_command(const std::vector<std::string>& command, std::vector<std::string> env,
                  std::span<const int> default_signals, pid_t& child);

}  // namespace redlock::cli
