// SPDX-License-Identifier: Apache-2.0
// A master's address, parsed from redis://[user:password@]host[:port][/db]
// (rediss:// for TLS): the one parser the client, the CLI, the bench and the
// demo share.
#pragma once

#include <redlock/export.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redlock {

struct node_uri {
  bool tls = false;
  std::string host;  ///< an IPv6 literal without its brackets
  std::uint16_t port = 6379;
  std::string user;      ///< empty: AUTH <password> (the default user)
  std::string password;  ///< empty: no AUTH
  int db = 0;

  /// The URI without the password, for logs and error messages.
  REDLOCK_EXPORT std::string display() const;
};

/// Parses one master URI; on failure returns nullopt and sets `why` to a
/// message naming the problem. `redis://secret@host` is read as a password.
REDLOCK_EXPORT std::optional<node_uri> parse_node_uri(std::string_view uri, std::string& why);

}  // namespace redlock
