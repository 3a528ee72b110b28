// SPDX-License-Identifier: Apache-2.0
// `redlock run`: acquires with renewal, runs COMMAND with the lock's
// REDLOCK_* variables, forwards signals to it, and ends it when the lease is
// lost (exit 70; how: --on-lost); otherwise releases and exits with
// COMMAND's status.
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
  if (l.permit()) lock_vars.push_back("REDLOCK_PERMIT=" + std::to_string(*l.permit()));
  if (auto names = l.names(); names.size() > 1) {
    // Several names held together: all of them, and (fenced) their tokens, in
    // the same (sorted) order, separated by spaces.
    std::string all, fences;
    for (auto& n : names) all += (all.empty() ? "" : " ") + n;
    for (auto f : l.fences()) fences += (fences.empty() ? "" : " ") + std::to_string(f);
    lock_vars.push_back("REDLOCK_NAMES=" + all);
    if (!fences.empty()) lock_vars.push_back("REDLOCK_FENCES=" + fences);
  }
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

// What to do to COMMAND when the lease is lost (--on-lost).
struct on_lost_policy {
  enum class action { term, kill, hook } what = action::term;
  std::string hook;  // for hook: a shell command
};

on_lost_policy on_lost_arg(const po::variables_map& vm) {
  if (!vm.count("on-lost")) return {};
  auto v = vm["on-lost"].as<std::string>();
  if (v == "term") return {};
  if (v == "kill") return {on_lost_policy::action::kill, {}};
  if (v.rfind("hook:", 0) == 0 && v.size() > 5) return {on_lost_policy::action::hook, v.substr(5)};
  usage("--on-lost '" + v + "' is not a policy (term, kill, or hook:COMMAND)");
}

// Waits up to `grace` for the child to end, then SIGKILLs it; its status.
int reap_within(pid_t child, std::chrono::steady_clock::duration grace) {
  int status = 0;
  auto until = std::chrono::steady_clock::now() + grace;
  while (::waitpid(child, &status, WNOHANG) != child) {
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  return status;
}

// The lease is lost: the command must not go on believing it holds the
// lock. term: SIGTERM, SIGKILL after the grace; kill: SIGKILL now; hook: the
// operator's command decides how to stop it (it gets REDLOCK_PID and
// REDLOCK_LOST_REASON), and SIGKILL still follows the grace.
void end_command(pid_t child, const on_lost_policy& policy, std::chrono::milliseconds grace, const std::string& name,
                 redlock::lost_reason why) {
  switch (policy.what) {
    case on_lost_policy::action::kill:
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
      return;
    case on_lost_policy::action::term:
      ::kill(child, SIGTERM);
      reap_within(child, grace);
      return;
    case on_lost_policy::action::hook: {
      std::vector<std::string> env;
      for (char** e = environ; *e; ++e) env.emplace_back(*e);
      env.push_back("REDLOCK_NAME=" + name);
      env.push_back("REDLOCK_PID=" + std::to_string(child));
      env.push_back("REDLOCK_LOST_REASON=" + std::string(redlock::to_string(why)));
      pid_t hook = -1;
      if (int rc = spawn_command({"/bin/sh", "-c", policy.hook}, env, hook)) {
        std::cerr << "redlock: cannot run the --on-lost hook: " << std::strerror(rc) << "; terminating the command\n";
        ::kill(child, SIGTERM);
      }
      reap_within(child, grace);
      if (hook > 0) reap_within(hook, grace);
      return;
    }
  }
}

}  // namespace

namespace {

// `redlock elect`: campaigns until leader (`--wait`, 0 for as long as it
// takes), with the epoch in REDLOCK_FENCE.
std::optional<redlock::lock> campaign(redlock::client& client, const common& c, redlock::acquire_options a) {
  const bool forever = a.wait == 0ms;
  if (forever) a.wait = 1h;
  for (;;) {
    try {
      return client.campaign(c.name, a);
    } catch (const redlock::error& e) {
      if (e.code() != redlock::errc::not_acquired || !forever) {
        std::cerr << "redlock: " << e.what() << "\n";
        if (e.code() == redlock::errc::not_acquired) return std::nullopt;
        throw already_reported{exit_code_for(e.code())};
      }
    }
  }
}

}  // namespace

int run(const std::vector<std::string>& args) { return run_holding(args, false); }
int elect(const std::vector<std::string>& args) { return run_holding(args, true); }

int run_holding(const std::vector<std::string>& args, bool elect) {
  po::options_description d(elect ? "redlock elect [options] -- COMMAND [ARGS...]"
                                  : "redlock run [options] -- COMMAND [ARGS...]");
  add_common(d);
  add_acquire_options(d);
  d.add_options()("grace", po::value<std::string>(),
                  "after a lost lease: how long COMMAND may take to stop before SIGKILL (default 5s)")(
      "on-lost", po::value<std::string>(),
      "when the lease is lost: term (SIGTERM, default), kill (SIGKILL), or hook:CMD (run CMD with sh -c, "
      "REDLOCK_PID and REDLOCK_LOST_REASON set)")(
      "max-hold", po::value<std::string>(), "stop renewing after this long: the lease is then lost (default: no cap)")(
      "metrics-port", po::value<std::string>(), "serve Prometheus metrics at http://[HOST:]PORT/metrics while it runs");
  std::vector<std::string> command;
  auto vm = parse(args, d, &command);
  auto c = read_common(vm, !elect);
  auto a = read_acquire(vm);
  a.together = c.more_names;
  if (elect && (vm.count("kind") || vm.count("permits") || vm.count("shared") || vm.count("exclusive")))
    usage("elect: a leader holds one name as a mutex (no --kind, --permits, --shared or --exclusive)");
  auto grace = duration_arg(vm, "grace", 5s);
  auto policy = on_lost_arg(vm);
  a.max_hold = duration_arg(vm, "max-hold", 0s);
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
  auto l = elect ? campaign(client, c, a) : acquire_or_explain(client, c, a, vm);
  if (!l) return ex_tempfail;
  // A leader steps down by resigning, which tells the observers at once.
  auto let_go = [&] { elect ? client.resign(*l) : client.release(*l); };

  for (int sig : forwarded_signals) std::signal(sig, on_signal);
  pid_t child = -1;
  if (int rc = spawn_command(command, command_environment(c.name, *l), child)) {
    // As a shell would: 127 when the command cannot be run; 69 when no
    // process could be made at all.
    bool no_process = rc == EAGAIN || rc == ENOMEM;
    std::cerr << "redlock: cannot " << (no_process ? "start" : "run") << " '" << command[0]
              << "': " << std::strerror(rc) << "\n";
    try {
      let_go();
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
      std::cerr << "redlock: lease on '" << c.name << "' lost (" << reason_name(why) << "); ending the command\n";
      end_command(child, policy, grace, c.name, why);
      try {
        let_go();
      } catch (const redlock::error&) {
      }
      return ex_lost;
    }
    std::this_thread::sleep_for(10ms);
  }
  try {
    let_go();
  } catch (const redlock::error& e) {
    std::cerr << "redlock: release of '" << c.name << "' failed: " << e.what() << "\n";
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return ex_unavailable;
}

}  // namespace redlock::cli
