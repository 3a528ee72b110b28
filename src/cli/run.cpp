// SPDX-License-Identifier: Apache-2.0
// `redlock run`: acquires with renewal, runs COMMAND with the lock's
// REDLOCK_* variables, forwards signals to it, and ends it when the lease is
// lost (exit 70); otherwise releases and exits with COMMAND's status.
#include "commands.hpp"
#include "lock_args.hpp"
#include "metrics.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace redlock::cli {

namespace po = boost::program_options;
using namespace std::chrono_literals;

namespace {

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

}  // namespace

int run(const std::vector<std::string>& args) {
  po::options_description d("redlock run [options] -- COMMAND [ARGS...]");
  add_common(d);
  add_acquire_options(d);
  d.add_options()("grace", po::value<std::string>(), "after a lost lease: SIGTERM, then SIGKILL after this (default 5s)")(
      "metrics-port", po::value<std::string>(), "serve Prometheus metrics at http://[HOST:]PORT/metrics while it runs");
  std::vector<std::string> command;
  auto vm = parse(args, d, &command);
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

}  // namespace redlock::cli
