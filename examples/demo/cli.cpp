// SPDX-License-Identifier: Apache-2.0
// Part 3: the `redlock` command against the same masters, run as child
// processes exactly as a shell would: renewal keeping a short lease alive,
// exit 75 when the lock is busy, `status`, and (local masters only) exit 70
// when the lease is lost because a majority of masters stopped answering;
// and `redlock doctor`'s audit of the masters.
#include "demo.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <optional>
#include <poll.h>
#include <sstream>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

extern char** environ;

namespace demo {
namespace {

using steady = std::chrono::steady_clock;

// One `redlock` process. It gets its own process group, so that the command
// it runs is killed with it; stdout and stderr come back through one pipe.
// The destructor kills the group and reaps it if it is still running, on
// every path out of the demo.
class child {
 public:
  child(const std::string& path, const std::vector<std::string>& args, const std::vector<std::string>& env) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    fd_ = fds[0];
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<std::string> argv_store = {path};
    argv_store.insert(argv_store.end(), args.begin(), args.end());
    std::vector<std::string> env_store = env;
    std::vector<char*> argv, envp;
    for (auto& a : argv_store) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_store) envp.push_back(e.data());
    envp.push_back(nullptr);
    int rc = ::posix_spawn(&pid_, path.c_str(), &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(fds[1]);
    if (rc != 0) {
      ::close(fd_);
      throw std::runtime_error("cannot run " + path + ": " + std::strerror(rc));
    }
  }
  ~child() {
    if (!status_) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(fd_);
  }
  child(const child&) = delete;
  child& operator=(const child&) = delete;

  // The next line of output, or nothing when none came before the timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    auto until = steady::now() + timeout;
    for (;;) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        auto line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      if (eof_ || steady::now() >= until) return std::nullopt;
      pump();
    }
  }

  // The exit status (128 + N when killed by signal N), or nothing when the
  // process is still running at the timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    auto until = steady::now() + timeout;
    while (!status_) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        break;
      }
      if (steady::now() >= until) return std::nullopt;
      pump();  // also keeps the pipe from filling up
    }
    // The rest of the output; bounded in case something still holds the pipe open.
    auto drain_until = steady::now() + 500ms;
    while (!eof_ && steady::now() < drain_until) pump();
    return status_;
  }

  // Output not yet returned by read_line.
  std::string take_output() { return std::exchange(buffer_, {}); }

 private:
  // Reads what arrives within 10 ms. Throws interrupted on Ctrl-C.
  void pump() {
    if (interrupt_requested()) throw interrupted();
    pollfd p{fd_, POLLIN, 0};
    if (eof_ || ::poll(&p, 1, 10) <= 0) {
      if (eof_) sleep_for(10ms);
      return;
    }
    char chunk[4096];
    auto n = ::read(fd_, chunk, sizeof chunk);
    if (n > 0)
      buffer_.append(chunk, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR)
      eof_ = true;
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
  std::optional<int> status_;
};

// A word as a shell would need it written to mean the same thing.
std::string shell_quote(const std::string& word) {
  const char* plain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,@%+";
  if (!word.empty() && word.find_first_not_of(plain) == std::string::npos) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Starts `redlock ARGS...` with REDLOCK_NODES set, after printing the command
// line the user could type to do the same.
class cli_runner {
 public:
  cli_runner(std::string path, const std::vector<std::string>& nodes)
      : path_(std::move(path)), quorum_(nodes.size() / 2 + 1) {
    for (auto& n : nodes) nodes_ += (nodes_.empty() ? "" : ",") + n;
    // The caller's own REDLOCK_* settings (REDLOCK_TOKEN, ...) stay out of the demo's commands.
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "REDLOCK_", 8) != 0) env_.emplace_back(*e);
    env_.push_back("REDLOCK_NODES=" + nodes_);
  }

  std::size_t quorum() const { return quorum_; }

  std::unique_ptr<child> start(const std::vector<std::string>& args, bool background = false) {
    std::cout << "$ REDLOCK_NODES=" << shell_quote(nodes_) << " redlock";
    for (auto& a : args) std::cout << " " << shell_quote(a);
    std::cout << (background ? " &" : "") << std::endl;
    return std::make_unique<child>(path_, args, env_);
  }

  struct result {
    int status;
    std::string output;
  };
  // Runs to completion and prints the output.
  result run(const std::vector<std::string>& args) {
    auto c = start(args);
    auto status = c->wait(30s);
    auto output = c->take_output();
    std::cout << output;
    if (!status) throw std::runtime_error("redlock did not finish within 30 s");
    return {*status, output};
  }

 private:
  std::string path_, nodes_;
  std::size_t quorum_;
  std::vector<std::string> env_;
};

std::string exit_text(std::optional<int> status) {
  return status ? "exit " + std::to_string(*status) : std::string("still running after the timeout (killed)");
}

void renewal_busy_and_status(cli_runner& cli, report& r) {
  const std::string job = "redlock-demo:job";
  std::cout << "\n`redlock run` holds the lock while COMMAND runs, renewing the lease every TTL/3, and passes\n"
               "the lock to COMMAND in its environment. Here a 1 s TTL covers a 3 s command:\n";
  auto t0 = steady::now();
  auto holder = cli.start({"run", "--name", job, "--ttl", "1s", "--fenced", "--", "sh", "-c",
                           "echo \"child: $REDLOCK_NAME fence=$REDLOCK_FENCE validity=${REDLOCK_VALIDITY_MS}ms\"; "
                           "sleep 3"},
                          true);
  // The command's first line: the lock is held from here on.
  auto first = holder->read_line(10s);
  std::cout << (first ? *first : std::string("(no output from the command)")) << "\n";

  std::cout << "\nWhile it runs, another `redlock run` finds the lock busy and exits 75 (EX_TEMPFAIL):\n";
  int busy = cli.run({"run", "--name", job, "--wait", "0s", "--", "true"}).status;
  r.check(busy == 75, "redlock run --wait 0s while the lock is held: exit " + std::to_string(busy) + " (expected 75)");

  std::cout << "\n`redlock status` shows each master's view (holder token, remaining TTL, fence counter):\n";
  auto status = cli.run({"status", "--name", job});
  std::size_t holding = 0;
  for (auto at = status.output.find("held by"); at != std::string::npos; at = status.output.find("held by", at + 1))
    ++holding;
  r.check(status.status == 0 && holding >= cli.quorum(),
          "redlock status: exit " + std::to_string(status.status) + ", held on " + std::to_string(holding) +
              " masters (expected exit 0, held on at least " + std::to_string(cli.quorum()) + ")");

  std::cout << "\nWaiting for the 3 s command to finish under its renewed 1 s lease...\n";
  auto done = holder->wait(15s);
  std::cout << holder->take_output();
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
  // A lease that had lapsed would have ended in exit 70 after about 1 s.
  r.check(done == 0 && took >= 3s, "redlock run --ttl 1s of a 3 s command: " + exit_text(done) + " after " +
                                       std::to_string(took.count()) +
                                       " ms (expected exit 0 after >= 3000 ms: the lease was renewed)");
}

void lost_lease(setup& s, cli_runner& cli, report& r) {
  const std::string name = "redlock-demo:lost";
  std::cout << "\nWhen renewal cannot reach a majority, the lease ends: `redlock run` sends COMMAND SIGTERM\n"
               "(SIGKILL after --grace) and exits 70. Here 3 of the 5 masters get SIGSTOP while it runs:\n";
  auto holder = cli.start({"run", "--name", name, "--ttl", "1s", "--grace", "1s", "--", "sleep", "30"}, true);
  // Held once a majority of masters has the key.
  auto held = [&] {
    std::size_t n = 0;
    for (auto& m : s.local)
      if (m->command({"EXISTS", name}) == "1") ++n;
    return n > s.local.size() / 2;
  };
  for (auto until = steady::now() + 10s; !held() && steady::now() < until;) sleep_for(20ms);
  if (!held()) {
    std::cout << holder->take_output();
    r.check(false, "redlock run with the lease lost: the lock was never held");
    return;
  }

  // SIGCONT for the paused masters on every path out of here.
  struct resume_on_exit {
    setup& s;
    ~resume_on_exit() {
      for (auto& m : s.local) m->resume();
    }
  } resume{s};
  auto t0 = steady::now();
  for (int i = 0; i < 3; ++i) s.local[i]->pause();
  std::cout << "(demo: SIGSTOP masters 0, 1 and 2)" << std::endl;
  auto status = holder->wait(15s);
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
  std::cout << holder->take_output();
  for (int i = 0; i < 3; ++i) s.local[i]->resume();
  std::cout << "(demo: SIGCONT masters 0, 1 and 2)\n";
  r.check(status == 70, "redlock run with the lease lost: " + exit_text(status) + " " + std::to_string(took.count()) +
                            " ms after the masters stopped (expected 70)");
}

// `redlock doctor` on the same masters: what it finds is printed, not judged
// (the user's own masters may well have warnings); the demo checks that it
// read every master and exited with one of its statuses.
void doctor(cli_runner& cli, report& r, std::size_t masters) {
  std::cout << "\n`redlock doctor` audits the masters themselves: independence (no replica, Sentinel or Cluster,\n"
               "no server listed twice, at least 3), persistence, eviction, clocks, round trips, ACL rights and\n"
               "the scripts. One line per problem; exit 0 when it finds none, 1 for warnings, 2 for errors.\n"
               "With --verbose it first says what it read from each master:\n";
  auto result = cli.run({"doctor", "--verbose"});
  std::size_t read = 0, problems = 0;
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("info ", 0) == 0 && line.find(": unreachable") == std::string::npos) ++read;
    if (line.rfind("error ", 0) == 0 || line.rfind("warning ", 0) == 0) ++problems;
  }
  r.check(result.status >= 0 && result.status <= 2 && read == masters,
          "redlock doctor: exit " + std::to_string(result.status) + ", read " + std::to_string(read) + " of " +
              std::to_string(masters) + " masters, " + std::to_string(problems) +
              " problem(s) reported (expected exit 0, 1 or 2 with every master read)");
}

}  // namespace

void command_line(setup& s, report& r, const std::string& cli_path) {
  heading("3. The redlock command: locks for shell scripts, cron jobs and systemd units");
  if (cli_path.empty() || ::access(cli_path.c_str(), X_OK) != 0) {
    std::cout << "The redlock command was not built (CMake option REDLOCK_BUILD_CLI, target redlock-cli)"
              << (cli_path.empty() ? "" : " or is not executable at " + cli_path)
              << "; pass --cli PATH to use another copy.\n";
    r.skip("the redlock command: not found");
    return;
  }
  std::cout << "redlock is " << cli_path << "; it takes the masters from --nodes or REDLOCK_NODES.\n";
  cli_runner cli(cli_path, s.nodes);
  renewal_busy_and_status(cli, r);
  if (!s.faults()) {
    std::cout << "\n(your masters: the lost-lease part, which stops 3 masters with SIGSTOP, is skipped)\n";
    r.skip("redlock run with the lease lost (exit 70): needs the demo's own masters");
  } else {
    lost_lease(s, cli, r);
  }
  doctor(cli, r, s.nodes.size());
}

}  // namespace demo
