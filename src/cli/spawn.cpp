// SPDX-License-Identifier: Apache-2.0
// `redlock run`'s child: its environment, and a start that cannot outlive
// redlock (spawn.hpp).
#include "spawn.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace redlock::cli {

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

namespace {

// Where execvp would look for `file`, in its order: `file` itself when it
// names a path, else each PATH directory (confstr's default without PATH;
// an empty entry is the current directory).
std::vector<std::string> exec_candidates(const std::string& file) {
  if (file.empty()) return {};
  if (file.find('/') != std::string::npos) return {file};
  std::string path;
  if (const char* p = std::getenv("PATH")) {
    path = p;
  } else {
    path.resize(::confstr(_CS_PATH, nullptr, 0));
    ::confstr(_CS_PATH, path.data(), path.size());
    path.resize(std::strlen(path.c_str()));
  }
  std::vector<std::string> candidates;
  for (std::size_t at = 0;;) {
    auto end = path.find(':', at);
    auto dir = path.substr(at, end == std::string::npos ? std::string::npos : end - at);
    candidates.push_back(dir.empty() ? file : dir + "/" + file);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return candidates;
}

// In the forked child: tries each candidate as execvp does (an EACCES is
// remembered while the search goes on; an error other than "not there"
// stops it). Returns the errno to report only if none could be executed.
// Async-signal-safe: execve and errno only.
int exec_first(char* const* candidates, char* const* argv, char* const* envp) {
  bool denied = false;
  int err = ENOENT;
  for (; *candidates; ++candidates) {
    ::execve(*candidates, argv, envp);
    err = errno;
    switch (err) {
      case EACCES: denied = true; [[fallthrough]];
      case ENOENT: case ENOTDIR: case ESTALE: case ENODEV: case ETIMEDOUT: continue;
      default: return err;
    }
  }
  return denied ? EACCES : err;
}

}  // namespace

// Starts `command` so that it cannot outlive redlock, which holds its lease:
// the child asks for SIGKILL when its parent dies (PR_SET_PDEATHSIG) before
// it execs, so a SIGKILLed redlock (the OOM killer) takes the command with
// it, and no second holder's command runs beside it once the lease ends.
// posix_spawn cannot ask for that, hence fork. The client's I/O thread runs
// meanwhile, so the child may only make async-signal-safe calls before exec
// (no malloc, no setenv, no execvp's PATH search): everything is prepared
// here first. The command gets the default disposition of the signals we
// handle and an empty signal mask. Returns 0 or an errno (from fork, or
// from exec, carried back through a close-on-exec pipe).
//
// The signal follows the *thread* that forked: the calling thread must last
// as long as the command runs. run_holding calls this from the main thread,
// which lives until the command has been reaped.
int spawn_command(const std::vector<std::string>& command, std::vector<std::string> env,
                  std::span<const int> default_signals, pid_t& child) {
  auto paths = exec_candidates(command[0]);
  std::vector<std::string> args = command;
  std::vector<char*> candidates, argv, envp;
  for (auto& p : paths) candidates.push_back(p.data());
  candidates.push_back(nullptr);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return errno;
  // Every signal blocked across the fork: no handler of ours may run in the
  // child before it has reset them.
  sigset_t all, none, before;
  sigfillset(&all);
  sigemptyset(&none);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(report[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // redlock died before the prctl: nothing would kill the command later.
    if (::getppid() != parent) ::_exit(127);
    struct sigaction by_default {};
    by_default.sa_handler = SIG_DFL;
    for (int sig : default_signals) ::sigaction(sig, &by_default, nullptr);
    ::sigaction(SIGCHLD, &by_default, nullptr);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int err = exec_first(candidates.data(), argv.data(), envp.data());
    ssize_t ignored = ::write(report[1], &err, sizeof err);
    (void)ignored;
    ::_exit(127);
  }
  int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    return fork_error;
  }
  // Nothing to read once exec closed the pipe: the command runs.
  int exec_error = 0;
  ssize_t got;
  while ((got = ::read(report[0], &exec_error, sizeof exec_error)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (got == sizeof exec_error) {
    ::waitpid(pid, nullptr, 0);
    return exec_error;
  }
  child = pid;
  return 0;
}

}  // namespace redlock::cli
