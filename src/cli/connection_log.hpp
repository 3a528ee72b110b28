// SPDX-License-Identifier: Apache-2.0
// --verbose on run, elect and acquire: the client's connection events
// (observer::on_log: connected, connect failed, connection closed, with
// TLS and AUTH errors) on stderr, one line each.
#pragma once

#include <boost/program_options/variables_map.hpp>

#include <redlock/observer.hpp>

#include <memory>
#include <string>

namespace redlock::cli {

/// The observer to give the client: `next` itself without --verbose; with
/// it, one that prints each log line as "redlock: MESSAGE" on stderr and
/// passes every event on to `next` (if any).
std::shared_ptr<redlock::observer> with_connection_log(const boost::program_options::variables_map& vm,
                                                       std::shared_ptr<redlock::observer> next);

/// `message` with the userinfo of every redis:// or rediss:// URI in it
/// removed: the library masks a password as *** but keeps the user, and an
/// operator's terminal or log needs neither.
std::string without_userinfo(std::string message);

}  // namespace redlock::cli
