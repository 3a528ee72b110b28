// SPDX-License-Identifier: Apache-2.0
// A checker that does not trust the library: lock clients run as separate
// processes (redlock_fault_rmw_client) doing read-modify-write sections on a
// counter in a storage redis; the final value, read straight from storage,
// must equal the number of sections that reported success (no lost update).
// The first client stops itself with SIGSTOP between its read and its write
// (the whole process: the library's threads too) for longer than its lease;
// the second runs its sections meanwhile; then the first is resumed.
// Unfenced, the resumed write loses the second client's updates and the
// checker must say so; fenced (fenced_store), the late write is refused and
// the count holds.
#define BOOST_TEST_MODULE fault_independent
#include <boost/test/unit_test.hpp>

#include "cluster.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

using namespace std::chrono_literals;
using namespace redlock::fault;

namespace {

// A child process with its stdout on a pipe.
struct child {
  pid_t pid = -1;
  int out = -1;

  explicit child(const std::vector<std::string>& argv) {
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    out = fds[0];
    BOOST_REQUIRE_MESSAGE(rc == 0, "cannot start " << argv[0]);
  }
  ~child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out >= 0) ::close(out);
  }
  /// Waits until the process stops itself (true) or exits (false).
  bool wait_stopped() {
    int status = 0;
    if (::waitpid(pid, &status, WUNTRACED) != pid) return false;
    if (WIFSTOPPED(status)) return true;
    pid = -1;
    return false;
  }
  /// Waits for the exit; returns everything it printed.
  std::string finish() {
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(out, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "client exited with status " << status);
    return text;
  }
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct outcome {
  long long final_value = 0;
  std::size_t sections_ok = 0;
  bool stopped = false;
  std::string victim, other;
};

// Client A (victim) and B, each `sections` sections; A stops itself after
// the read of its 2nd section and stays stopped for ttl + 400 ms while B runs.
outcome paused_reader(bool fenced) {
  cluster_options co;
  co.masters = 3;
  co.aof = false;
  co.proxies = false;
  cluster c(co);
  std::string masters;
  for (auto& u : c.uris()) masters += (masters.empty() ? "" : ",") + u;
  const int ttl_ms = 400;
  auto argv = [&](int stop_after_read) {
    std::vector<std::string> a{REDLOCK_FAULT_RMW_CLIENT, "--masters", masters, "--storage-port",
                               std::to_string(c.storage().port()), "--lock", "counted", "--counter", "counter",
                               "--sections", "4", "--ttl", std::to_string(ttl_ms)};
    if (fenced) a.push_back("--fenced");
    if (stop_after_read >= 0) a.insert(a.end(), {"--stop-after-read", std::to_string(stop_after_read)});
    return a;
  };
  outcome r;
  child a(argv(1));
  r.stopped = a.wait_stopped();
  BOOST_REQUIRE_MESSAGE(r.stopped, "client A did not stop between its read and its write");
  std::this_thread::sleep_for(std::chrono::milliseconds(ttl_ms + 400));  // A's lease is long over
  child b(argv(-1));
  r.other = b.finish();
  ::kill(a.pid, SIGCONT);
  r.victim = a.finish();
  auto v = c.storage().command({"GET", "counter"});
  r.final_value = v == "(nil)" ? 0 : std::stoll(v);
  r.sections_ok = count(r.victim, " ok\n") + count(r.other, " ok\n");
  std::cout << (fenced ? "fenced" : "unfenced") << ": A stopped between read and write for " << ttl_ms + 400
            << " ms; sections reported ok " << r.sections_ok << ", final counter " << r.final_value << "\n  A: "
            << r.victim << "  B: " << r.other << std::flush;
  return r;
}

}  // namespace

BOOST_AUTO_TEST_CASE(unfenced_paused_process_loses_an_update_and_the_checker_sees_it) {
  auto r = paused_reader(false);
  BOOST_TEST(r.stopped);
  // The checker: final value == sections that succeeded. Here it must fail.
  BOOST_TEST(r.final_value < static_cast<long long>(r.sections_ok),
             "no lost update detected: final " << r.final_value << ", " << r.sections_ok << " sections ok");
}

BOOST_AUTO_TEST_CASE(fenced_paused_process_cannot_lose_an_update) {
  auto r = paused_reader(true);
  BOOST_TEST(r.stopped);
  BOOST_TEST(r.final_value == static_cast<long long>(r.sections_ok), "lost update under fencing");
  BOOST_TEST(count(r.victim, "section 1 fail") == 1u, "the paused section's late write was not refused");
  BOOST_TEST(r.sections_ok == 7u);  // all but the paused one
}
