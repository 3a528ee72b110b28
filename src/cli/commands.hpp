// SPDX-License-Identifier: Apache-2.0
// The `redlock` subcommands, one entry point each: the arguments after the
// subcommand's name in, the exit status out (usage errors and library
// errors are thrown; main turns them into a line and a status).
#pragma once

#include <boost/program_options/variables_map.hpp>

#include <string>
#include <vector>

namespace redlock::cli {

/// redlock run: holds the lock, renewed, while COMMAND runs (run.cpp).
int run(const std::vector<std::string>& args);
/// redlock elect: campaigns until leader, then runs COMMAND while it leads,
/// with the epoch in REDLOCK_FENCE (run.cpp).
int elect(const std::vector<std::string>& args);
/// What run and elect share.
int run_holding(const std::vector<std::string>& args, bool elect);
/// redlock acquire / extend / release: a lock handed between shell commands
/// by its token (lock_commands.cpp).
int acquire(const std::vector<std::string>& args);
int extend_or_release(const std::vector<std::string>& args, bool extend);
/// redlock status: each master's view of one lock (status.cpp).
int status(const std::vector<std::string>& args);
/// redlock list: every lock on the masters, one row per name (admin.cpp).
int list(const std::vector<std::string>& args);
/// redlock release --force: every hold of the names given removed, whoever
/// holds them (admin.cpp; `vm`: release's options, parsed).
int force_release(const boost::program_options::variables_map& vm);
/// redlock doctor: audits the masters; 0 nothing found, 1 warnings only, 2
/// at least one error (doctor.cpp).
int doctor(const std::vector<std::string>& args);

/// The subcommands by the names they are called by: main dispatches through
/// this table, and the man page lists each one's --help (main.cpp).
struct subcommand {
  const char* name;
  int (*run)(const std::vector<std::string>& args);
};
extern const std::vector<subcommand> subcommands;

}  // namespace redlock::cli
