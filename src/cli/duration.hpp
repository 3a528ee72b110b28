// SPDX-License-Identifier: Apache-2.0
// Durations on the command line: "500ms", "10s", "2m", "1h", "0".
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace redlock::cli {

/// Parses a duration with a unit (ms, s, m, h); a bare "0" is allowed.
/// Returns nullopt for anything else (negative, no unit, overflow, junk).
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace redlock::cli
