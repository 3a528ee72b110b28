// SPDX-License-Identifier: Apache-2.0
// `redlock --help` and the man page redlock.1: one text, two renderings
// (help.cpp prints the help, man_page.cpp the roff).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace redlock::cli {

/// One row of the exit-status table.
struct exit_status {
  const char* status;   ///< "0", "64", ... or what the row is about
  const char* meaning;
};
extern const std::vector<exit_status> exit_statuses;

/// One line per subcommand, as `redlock --help` prints it and the user guide
/// shows it (the test cli_synopsis_matches_the_user_guide compares them).
extern const char* const synopsis;
/// What every subcommand takes to reach the masters: its intro and lines.
extern const char* const connection_intro;
extern const char* const connection_synopsis;
extern const char* const durations_note;

/// `redlock --help`.
void print_usage(std::ostream& os);

/// redlock.1 in roff: the above, then each subcommand's --help as an option
/// list (the hidden `redlock --man`; the build installs its output).
void print_man_page(std::ostream& os);

}  // namespace redlock::cli
