// SPDX-License-Identifier: Apache-2.0
// Running the `redlock` CLI from a test (integration_cli, integration_cli_admin):
// through sh, with REDLOCK_NODES set, both streams captured.
#pragma once

#include "masters.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace redlock::testing {

struct result {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// `s` as one shell word, in single quotes.
inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Runs the CLI through sh with REDLOCK_NODES (and `env`: "NAME=value ...")
/// set; captures both streams.
inline result cli(const std::string& nodes, const std::string& args, const std::string& env = "") {
  static int n = 0;
  auto base = "/tmp/redlock-cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
  auto cmd = env + " REDLOCK_NODES=" + quote(nodes) + " " + REDLOCK_CLI_PATH + " " + args + " >" + base + ".out 2>" + base +
             ".err </dev/null";
  int status = std::system(cmd.c_str());
  result r{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(base + ".out"),
           slurp(base + ".err")};
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

/// The masters' URIs as --nodes takes them.
inline std::string nodes_of(masters& m) {
  std::string s;
  for (auto& u : m.uris()) s += (s.empty() ? "" : ",") + u;
  return s;
}

}  // namespace redlock::testing
