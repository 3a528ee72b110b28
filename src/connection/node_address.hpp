// SPDX-License-Identifier: Apache-2.0
// A master's address parsed from redis://[user:password@]host:port[/db]
// (or rediss:// for TLS).
#pragma once

#include <boost/system/error_code.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redlock::detail {

struct node_address {
  bool tls = false;
  std::string host;
  std::uint16_t port = 6379;
  std::string user;      // empty: AUTH <password> (the default user)
  std::string password;  // empty: no AUTH
  int db = 0;

  /// The URI without the password, for logs and error messages.
  std::string display() const;
};

/// Parses one node URI; on failure returns nullopt and sets `why` to a
/// message naming the problem.
std::optional<node_address> parse_node_uri(std::string_view uri, std::string& why);

}  // namespace redlock::detail
