// SPDX-License-Identifier: Apache-2.0
// Validation of user input, before anything is sent (pure; unit-tested).
#pragma once

#include "connection/node_address.hpp"

#include <redlock/options.hpp>

#include <boost/system/error_code.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

struct check_result {
  boost::system::error_code code;
  std::string message;  // names the problem
  explicit operator bool() const noexcept { return static_cast<bool>(code); }
};

/// Parses every node URI (each without a password of its own takes the
/// options' user and password) and checks the client-wide options.
check_result check_client_options(const client_options& options, std::vector<node_address>& addresses);

/// Checks one acquisition's name (under the client's key prefix) and options
/// against the client's node timeout.
check_result check_acquire(std::string_view name, const acquire_options& options, milliseconds node_timeout,
                           std::string_view key_prefix);

/// Checks an adoption: the token's shape against the kind it is adopted as
/// (every kind's token has its own: one of another shape names no hold of
/// that kind), and what each kind needs beyond the token.
check_result check_adopt(std::string_view name, std::string_view token, milliseconds ttl, const adopt_options& how,
                         milliseconds node_timeout, std::string_view key_prefix);

/// Checks an extension's TTL.
check_result check_ttl(milliseconds ttl, milliseconds node_timeout);

}  // namespace redlock::detail
