// SPDX-License-Identifier: Apache-2.0
// `redlock doctor`: audits the masters (redlock::diagnose) and prints one
// line per problem, or JSON with --json.
#pragma once

#include <string>
#include <vector>

namespace redlock::cli {

/// Exit status: 0 nothing found, 1 warnings only, 2 at least one error.
int doctor(const std::vector<std::string>& args);

}  // namespace redlock::cli
