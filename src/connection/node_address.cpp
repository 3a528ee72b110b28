// SPDX-License-Identifier: Apache-2.0
#include "node_address.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include <charconv>

namespace redlock {

std::string node_uri::display() const {
  std::string out = tls ? "rediss://" : "redis://";
  if (!user.empty() || !password.empty()) out += (user.empty() ? "" : user) + ":***@";
  bool v6 = host.find(':') != std::string::npos;
  out += v6 ? "[" + host + "]" : host;
  out += ":" + std::to_string(port);
  if (db != 0) out += "/" + std::to_string(db);
  return out;
}

std::optional<node_uri> parse_node_uri(std::string_view text, std::string& why) {
  auto quoted = "'" + std::string(text) + "'";
  auto parsed = boost::urls::parse_uri(text);
  if (!parsed) {
    why = "node URI " + quoted + " is not a URI (expected redis://[user:password@]host:port[/db])";
    return std::nullopt;
  }
  const boost::urls::url_view& u = *parsed;
  node_uri a;
  if (u.scheme() == "redis") {
    a.tls = false;
  } else if (u.scheme() == "rediss") {
    a.tls = true;
  } else {
    why = "node URI " + quoted + " has scheme '" + std::string(u.scheme()) + "' (expected redis or rediss)";
    return std::nullopt;
  }
  if (!u.has_authority() || u.encoded_host().empty()) {
    why = "node URI " + quoted + " has no host";
    return std::nullopt;
  }
  a.host = u.host_address();  // brackets of an IPv6 literal removed
  if (u.has_port()) {
    auto p = u.port();
    unsigned value = 0;
    auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
    if (ec != std::errc() || end != p.data() + p.size() || value == 0 || value > 65535) {
      why = "node URI " + quoted + " has an invalid port '" + std::string(p) + "'";
      return std::nullopt;
    }
    a.port = static_cast<std::uint16_t>(value);
  }
  if (u.has_userinfo()) {
    a.user = u.user();
    a.password = u.password();
    // redis://:secret@host means "default user, password secret"; a lone
    // redis://secret@host is taken as a password too (common in the wild).
    if (!u.has_password()) {
      a.password = a.user;
      a.user.clear();
    }
  }
  auto path = u.path();
  if (!path.empty() && path != "/") {
    std::string_view digits = path;
    if (digits.front() == '/') digits.remove_prefix(1);
    int db = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), db);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || db < 0) {
      why = "node URI " + quoted + " has an invalid database '" + std::string(path) + "' (expected /<number>)";
      return std::nullopt;
    }
    a.db = db;
  }
  if (u.has_query() || u.has_fragment()) {
    why = "node URI " + quoted + " has a query or fragment, which is not supported";
    return std::nullopt;
  }
  return a;
}

}  // namespace redlock
