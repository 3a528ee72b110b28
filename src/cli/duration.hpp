// SPDX-License-Identifier: Apache-2.0
// Durations and lists on a command line: "500ms", "10s", "2m", "1h", "0";
// "a,b,c". One parser for the CLI, redlock-bench and the demo.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::cli {

/// Parses a duration with a unit (ms, s, m, h); a bare "0" is allowed.
/// Returns nullopt for anything else (negative, no unit, overflow, junk).
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

/// "a,b,,c" -> {"a", "b", "c"}: empty items are dropped.
std::vector<std::string> split_list(std::string_view text, char separator = ',');

}  // namespace redlock::cli
