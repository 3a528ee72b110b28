// SPDX-License-Identifier: Apache-2.0
#include "duration.hpp"

#include <charconv>
#include <cstdint>
#include <limits>

namespace redlock::cli {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  if (text == "0") return std::chrono::milliseconds(0);
  std::int64_t number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || end == text.data() || number < 0) return std::nullopt;
  std::string_view unit(end, text.data() + text.size() - end);
  std::int64_t scale = 0;
  if (unit == "ms")
    scale = 1;
  else if (unit == "s")
    scale = 1000;
  else if (unit == "m")
    scale = 60'000;
  else if (unit == "h")
    scale = 3'600'000;
  else
    return std::nullopt;
  if (number > std::numeric_limits<std::int64_t>::max() / scale) return std::nullopt;
  return std::chrono::milliseconds(number * scale);
}

std::vector<std::string> split_list(std::string_view text, char separator) {
  std::vector<std::string> out;
  while (!text.empty()) {
    auto end = text.find(separator);
    auto item = text.substr(0, end);
    if (!item.empty()) out.emplace_back(item);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

}  // namespace redlock::cli
