// SPDX-License-Identifier: Apache-2.0
// One master's answer to status.lua, as the kinds read it
// (kind_rounds::decode_status; the flattening and the order: status.cpp).
#pragma once

#include <redlock/status.hpp>

#include <charconv>
#include <optional>
#include <span>
#include <string>

namespace redlock::detail {

struct status_record {
  const std::string& type;   ///< the key's type: 'none', 'string', 'hash'...
  const std::string& token;  ///< a string key's value
  const std::string& about;  ///< the holder description's key's value
  std::span<const std::string> owners;   ///< a hash's fields and values, in pairs
  /// A semaphore's record: its number of permits, then per held slot: slot,
  /// token, pttl, fence, description (empty: no semaphore).
  std::span<const std::string> permits;
};

template <typename Int>
std::optional<Int> number(const std::string& s) {
  Int v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

/// The description is shown only while the one it names holds the lock: a
/// leftover of an earlier holder (crashed before its release) names a token
/// or owner that is no longer there (status.cpp).
void describe_holder(const std::string& about, node_lock_view& s);

}  // namespace redlock::detail
