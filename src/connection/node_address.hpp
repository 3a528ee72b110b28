// SPDX-License-Identifier: Apache-2.0
// A master's address inside the library: the public node_uri
// (redlock/node_uri.hpp, whose parser lives in node_address.cpp).
#pragma once

#include <redlock/node_uri.hpp>

namespace redlock::detail {

using node_address = node_uri;
using redlock::parse_node_uri;

}  // namespace redlock::detail
