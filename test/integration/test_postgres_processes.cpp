// SPDX-License-Identifier: Apache-2.0
// Two real lock holders as processes (integration_postgres_client) writing
// to PostgreSQL: A takes the lock and stops itself (SIGSTOP) before its
// transaction; its lease ends; B takes the lock and runs its sections; A is
// resumed and runs its transaction with its old token. The checker reads
// the tables, not what the clients say: the counter equals the sections
// that committed (no lost update), and the journal's tokens never go down
// in commit order (no stale write). Unfenced, A's late transaction lands
// after B's and the checker must see it; fenced, it is refused and nothing
// of it is committed.
#include <boost/test/unit_test.hpp>

#include "postgres_fixture.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>

extern char** environ;

using namespace std::chrono_literals;
using redlock::testing::masters;
using redlock::testing::postgres_server;

namespace {

// A child process with its standard output on a pipe.
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
  long long counter = 0;
  std::size_t sections_ok = 0;
  std::vector<std::vector<std::string>> journal;  // writer, section, token; in commit order
  std::string a, b;                               // what the clients printed
  bool tokens_never_go_down = true;
};

// A stops before the transaction of its 2nd section for ttl + 400 ms while
// B runs its 4 sections.
outcome paused_holder(bool fenced) {
  masters m(3);
  auto db = postgres_server().create_database(fenced ? "paused_fenced" : "paused_unfenced");
  postgres_server().query("CREATE TABLE counter (id int PRIMARY KEY, v bigint NOT NULL);"
                          "INSERT INTO counter VALUES (1, 0);"
                          // id: commit order here (one writer at a time; A's late one comes last)
                          "CREATE TABLE journal (id bigserial PRIMARY KEY, writer text, section int, token bigint)",
                          db);
  std::string uris;
  for (auto& u : m.uris()) uris += (uris.empty() ? "" : ",") + u;
  const int ttl_ms = 400;
  auto argv = [&](const std::string& writer, int stop_before) {
    std::vector<std::string> a{REDLOCK_POSTGRES_CLIENT, "--masters", uris, "--conninfo", postgres_server().conninfo(db),
                               "--lock", "counted", "--writer", writer, "--sections", "4", "--ttl",
                               std::to_string(ttl_ms)};
    if (!fenced) a.push_back("--unfenced");
    if (stop_before >= 0) a.insert(a.end(), {"--stop-before", std::to_string(stop_before)});
    return a;
  };
  outcome r;
  child a(argv("A", 1));
  BOOST_REQUIRE_MESSAGE(a.wait_stopped(), "client A did not stop before its transaction");
  std::this_thread::sleep_for(std::chrono::milliseconds(ttl_ms + 400));  // A's lease is long over
  child b(argv("B", -1));
  r.b = b.finish();
  ::kill(a.pid, SIGCONT);
  r.a = a.finish();
  r.counter = std::stoll(postgres_server().scalar("SELECT v FROM counter WHERE id = 1", db));
  r.journal = postgres_server().query("SELECT writer, section, token FROM journal ORDER BY id", db);
  for (std::size_t i = 1; i < r.journal.size(); ++i)
    if (std::stoll(r.journal[i][2]) < std::stoll(r.journal[i - 1][2])) r.tokens_never_go_down = false;
  r.sections_ok = count(r.a, " ok ") + count(r.b, " ok ");
  std::cout << (fenced ? "fenced" : "unfenced") << ": A stopped before its transaction for " << ttl_ms + 400
            << " ms; sections ok " << r.sections_ok << ", counter " << r.counter << ", journal rows "
            << r.journal.size() << "\n  A: " << r.a << "  B: " << r.b << std::flush;
  return r;
}

bool journal_has(const outcome& r, const std::string& writer, const std::string& section) {
  for (auto& row : r.journal)
    if (row[0] == writer && row[1] == section) return true;
  return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(unfenced_a_paused_holders_late_transaction_lands_and_the_checker_sees_it) {
  auto r = paused_holder(false);
  BOOST_TEST(journal_has(r, "A", "1"), "A's late transaction did not commit: the scenario did not happen");
  BOOST_TEST(!r.tokens_never_go_down, "no stale write detected in the journal");
}

BOOST_AUTO_TEST_CASE(fenced_a_paused_holders_late_transaction_is_refused_and_nothing_of_it_commits) {
  auto r = paused_holder(true);
  BOOST_TEST(count(r.a, "section 1 fail stale_token") == 1u, "A's late transaction was not refused");
  BOOST_TEST(!journal_has(r, "A", "1"), "something of A's refused transaction was committed");
  BOOST_TEST(r.tokens_never_go_down, "a stale write landed");
  BOOST_TEST(r.sections_ok == 7u);  // all but the paused one
  BOOST_TEST(r.counter == static_cast<long long>(r.sections_ok), "lost update");
  BOOST_TEST(r.journal.size() == r.sections_ok);
}
