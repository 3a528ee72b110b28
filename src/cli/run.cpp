// SPDX-License-Identifier: Apache-2.0
// `redlock run`: acquires with renewal, runs COMMAND with the lock's
// REDLOCK_* variables, forwards signals to it, and ends it when the lease is
// lost (exit 70; how: --on-lost); otherwise releases and exits with
// COMMAND's status. COMMAND dies with redlock (spawn_command).
#include "commands.hpp"
#include "connection_log.hpp"
#include "lock_args.hpp"
#include "metrics.hpp"
#include "spawn.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace redlock::cli {

namespace po = boost::program_options;
using namespace std::chrono_literals;

namespace {

// What the waiting loop waits for: COMMAND ended (SIGCHLD), a signal to
// forward, or the lease lost (from the client's I/O thread). Each of them
// writes to this eventfd, which a signal handler may do (write is
// async-signal-safe), and the loop sleeps in poll() on it.
int wake_fd = -1;
void wake() {
  int saved = errno;
  std::uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd, &one, sizeof one);
  (void)ignored;
  errno = saved;
}

std::atomic<int> forwarded_signal{0};
extern "C" void on_signal(int sig) {
  forwarded_signal = sig;
  wake();
}
extern "C" void on_child_ended(int) { wake(); }

constexpr int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP};

void handle(int sig, void (*handler)(int), int flags = 0) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART | flags;
  sigemptyset(&sa.sa_mask);
  ::sigaction(sig, &sa, nullptr);
}

// Sleeps until a wake-up or `until` (none: no deadline).
void await_wake(std::optional<std::chrono::steady_clock::time_point> until) {
  int timeout = -1;
  if (until) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*until - std::chrono::steady_clock::now());
    timeout = static_cast<int>(std::max<std::int64_t>(0, left.count()));
  }
  pollfd p{wake_fd, POLLIN, 0};
  ::poll(&p, 1, timeout);  // EINTR: a handler ran, which is a wake-up too
  std::uint64_t count;
  while (::read(wake_fd, &count, sizeof count) > 0) {
  }
}

// The child's status once it has ended.
std::optional<int> ended(pid_t child) {
  int status = 0;
  if (::waitpid(child, &status, WNOHANG) == child) return status;
  return std::nullopt;
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
  auto until = std::chrono::steady_clock::now() + grace;
  for (;;) {
    if (auto status = ended(child)) return *status;
    if (std::chrono::steady_clock::now() >= until) {
      int status = 0;
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      return status;
    }
    await_wake(until);
  }
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
      // The hook dies with redlock too (spawn_command): it acts on
      // REDLOCK_PID, and once redlock is gone the command has died with it
      // and been reaped elsewhere, so that pid may name another process by
      // the time a surviving hook signals it. Nor did it ever outlive us
      // otherwise: past the grace below it is SIGKILLed.
      pid_t hook = -1;
      if (int rc = spawn_command({"/bin/sh", "-c", policy.hook}, env, forwarded_signals, hook)) {
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
  // No --json: what COMMAND prints is the output. A leader holds one name
  // as a mutex: no kind to choose.
  add_common(d, false);
  add_acquire_options(d, !elect);
  d.add_options()("grace", value_named("DURATION"),
                  "after a lost lease: how long COMMAND may take to stop before SIGKILL (default 5s)")(
      "on-lost", value_named("POLICY"),
      "when the lease is lost: term (SIGTERM, default), kill (SIGKILL), or hook:CMD (run CMD with sh -c, "
      "REDLOCK_PID and REDLOCK_LOST_REASON set)")(
      "max-hold", value_named("DURATION"), "stop renewing after this long: the lease is then lost (default: no cap)")(
      "metrics-port", value_named("[HOST:]PORT"), "serve Prometheus metrics at http://[HOST:]PORT/metrics while it runs");
  std::vector<std::string> command;
  auto vm = parse(args, d, &command);
  auto c = read_common(vm, !elect);
  auto a = read_acquire(vm);
  a.other_names = c.more_names;
  auto grace = duration_arg(vm, "grace", 5s);
  auto policy = on_lost_arg(vm);
  a.max_hold = duration_arg(vm, "max-hold", 0s);
  if (command.empty()) usage("no COMMAND given (redlock run ... -- COMMAND [ARGS...])");

  std::unique_ptr<redlock::cli::metrics_endpoint> metrics;  // outlives the client
  if (vm.count("metrics-port")) metrics = serve_metrics(vm["metrics-port"].as<std::string>(), c.client.nodes);
  c.client.observer = with_connection_log(vm, metrics ? metrics->observer : nullptr);

  wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    std::cerr << "redlock: cannot wait for COMMAND: " << std::strerror(errno) << "\n";
    return ex_unavailable;
  }
  std::atomic<int> lost{0};
  a.renew = true;
  a.on_lost = [&lost](redlock::lost_reason r) {
    lost = static_cast<int>(r);
    wake();
  };
  redlock::client client(c.client);
  auto l = elect ? campaign(client, c, a) : acquire_or_explain(client, c, a, vm);
  if (!l) return ex_tempfail;
  // A leader steps down by resigning, which tells the observers at once.
  auto let_go = [&] { elect ? client.resign(*l) : client.release(*l); };

  for (int sig : forwarded_signals) handle(sig, on_signal);
  handle(SIGCHLD, on_child_ended, SA_NOCLDSTOP);
  pid_t child = -1;
  // From the main thread, which lasts until COMMAND has been reaped: the
  // parent-death signal that ties COMMAND to us follows this thread.
  if (int rc = spawn_command(command, command_environment(c.name, *l), forwarded_signals, child)) {
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
    if (auto s = ended(child)) {
      status = *s;
      break;
    }
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
    await_wake(std::nullopt);
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
