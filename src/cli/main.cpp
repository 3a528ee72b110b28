// SPDX-License-Identifier: Apache-2.0
// `redlock`: the RedLock from the shell.
//   redlock run     --name N [--ttl 10s] [--wait 0s] [--kind K] [--fenced] -- COMMAND [ARGS...]
//   redlock acquire --name N [--ttl 10s] [--wait 0s] [--fenced] [--json]
//   redlock extend  --name N --token T [--ttl 10s] [--json]
//   redlock release --name N --token T
//   redlock status  --name N [--json]
//   redlock doctor  [--ttl 10s] [--json]   (src/cli/doctor.cpp)
//   redlock --version
// Masters come from --nodes URI,... or REDLOCK_NODES; the CA for rediss://
// masters from --tls-ca FILE or REDLOCK_TLS_CA. Exit status: 0 ok;
// 64 bad usage or input; 65 the key holds someone else's data; 69 masters
// unusable (auth, unreachable); 70 lease lost while COMMAND ran; 75 lock not
// acquired (or no longer held); otherwise COMMAND's own status.
#include "args.hpp"
#include "doctor.hpp"
#include "metrics.hpp"

#include <redlock/redlock.hpp>

#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <atomic>
#include <csignal>
#include <future>
#include <cstring>
#include <iostream>
#include <sstream>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace po = boost::program_options;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

constexpr int ex_usage = 64, ex_dataerr = 65, ex_unavailable = 69, ex_lost = 70, ex_tempfail = 75;

using redlock::cli::duration_arg;
using redlock::cli::parse;
using redlock::cli::usage;
using redlock::cli::usage_error;

struct common {
  redlock::client_options client;
  std::string name;
  bool json = false;
};

void add_common(po::options_description& d) {
  d.add_options()("nodes", po::value<std::string>(), "comma-separated redis:// URIs (default: $REDLOCK_NODES)")(
      "name", po::value<std::string>(), "lock name")("node-timeout", po::value<std::string>(),
                                                     "per-master deadline (default 50ms)")(
      "prefix", po::value<std::string>(), "key prefix")(
      "tls-ca", po::value<std::string>(), "CA file to verify rediss:// masters (default: $REDLOCK_TLS_CA, else the system store)")(
      "json", "machine-readable output")("help,h", "this help");
}

common read_common(const po::variables_map& vm) {
  common c;
  c.client.nodes = redlock::cli::nodes_arg(vm);
  c.client.node_timeout = duration_arg(vm, "node-timeout", 50ms);
  if (vm.count("prefix")) c.client.key_prefix = vm["prefix"].as<std::string>();
  if (vm.count("tls-ca"))
    c.client.tls_ca_file = vm["tls-ca"].as<std::string>();
  else if (const char* env = std::getenv("REDLOCK_TLS_CA"))
    c.client.tls_ca_file = env;
  if (!vm.count("name") || vm["name"].as<std::string>().empty()) usage("--name is required (and must not be empty)");
  c.name = vm["name"].as<std::string>();
  c.json = vm.count("json") > 0;
  return c;
}

int exit_code_for(const boost::system::error_code& ec) {
  using redlock::condition;
  // wrong_type is an invalid_argument, but "the key holds someone else's
  // data" has its own status (EX_DATAERR) so scripts can tell it apart.
  if (ec == redlock::errc::wrong_type) return ex_dataerr;
  if (ec == condition::invalid_argument) return ex_usage;
  if (ec == condition::contended || ec == condition::lost || ec == redlock::errc::timeout) return ex_tempfail;
  return ex_unavailable;
}

const char* reason_name(redlock::lost_reason r) {
  switch (r) {
    case redlock::lost_reason::expired: return "validity expired before a renewal reached a quorum";
    case redlock::lost_reason::taken_over: return "our token is gone from a quorum of masters";
    case redlock::lost_reason::quorum_lost: return "masters unreachable until validity ended";
    default: return "unknown";
  }
}

void print_lock(const redlock::lock& l, bool as_json) {
  if (as_json) {
    json::object o{{"name", l.name()}, {"token", l.token()}, {"validity_ms", l.remaining_validity().count()}};
    if (l.fence()) o["fence"] = *l.fence();
    std::cout << json::serialize(o) << "\n";
    return;
  }
  // eval-able by a shell: eval "$(redlock acquire --name x)"
  std::cout << "REDLOCK_NAME=" << l.name() << "\nREDLOCK_TOKEN=" << l.token()
            << "\nREDLOCK_VALIDITY_MS=" << l.remaining_validity().count() << "\n";
  if (l.fence()) std::cout << "REDLOCK_FENCE=" << *l.fence() << "\n";
}

redlock::acquire_options acquire_args(po::options_description& d) {
  d.add_options()("ttl", po::value<std::string>(), "lease time (default 10s)")(
      "wait", po::value<std::string>(), "how long to keep trying (default 0s: one attempt)")(
      "fenced", "also obtain a fencing token")("kind", po::value<std::string>(), "mutex (default), reentrant or fair");
  return {};
}

redlock::acquire_options read_acquire(const po::variables_map& vm) {
  redlock::acquire_options a;
  a.ttl = duration_arg(vm, "ttl", 10s);
  a.wait = duration_arg(vm, "wait", 0s);
  a.fenced = vm.count("fenced") > 0;
  if (vm.count("kind")) {
    auto k = vm["kind"].as<std::string>();
    if (k == "mutex")
      a.kind = redlock::lock_kind::mutex;
    else if (k == "reentrant")
      a.kind = redlock::lock_kind::reentrant;
    else if (k == "fair")
      a.kind = redlock::lock_kind::fair;
    else
      usage("--kind '" + k + "' is not a lock kind (mutex, reentrant, fair)");
    // One process is one owner: shell scripts hand the token between commands.
    if (a.kind != redlock::lock_kind::mutex) a.owner = "pid" + std::to_string(::getpid());
  }
  return a;
}

// ---- run ------------------------------------------------------------------------

std::atomic<int> forwarded_signal{0};
extern "C" void on_signal(int sig) { forwarded_signal = sig; }

constexpr int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP};

// The command's environment: ours, with the lock's REDLOCK_* variables set.
std::vector<std::string> command_environment(const std::string& name, const redlock::lock& l) {
  std::vector<std::string> lock_vars{"REDLOCK_NAME=" + name, "REDLOCK_TOKEN=" + l.token(),
                                     "REDLOCK_VALIDITY_MS=" + std::to_string(l.remaining_validity().count())};
  if (l.fence()) lock_vars.push_back("REDLOCK_FENCE=" + std::to_string(*l.fence()));
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    bool replaced = false;
    for (auto& v : lock_vars) replaced |= entry.substr(0, entry.find('=') + 1) == v.substr(0, v.find('=') + 1);
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), lock_vars.begin(), lock_vars.end());
  return env;
}

// Starts `command` with posix_spawnp: the client's I/O thread runs, so a
// forked child may run only async-signal-safe code before exec (no malloc,
// no setenv); spawn does all the preparing in the parent. The command gets
// the default disposition of the signals we forward. Returns 0 or an errno.
int spawn_command(std::vector<std::string> command, std::vector<std::string> env, pid_t& child) {
  std::vector<char*> argv, envp;
  for (auto& a : command) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawnattr_t attr;
  if (int rc = ::posix_spawnattr_init(&attr)) return rc;
  sigset_t defaults, none;
  sigemptyset(&defaults);
  sigemptyset(&none);
  for (int sig : forwarded_signals) sigaddset(&defaults, sig);
  ::posix_spawnattr_setsigdefault(&attr, &defaults);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  int rc = ::posix_spawnp(&child, argv[0], nullptr, &attr, argv.data(), envp.data());
  ::posix_spawnattr_destroy(&attr);
  return rc;
}

int cmd_run(const std::vector<std::string>& args) {
  po::options_description d("redlock run [options] -- COMMAND [ARGS...]");
  add_common(d);
  acquire_args(d);
  d.add_options()("grace", po::value<std::string>(), "after a lost lease: SIGTERM, then SIGKILL after this (default 5s)")(
      "metrics-port", po::value<std::string>(), "serve Prometheus metrics at http://[HOST:]PORT/metrics while it runs");
  std::vector<std::string> command;
  auto vm = parse(args, d, &command);
  if (vm.count("help")) {
    std::cout << d;
    return 0;
  }
  auto c = read_common(vm);
  auto a = read_acquire(vm);
  auto grace = duration_arg(vm, "grace", 5s);
  if (command.empty()) usage("no COMMAND given (redlock run ... -- COMMAND [ARGS...])");

  std::unique_ptr<redlock::cli::metrics_endpoint> metrics;  // outlives the client
  if (vm.count("metrics-port")) {
    metrics = redlock::cli::serve_metrics(vm["metrics-port"].as<std::string>(), c.client.nodes);
    c.client.observer = metrics->observer;
  }

  std::atomic<int> lost{0};
  a.renew = true;
  a.on_lost = [&lost](redlock::lost_reason r) { lost = static_cast<int>(r); };
  redlock::client client(c.client);
  auto l = client.try_acquire(c.name, a);
  if (!l) {
    std::cerr << "redlock: lock '" << c.name << "' not acquired within " << a.wait.count() << " ms\n";
    return ex_tempfail;
  }

  for (int sig : forwarded_signals) std::signal(sig, on_signal);
  pid_t child = -1;
  if (int rc = spawn_command(command, command_environment(c.name, *l), child)) {
    // As a shell would: 127 when the command cannot be run; 69 when no
    // process could be made at all.
    bool no_process = rc == EAGAIN || rc == ENOMEM;
    std::cerr << "redlock: cannot " << (no_process ? "start" : "run") << " '" << command[0]
              << "': " << std::strerror(rc) << "\n";
    try {
      client.release(*l);
    } catch (const redlock::error&) {
    }
    return no_process ? ex_unavailable : 127;
  }

  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(child, &status, WNOHANG);
    if (r == child) break;
    if (int sig = forwarded_signal.exchange(0)) ::kill(child, sig);
    if (lost.load()) {
      auto why = static_cast<redlock::lost_reason>(lost.load());
      std::cerr << "redlock: lease on '" << c.name << "' lost (" << reason_name(why)
                << "); terminating the command\n";
      ::kill(child, SIGTERM);
      auto until = std::chrono::steady_clock::now() + grace;
      while (::waitpid(child, &status, WNOHANG) != child) {
        if (std::chrono::steady_clock::now() >= until) {
          ::kill(child, SIGKILL);
          ::waitpid(child, &status, 0);
          break;
        }
        std::this_thread::sleep_for(10ms);
      }
      try {
        client.release(*l);
      } catch (const redlock::error&) {
      }
      return ex_lost;
    }
    std::this_thread::sleep_for(10ms);
  }
  try {
    client.release(*l);
  } catch (const redlock::error& e) {
    std::cerr << "redlock: release of '" << c.name << "' failed: " << e.what() << "\n";
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return ex_unavailable;
}

// ---- acquire / extend / release / status ----------------------------------------

int cmd_acquire(const std::vector<std::string>& args) {
  po::options_description d("redlock acquire [options]");
  add_common(d);
  acquire_args(d);
  auto vm = parse(args, d);
  if (vm.count("help")) {
    std::cout << d;
    return 0;
  }
  auto c = read_common(vm);
  auto a = read_acquire(vm);
  redlock::client client(c.client);
  auto l = client.try_acquire(c.name, a);
  if (!l) {
    std::cerr << "redlock: lock '" << c.name << "' not acquired\n";
    return ex_tempfail;
  }
  print_lock(*l, c.json);
  return 0;
}

std::string token_arg(const po::variables_map& vm) {
  if (vm.count("token")) return vm["token"].as<std::string>();
  if (const char* env = std::getenv("REDLOCK_TOKEN")) return env;
  usage("--token is required (or set REDLOCK_TOKEN)");
}

int cmd_extend_or_release(const std::vector<std::string>& args, bool extend) {
  po::options_description d(extend ? "redlock extend [options]" : "redlock release [options]");
  add_common(d);
  d.add_options()("token", po::value<std::string>(), "the holder's token (default: $REDLOCK_TOKEN)");
  if (extend) d.add_options()("ttl", po::value<std::string>(), "new lease time (default 10s)");
  auto vm = parse(args, d);
  if (vm.count("help")) {
    std::cout << d;
    return 0;
  }
  auto c = read_common(vm);
  auto token = token_arg(vm);
  auto ttl = extend ? duration_arg(vm, "ttl", 10s) : 10s;
  redlock::client client(c.client);
  auto l = client.async().adopt(c.name, token, ttl);
  if (extend) {
    client.extend(l, ttl);
    print_lock(l, c.json);
  } else {
    client.release(l);
    if (c.json) std::cout << json::serialize(json::object{{"name", c.name}, {"released", true}}) << "\n";
  }
  return 0;
}

int cmd_status(const std::vector<std::string>& args) {
  po::options_description d("redlock status [options]");
  add_common(d);
  auto vm = parse(args, d);
  if (vm.count("help")) {
    std::cout << d;
    return 0;
  }
  auto c = read_common(vm);
  redlock::client client(c.client);
  std::promise<std::vector<redlock::node_status>> p;
  auto f = p.get_future();
  client.async().async_status(c.name, [&p](boost::system::error_code, std::vector<redlock::node_status> s) {
    p.set_value(std::move(s));
  });
  auto nodes = f.get();
  if (c.json) {
    json::array a;
    for (auto& n : nodes) {
      json::object o{{"node", n.node}, {"ok", !n.error}, {"type", n.type}, {"holder", n.holder},
                     {"pttl_ms", n.pttl.count()}};
      if (n.error) o["error"] = n.error.message();
      if (n.fence) o["fence"] = *n.fence;
      if (!n.waiters.empty()) o["waiters"] = n.waiters;
      a.push_back(std::move(o));
    }
    std::cout << json::serialize(json::object{{"name", c.name}, {"nodes", std::move(a)}}) << "\n";
    return 0;
  }
  std::cout << "lock '" << c.name << "' on " << nodes.size() << " masters:\n";
  for (auto& n : nodes) {
    std::cout << "  " << n.node << "  ";
    if (n.error) {
      std::cout << "unreachable: " << n.error.message() << "\n";
      continue;
    }
    if (n.type == "none")
      std::cout << "free";
    else if (n.type == "string")
      std::cout << "held by " << n.holder << ", pttl " << n.pttl.count() << " ms";
    else if (n.type == "hash")
      std::cout << "held by " << n.holder << " (owner=levels), pttl " << n.pttl.count() << " ms";
    else
      std::cout << "key holds a " << n.type << " (not a lock)";
    std::cout << ", fence " << (n.fence ? std::to_string(*n.fence) : std::string("-"));
    if (!n.waiters.empty()) std::cout << ", queue " << n.waiters;
    std::cout << "\n";
  }
  return 0;
}

void print_usage(std::ostream& os) {
  os << "usage: redlock <run|acquire|extend|release|status|doctor> [options]   (redlock SUBCOMMAND --help for all "
        "options; redlock --version)\n"
        "  redlock run --name N [--ttl 10s] [--wait 0s] [--kind mutex|reentrant|fair] [--fenced] -- COMMAND [ARGS...]\n"
        "  redlock acquire --name N [--ttl 10s] [--wait 0s] [--kind K] [--fenced] [--json]\n"
        "  redlock extend --name N --token T [--ttl 10s] [--json]\n"
        "  redlock release --name N --token T\n"
        "  redlock status --name N [--json]\n"
        "  redlock doctor [--ttl 10s] [--acl-user U] [--json]   (audits the masters: 0 ok, 1 warnings, 2 errors)\n"
        "common: --nodes redis://host:port,... (or REDLOCK_NODES), --tls-ca FILE (or REDLOCK_TLS_CA),\n"
        "        --node-timeout 50ms, --prefix P, --json;\n"
        "run: --grace 5s (SIGTERM to SIGKILL after a lost lease), --metrics-port [HOST:]PORT (Prometheus);\n"
        "durations take units (500ms, 10s, 2m)\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(std::cerr);
    return ex_usage;
  }
  std::string sub = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (sub == "run") return cmd_run(args);
    if (sub == "acquire") return cmd_acquire(args);
    if (sub == "extend") return cmd_extend_or_release(args, true);
    if (sub == "release") return cmd_extend_or_release(args, false);
    if (sub == "status") return cmd_status(args);
    if (sub == "doctor") return redlock::cli::doctor(args);
    if (sub == "--version" || sub == "version") {
      std::cout << "redlock " << redlock::version << "\n";
      return 0;
    }
    if (sub == "--help" || sub == "-h" || sub == "help") {
      print_usage(std::cout);
      return 0;
    }
    usage("unknown subcommand '" + sub + "'");
  } catch (const usage_error& e) {
    std::cerr << "redlock: " << e.what() << "\n";
    return ex_usage;
  } catch (const redlock::error& e) {
    std::cerr << "redlock: " << e.what() << "\n";
    return exit_code_for(e.code());
  } catch (const std::exception& e) {
    std::cerr << "redlock: " << e.what() << "\n";
    return ex_unavailable;
  }
}
