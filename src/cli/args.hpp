// SPDX-License-Identifier: Apache-2.0
// Command-line pieces every `redlock` subcommand shares: usage errors (exit
// 64), durations (connection_args.hpp: how to reach the masters).
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <boost/program_options/variables_map.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace redlock::cli {

/// Bad usage or input: main prints "redlock: <what>" and exits 64.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void usage(const std::string& why);

/// Thrown by parse() once it printed a subcommand's --help: main exits 0.
struct help_shown {};

/// Thrown once a subcommand has printed its own error: main exits `status`.
struct already_reported {
  int status;
};

/// Parses `args` against `options`; with `command`, the words after the
/// options (after --) go there. Usage error on anything unknown or malformed;
/// with --help (which every subcommand's options carry), prints the options
/// and throws help_shown.
boost::program_options::variables_map parse(const std::vector<std::string>& args,
                                            boost::program_options::options_description& options,
                                            std::vector<std::string>* command = nullptr);

/// An option's string value, shown in --help as `value_name` (DURATION,
/// URI, N...) rather than Boost's bare `arg`.
inline boost::program_options::typed_value<std::string>* value_named(const char* value_name) {
  return boost::program_options::value<std::string>()->value_name(value_name);
}

/// --NAME as a duration with a unit (500ms, 10s, 2m), or `dflt` when absent.
std::chrono::milliseconds duration_arg(const boost::program_options::variables_map& vm, const char* name,
                                       std::chrono::milliseconds dflt);

}  // namespace redlock::cli
