// SPDX-License-Identifier: Apache-2.0
// What the lock subcommands share: the common options (masters, name, TLS,
// output), the acquisition options, how a lock is printed, and the exit
// status each error condition maps to.
#pragma once

#include "args.hpp"
#include "connection_args.hpp"

#include <redlock/redlock.hpp>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

#include <optional>
#include <string>

namespace redlock::cli {

// Exit statuses (sysexits.h): bad usage or input; the key holds someone
// else's data; masters unusable; the lease was lost while COMMAND ran; the
// lock was not acquired (or is no longer held).
constexpr int ex_usage = 64, ex_dataerr = 65, ex_unavailable = 69, ex_lost = 70, ex_tempfail = 75;

/// Options every lock subcommand takes.
struct common {
  redlock::client_options client;
  std::string name;
  std::vector<std::string> more_names;  // `run --name a --name b`: held together with `name`
  bool json = false;
};
void add_common(boost::program_options::options_description& d, bool json = true);
/// What add_common takes but the name: how to reach the masters, the key
/// prefix, --json (where output is the command's, not COMMAND's) and
/// --help (for subcommands that name no lock).
void add_client_options(boost::program_options::options_description& d, bool json = true);
redlock::client_options read_client_options(const boost::program_options::variables_map& vm);
/// `several_names`: the command may name several names held together
/// (run, acquire, and release and extend of such a hold).
common read_common(const boost::program_options::variables_map& vm, bool several_names = false);

/// --ttl, --wait, --fenced, --verbose, --description and, with `kinds`, the
/// kind of lock: --kind, --permits, --shared, --exclusive.
void add_acquire_options(boost::program_options::options_description& d, bool kinds = true);
redlock::acquire_options read_acquire(const boost::program_options::variables_map& vm);

/// try_acquire that says why it failed: "not acquired" on stderr with the
/// attempts and a summary of the last one and, with --verbose, one line per
/// master. Errors other than a refusal are thrown, after the same lines.
std::optional<redlock::lock> acquire_or_explain(redlock::client& client, const common& c, redlock::acquire_options a,
                                                const boost::program_options::variables_map& vm);

/// One of our mutex tokens: 32 hex digits (after 's:' for a set's), as
/// lua/force_release.lua tells a lock's string from someone else's.
bool looks_like_token(std::string s);

/// --token, else $REDLOCK_TOKEN; usage error when neither.
std::string token_arg(const boost::program_options::variables_map& vm);

/// The exit status for a library error, by its condition.
int exit_code_for(const boost::system::error_code& ec);

/// Why a lease was lost, in words for the operator.
const char* reason_name(redlock::lost_reason r);

/// Shell assignments (eval-able) or one JSON object.
void print_lock(const redlock::lock& l, bool as_json);

}  // namespace redlock::cli
