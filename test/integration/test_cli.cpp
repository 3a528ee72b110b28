// SPDX-License-Identifier: Apache-2.0
#define BOOST_TEST_MODULE integration_cli
#include <boost/test/unit_test.hpp>

#include "masters.hpp"

#include <redlock/redlock.hpp>

#include <boost/json.hpp>

#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>

using namespace std::chrono_literals;
using redlock::testing::masters;

namespace {

struct result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the CLI through sh with REDLOCK_NODES set; captures both streams.
result cli(const std::string& nodes, const std::string& args) {
  static int n = 0;
  auto base = "/tmp/redlock-cli-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
  auto cmd = "REDLOCK_NODES=" + quote(nodes) + " " + REDLOCK_CLI_PATH + " " + args + " >" + base + ".out 2>" + base +
             ".err </dev/null";
  int status = std::system(cmd.c_str());
  result r{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(base + ".out"),
           slurp(base + ".err")};
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

std::string nodes_of(masters& m) {
  std::string s;
  for (auto& u : m.uris()) s += (s.empty() ? "" : ",") + u;
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(cli_run_passes_env_and_exit_status) {
  masters m(3);
  auto nodes = nodes_of(m);
  auto file = "/tmp/redlock-cli-env-" + std::to_string(::getpid());
  auto r = cli(nodes, "run --name job --ttl 5s --fenced -- sh -c 'echo \"$REDLOCK_NAME $REDLOCK_FENCE "
                      "$REDLOCK_VALIDITY_MS\" > " + file + "; exit 7'");
  BOOST_TEST(r.code == 7, r.err);
  std::istringstream env(slurp(file));
  std::string name;
  long fence = 0, validity = 0;
  env >> name >> fence >> validity;
  BOOST_TEST(name == "job");
  BOOST_TEST(fence >= 1);
  BOOST_TEST(validity > 4000);
  BOOST_TEST(validity <= 5000);
  std::remove(file.c_str());
  BOOST_TEST(m.holding("job") == 0u);  // released after the command
}

BOOST_AUTO_TEST_CASE(cli_run_keeps_a_1s_lease_across_a_3s_command) {
  masters m(3);
  auto r = cli(nodes_of(m), "run --name long --ttl 1s -- sleep 3");
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(m.holding("long") == 0u);
}

BOOST_AUTO_TEST_CASE(cli_run_exit_75_when_the_lock_is_held) {
  masters m(3);
  redlock::client holder(m.options());
  auto l = holder.acquire("busy", {.ttl = 10000ms});
  auto t0 = std::chrono::steady_clock::now();
  auto r = cli(nodes_of(m), "run --name busy --wait 300ms -- true");
  BOOST_TEST(r.code == 75);
  BOOST_TEST(((std::chrono::steady_clock::now() - t0) >= 300ms));
  BOOST_TEST(r.err.find("not acquired") != std::string::npos, r.err);
  holder.release(l);
}

BOOST_AUTO_TEST_CASE(cli_run_exit_70_when_the_lease_is_lost) {
  masters m(3);
  auto nodes = nodes_of(m);
  result r;
  std::thread runner([&] { r = cli(nodes, "run --name fragile --ttl 600ms --grace 300ms -- sleep 30"); });
  std::this_thread::sleep_for(400ms);
  for (std::size_t i = 0; i < 3; ++i) m[i].pause();
  runner.join();  // bounded: the lease ends ~600 ms later, the command gets SIGTERM
  for (std::size_t i = 0; i < 3; ++i) m[i].resume();
  BOOST_TEST(r.code == 70, r.err);
  BOOST_TEST(r.err.find("lost") != std::string::npos, r.err);
}

BOOST_AUTO_TEST_CASE(cli_bad_input_exits_64_with_one_line) {
  masters m(1);
  auto nodes = nodes_of(m);
  for (auto args : {"run --name x --ttl 10zz -- true", "run --name '' -- true", "run --name x", "acquire",
                    "bogus", "acquire --name x --ttl 0", "run --name x --kind queue -- true",
                    "acquire --name x --nodes not-a-uri"}) {
    BOOST_TEST_CONTEXT(args) {
      auto r = cli(nodes, args);
      BOOST_TEST(r.code == 64);
      BOOST_TEST(r.err.rfind("redlock: ", 0) == 0u, r.err);
      BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1, r.err);
    }
  }
  auto r = cli("", "acquire --name x");
  BOOST_TEST(r.code == 64);
  BOOST_TEST(r.err.find("REDLOCK_NODES") != std::string::npos);
  BOOST_TEST(m[0].command({"DBSIZE"}) == "0");
}

BOOST_AUTO_TEST_CASE(cli_acquire_extend_status_release_for_shell_scripts) {
  masters m(3);
  auto nodes = nodes_of(m);
  auto a = cli(nodes, "acquire --name shell --ttl 5s --fenced --json");
  BOOST_REQUIRE(a.code == 0);
  auto j = boost::json::parse(a.out).as_object();
  std::string token(j.at("token").as_string());
  BOOST_TEST(j.at("fence").as_int64() >= 1);
  BOOST_TEST(cli(nodes, "acquire --name shell").code == 75);

  auto e = cli(nodes, "extend --name shell --ttl 30s --json --token " + token);
  BOOST_TEST(e.code == 0, e.err);
  BOOST_TEST(std::stol(m[0].command({"PTTL", "shell"})) > 20000);

  auto s = cli(nodes, "status --name shell --json");
  BOOST_TEST(s.code == 0);
  auto st = boost::json::parse(s.out).as_object();
  for (auto& n : st.at("nodes").as_array()) {
    BOOST_TEST(std::string(n.at("holder").as_string()) == token);
    BOOST_TEST(n.at("pttl_ms").as_int64() > 20000);
  }
  BOOST_TEST(cli(nodes, "release --name shell --token not-the-token").code == 75);
  BOOST_TEST(m.holding("shell") == 3u);
  BOOST_TEST(cli(nodes, "release --name shell --token " + token).code == 0);
  BOOST_TEST(m.holding("shell") == 0u);
}

// Issue 13, item 3: a lock taken by `redlock acquire` in one process is
// extended and released by token in others, whatever its kind (the
// reentrant and fair kinds' release used to refuse an adopted hold).
BOOST_AUTO_TEST_CASE(cli_release_by_token_frees_every_kind) {
  masters m(3);
  auto nodes = nodes_of(m);
  for (std::string kind : {"mutex", "reentrant", "fair"}) {
    auto name = "by-token-" + kind;
    auto a = cli(nodes, "acquire --name " + name + " --kind " + kind + " --ttl 5s --json");
    BOOST_REQUIRE_MESSAGE(a.code == 0, kind << ": " << a.err);
    std::string token(boost::json::parse(a.out).as_object().at("token").as_string());
    auto e = cli(nodes, "extend --name " + name + " --ttl 30s --token " + token);
    BOOST_TEST(e.code == 0, kind << ": " << e.err);
    BOOST_TEST(std::stol(m[0].command({"PTTL", name})) > 20000, kind);
    auto r = cli(nodes, "release --name " + name + " --token " + token);
    BOOST_TEST(r.code == 0, kind << ": " << r.err);
    BOOST_TEST(redlock::testing::eventually([&] { return m.holding(name) == 0u; }), kind);
  }
}
