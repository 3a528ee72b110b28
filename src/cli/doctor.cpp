// SPDX-License-Identifier: Apache-2.0
#include "commands.hpp"

#include "args.hpp"
#include "connection_args.hpp"

#include <redlock/doctor.hpp>

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <iostream>

namespace redlock::cli {

namespace po = boost::program_options;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

const char* level_name(severity s) { return s == severity::error ? "error" : "warning"; }

json::object to_json(const node_facts& n) {
  json::object o{{"node", n.node}, {"reachable", n.reachable}};
  if (!n.reachable) {
    o["error"] = n.error;
    return o;
  }
  o["version"] = n.version;
  o["mode"] = n.mode;
  o["role"] = n.role;
  o["run_id"] = n.run_id;
  o["replicas"] = n.replicas;
  if (n.aof) o["appendonly"] = *n.aof;
  if (!n.appendfsync.empty()) o["appendfsync"] = n.appendfsync;
  o["maxmemory_policy"] = n.maxmemory_policy;
  o["rtt_p50_us"] = n.rtt_p50.count();
  o["rtt_p99_us"] = n.rtt_p99.count();
  if (n.clock_offset) {
    o["clock_offset_us"] = n.clock_offset->count();
    o["clock_uncertainty_us"] = n.clock_uncertainty.count();
  }
  return o;
}

std::string ms(std::chrono::microseconds d) {
  auto tenths = (d.count() + 50) / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " ms";
}

// One line of what was read from a master (--verbose).
std::string describe(const node_facts& n) {
  if (!n.reachable) return n.node + ": unreachable (" + n.error + ")";
  std::string s = n.node + ": redis " + n.version + " " + n.mode + " " + n.role;
  s += ", appendonly " + std::string(!n.aof ? "?" : *n.aof ? "yes" : "no");
  if (!n.appendfsync.empty()) s += " (appendfsync " + n.appendfsync + ")";
  s += ", maxmemory-policy " + n.maxmemory_policy;
  s += ", round trip p50 " + ms(n.rtt_p50) + " p99 " + ms(n.rtt_p99);
  if (n.clock_offset) s += ", clock " + std::to_string(n.clock_offset->count() / 1000) + " ms from ours";
  return s;
}

}  // namespace

int doctor(const std::vector<std::string>& args) {
  po::options_description d("redlock doctor [options]: audits the masters; exit 0 nothing found, 1 warnings, 2 errors");
  add_connection_options(d);
  d.add_options()(
      "node-timeout", value_named("DURATION"), "the per-master deadline you use (default 50ms)")(
      "ttl", value_named("DURATION"), "the TTL you plan (default 10s)")(
      "prefix", value_named("P"), "the key prefix you use")(
      "name", value_named("NAME"), "a lock name whose keys and channels the ACL check uses (default redlock-doctor)")(
      "acl-user", value_named("USER"), "check this ACL user's rights (default: the user of each URI)")(
      "round-trips", po::value<unsigned>()->value_name("N"), "PINGs per master for the round-trip p99 (default 50)")(
      "json", "machine-readable output")("verbose,v", "also print what was read from each master")("help,h", "this help");
  auto vm = parse(args, d);
  client_options client;
  read_connection(vm, client);
  client.node_timeout = duration_arg(vm, "node-timeout", 50ms);
  if (vm.count("prefix")) client.key_prefix = vm["prefix"].as<std::string>();
  doctor_options options;
  options.ttl = duration_arg(vm, "ttl", 10s);
  if (vm.count("name")) options.name = vm["name"].as<std::string>();
  if (vm.count("acl-user")) options.acl_user = vm["acl-user"].as<std::string>();
  if (vm.count("round-trips")) options.round_trips = vm["round-trips"].as<unsigned>();
  if (options.round_trips == 0) usage("--round-trips must be at least 1");

  auto report = diagnose(client, options);
  // Only the command line knows where a URI came from: one in argv is
  // readable by every user of the machine (ps, /proc/PID/cmdline).
  for (auto& node : passwords_in_argv(vm))
    report.findings.push_back({severity::warning, "password_in_argv", node,
                               "the URI given with --nodes carries a password, which every user of this machine can "
                               "read with `ps`: give it with --password-file FILE or $REDLOCK_PASSWORD instead (or "
                               "in $REDLOCK_NODES)"});
  auto errors = report.count(severity::error), warnings = report.count(severity::warning);
  int status = errors ? 2 : warnings ? 1 : 0;
  if (vm.count("json")) {
    json::array nodes, findings;
    for (auto& n : report.nodes) nodes.push_back(to_json(n));
    for (auto& f : report.findings)
      findings.push_back({{"level", level_name(f.level)}, {"check", f.check}, {"node", f.node}, {"message", f.message}});
    std::cout << json::serialize(json::object{{"nodes", std::move(nodes)},
                                              {"findings", std::move(findings)},
                                              {"errors", errors},
                                              {"warnings", warnings}})
              << "\n";
    return status;
  }
  if (vm.count("verbose"))
    for (auto& n : report.nodes) std::cout << "info " << describe(n) << "\n";
  for (auto& f : report.findings)
    std::cout << level_name(f.level) << " " << f.check << " " << (f.node.empty() ? "(all masters)" : f.node) << ": "
              << f.message << "\n";
  if (report.findings.empty())
    std::cout << "ok: no problems found on " << report.nodes.size() << " masters\n";
  else
    std::cerr << "redlock doctor: " << errors << " error(s), " << warnings << " warning(s) on " << report.nodes.size()
              << " masters\n";
  return status;
}

}  // namespace redlock::cli
