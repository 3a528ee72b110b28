// SPDX-License-Identifier: Apache-2.0
// How a script is called on a master: EVALSHA, and once, after a NOSCRIPT
// reply (the master's script cache was flushed or it restarted), EVAL with
// the body. The one encoder every caller uses (quorum rounds, fenced_store).
#pragma once

#include "connection/resp.hpp"
#include "script.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// Appends `EVALSHA sha1 numkeys keys... args...` (or, `with_body`, `EVAL
/// body ...`) to `out`.
inline void append_script_call(std::string& out, const script& s, const std::vector<std::string>& keys,
                               const std::vector<std::string>& args, bool with_body) {
  std::vector<std::string_view> argv;
  argv.reserve(3 + keys.size() + args.size());
  auto numkeys = std::to_string(keys.size());
  argv.push_back(with_body ? "EVAL" : "EVALSHA");
  argv.push_back(with_body ? s.body : s.sha1);
  argv.push_back(numkeys);
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  append_command(out, argv.data(), argv.size());
}

}  // namespace redlock::detail
