// SPDX-License-Identifier: Apache-2.0
#include "connection_args.hpp"

#include "args.hpp"
#include "duration.hpp"

#include <redlock/node_uri.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace redlock::cli {

namespace po = boost::program_options;

namespace {

// --FLAG, else $VAR, else empty.
std::string flag_or_env(const po::variables_map& vm, const char* flag, const char* var) {
  if (vm.count(flag)) return vm[flag].as<std::string>();
  if (const char* env = std::getenv(var)) return env;
  return {};
}

// The first line of `path`, without its line end.
std::string first_line_of(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage("--password-file '" + path + "' cannot be read: " + std::strerror(errno));
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) usage("--password-file '" + path + "' has no password on its first line");
  return line;
}

}  // namespace

void add_connection_options(po::options_description& d) {
  d.add_options()("nodes", value_named("URI,..."), "comma-separated redis:// URIs (default: $REDLOCK_NODES)")(
      "tls-ca", value_named("FILE"),
      "CA file to verify rediss:// masters (default: $REDLOCK_TLS_CA, else the system store)")(
      "tls-cert", value_named("FILE"),
      "client certificate (PEM) for rediss:// masters that ask for one (default: $REDLOCK_TLS_CERT)")(
      "tls-key", value_named("FILE"), "its private key (PEM, not encrypted) (default: $REDLOCK_TLS_KEY)")(
      "user", value_named("USER"), "user for the password below (default: $REDLOCK_USER, else the default user)")(
      "password-file", value_named("FILE"),
      "first line: the password for URIs without one (default: $REDLOCK_PASSWORD); keeps it out of `ps`");
}

void read_connection(const po::variables_map& vm, redlock::client_options& client) {
  auto list = flag_or_env(vm, "nodes", "REDLOCK_NODES");
  client.nodes = split_list(list);
  if (client.nodes.empty()) usage("no masters: give --nodes URI,... or set REDLOCK_NODES");
  client.tls_ca_file = flag_or_env(vm, "tls-ca", "REDLOCK_TLS_CA");
  client.tls_cert_file = flag_or_env(vm, "tls-cert", "REDLOCK_TLS_CERT");
  client.tls_key_file = flag_or_env(vm, "tls-key", "REDLOCK_TLS_KEY");
  client.user = flag_or_env(vm, "user", "REDLOCK_USER");
  if (vm.count("password-file"))
    client.password = first_line_of(vm["password-file"].as<std::string>());
  else if (const char* env = std::getenv("REDLOCK_PASSWORD"))
    client.password = env;
}

std::vector<std::string> passwords_in_argv(const po::variables_map& vm) {
  std::vector<std::string> out;
  if (!vm.count("nodes")) return out;
  for (auto& uri : split_list(vm["nodes"].as<std::string>())) {
    std::string why;
    if (auto parsed = redlock::parse_node_uri(uri, why); parsed && !parsed->password.empty())
      out.push_back(parsed->display());
  }
  return out;
}

}  // namespace redlock::cli
