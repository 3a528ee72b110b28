// SPDX-License-Identifier: Apache-2.0
// redlock::diagnose and `redlock doctor` against real masters: configured
// right (nothing found), and each kind of wrong, each found and named.
#define BOOST_TEST_MODULE integration_doctor
#include <boost/test/unit_test.hpp>

#include "masters.hpp"

#include <proxy/fault_proxy.hpp>

#include <redlock/doctor.hpp>

#ifdef REDLOCK_CLI_PATH
#include <boost/json.hpp>
#endif

#include <hiredis/hiredis.h>

#include <csignal>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace std::chrono_literals;
using redlock::doctor_report;
using redlock::severity;
using redlock::testing::masters;
using redlock::testing::redis_options;
using redlock::testing::redis_process;

namespace redlock {
// For Boost.Test's messages.
std::ostream& operator<<(std::ostream& os, severity s) { return os << (s == severity::error ? "error" : "warning"); }
}  // namespace redlock

namespace {

// Masters as they should be: AOF with appendfsync always, noeviction.
redis_options durable() {
  redis_options o;
  o.aof = true;
  return o;
}

// A generous node timeout: the loaded test machine must not trip the
// round-trip checks when nothing else is wrong.
redlock::client_options options_for(const std::vector<std::string>& uris) {
  redlock::client_options o;
  o.nodes = uris;
  o.node_timeout = 500ms;
  return o;
}

doctor_report diagnose(const std::vector<std::string>& uris, redlock::doctor_options d = {}) {
  d.round_trips = 10;
  return redlock::diagnose(options_for(uris), d);
}

std::string dump(const doctor_report& r) {
  std::string s;
  for (auto& f : r.findings)
    s += std::string(f.level == severity::error ? "error " : "warning ") + f.check + " " + f.node + ": " + f.message +
         "\n";
  return s;
}

// The findings of one check (on one node when `node` is given).
std::vector<redlock::finding> found(const doctor_report& r, const std::string& check, const std::string& node = {}) {
  std::vector<redlock::finding> out;
  for (auto& f : r.findings)
    if (f.check == check && (node.empty() || f.node == node)) out.push_back(f);
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The findings other than `check`: a test of one wrong must not find others.
std::size_t others(const doctor_report& r, std::initializer_list<const char*> checks) {
  std::size_t n = 0;
  for (auto& f : r.findings) {
    bool expected = false;
    for (auto* c : checks) expected |= f.check == c;
    n += !expected;
  }
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(masters_configured_right_give_no_findings) {
  masters m(3, durable());
  auto r = diagnose(m.uris());
  BOOST_TEST(r.findings.empty(), dump(r));
  BOOST_REQUIRE_EQUAL(r.nodes.size(), 3u);
  for (auto& n : r.nodes) {
    BOOST_TEST(n.reachable);
    BOOST_TEST(n.role == "master");
    BOOST_TEST(n.mode == "standalone");
    BOOST_TEST(n.appendfsync == "always");
    BOOST_TEST(n.maxmemory_policy == "noeviction");
    BOOST_TEST(n.rtt_p99.count() > 0);
    BOOST_TEST(n.clock_offset.has_value());
  }
}

BOOST_AUTO_TEST_CASE(fewer_than_three_masters) {
  masters m(2, durable());
  auto r = diagnose(m.uris());
  BOOST_TEST(found(r, "node_count").size() == 1u, dump(r));
  BOOST_TEST(found(r, "node_count")[0].level == severity::error);
  BOOST_TEST(others(r, {"node_count"}) == 0u, dump(r));
}

BOOST_AUTO_TEST_CASE(an_unreachable_master) {
  masters m(3, durable());
  auto uris = m.uris();
  m[2].stop();
  auto r = diagnose(uris);
  auto f = found(r, "unreachable");
  BOOST_REQUIRE_EQUAL(f.size(), 1u);
  BOOST_TEST(f[0].node == uris[2]);
  BOOST_TEST(!r.nodes[2].reachable);
  BOOST_TEST(others(r, {"unreachable"}) == 0u, dump(r));
}

BOOST_AUTO_TEST_CASE(a_replica_and_a_master_with_replicas) {
  masters m(3, durable());
  m[1].command({"REPLICAOF", "127.0.0.1", std::to_string(m[0].port())});
  BOOST_REQUIRE(redlock::testing::eventually(
      [&] { return contains(m[0].command({"INFO", "replication"}), "connected_slaves:1"); }, 10s));
  auto r = diagnose(m.uris());
  BOOST_TEST(found(r, "replica", m.uris()[1]).size() == 1u, dump(r));
  BOOST_TEST(contains(found(r, "replica", m.uris()[1]).at(0).message, std::to_string(m[0].port())));
  BOOST_TEST(found(r, "has_replicas", m.uris()[0]).size() == 1u, dump(r));
  BOOST_TEST(others(r, {"replica", "has_replicas"}) == 0u, dump(r));
}

BOOST_AUTO_TEST_CASE(aof_off_and_appendfsync_everysec_are_warnings_naming_delayed_restarts) {
  masters m(3, durable());
  m[0].command({"CONFIG", "SET", "appendonly", "no"});
  m[1].command({"CONFIG", "SET", "appendfsync", "everysec"});
  auto r = diagnose(m.uris());
  auto off = found(r, "persistence", m.uris()[0]);
  auto everysec = found(r, "persistence", m.uris()[1]);
  BOOST_REQUIRE_EQUAL(off.size(), 1u);
  BOOST_REQUIRE_EQUAL(everysec.size(), 1u);
  BOOST_TEST(off[0].level == severity::warning);
  BOOST_TEST(contains(off[0].message, "appendonly no"));
  BOOST_TEST(contains(off[0].message, "delayed restart"));
  BOOST_TEST(contains(everysec[0].message, "everysec"));
  BOOST_TEST(contains(everysec[0].message, "delayed restart"));
  BOOST_TEST(others(r, {"persistence"}) == 0u, dump(r));
}

BOOST_AUTO_TEST_CASE(an_evicting_maxmemory_policy) {
  masters m(3, durable());
  m[2].command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
  m[1].command({"CONFIG", "SET", "maxmemory-policy", "volatile-ttl"});
  auto r = diagnose(m.uris());
  BOOST_TEST(found(r, "eviction", m.uris()[2]).size() == 1u, dump(r));
  BOOST_TEST(contains(found(r, "eviction", m.uris()[2]).at(0).message, "allkeys-lru"));
  BOOST_TEST(found(r, "eviction", m.uris()[1]).size() == 1u, dump(r));
  BOOST_TEST(others(r, {"eviction"}) == 0u, dump(r));
}

BOOST_AUTO_TEST_CASE(the_same_server_listed_twice) {
  masters m(3, durable());
  auto uris = m.uris();
  uris.push_back("redis://localhost:" + std::to_string(m[1].port()));
  auto r = diagnose(uris);
  auto same = found(r, "same_server");
  BOOST_REQUIRE_EQUAL(same.size(), 1u);
  BOOST_TEST(same[0].node == uris[3]);
  BOOST_TEST(contains(same[0].message, uris[1]));
  BOOST_TEST(others(r, {"same_server"}) == 0u, dump(r));
}

BOOST_AUTO_TEST_CASE(cluster_mode) {
  redis_options cluster = durable();
  cluster.extra_args = {"--cluster-enabled", "yes"};
  masters m(2, durable());
  redis_process c(cluster);
  auto uris = m.uris();
  uris.push_back(c.uri());
  auto r = diagnose(uris);
  BOOST_TEST(found(r, "mode", c.uri()).size() == 1u, dump(r));
  BOOST_TEST(contains(found(r, "mode", c.uri()).at(0).message, "Cluster"));
  BOOST_TEST(others(r, {"mode"}) == 0u, dump(r));
}

// A Sentinel needs a config file of its own: started here, not by redis_process.
class sentinel {
 public:
  explicit sentinel(std::uint16_t master_port) : port_(redlock::testing::free_port()) {
    char tmpl[] = "/tmp/redlock-sentinel-XXXXXX";
    BOOST_REQUIRE(::mkdtemp(tmpl));
    dir_ = tmpl;
    std::ofstream(dir_ / "sentinel.conf") << "port " << port_ << "\nbind 127.0.0.1\ndir " << dir_.string()
                                          << "\nsentinel monitor m 127.0.0.1 " << master_port << " 1\n";
    pid_ = ::fork();
    if (pid_ == 0) {
      auto conf = (dir_ / "sentinel.conf").string();
      auto log = (dir_ / "sentinel.log").string();
      ::execlp("redis-server", "redis-server", conf.c_str(), "--sentinel", "--logfile", log.c_str(), nullptr);
      std::_Exit(127);
    }
    BOOST_REQUIRE(redlock::testing::eventually(
        [&] {
          timeval tv{0, 200000};
          redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
          bool up = c && !c->err;
          if (c) redisFree(c);
          return up;
        },
        10s));
  }
  ~sentinel() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string uri() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  std::uint16_t port_;
  std::filesystem::path dir_;
  pid_t pid_ = -1;
};

BOOST_AUTO_TEST_CASE(a_sentinel_listed_as_a_master) {
  masters m(3, durable());
  sentinel s(m[0].port());
  auto uris = std::vector<std::string>{m.uris()[1], m.uris()[2], s.uri()};
  auto r = diagnose(uris);
  BOOST_TEST(found(r, "mode", s.uri()).size() == 1u, dump(r));
  BOOST_TEST(contains(found(r, "mode", s.uri()).at(0).message, "Sentinel"));
  BOOST_TEST(others(r, {"mode"}) == 0u, dump(r));
}

BOOST_AUTO_TEST_CASE(acl_user_whose_key_pattern_misses_the_companion_keys) {
  masters m(3, durable());
  // Allowed app:* only: the lock key app:x, but not {app:x}:fence and the others.
  m.on_all({"ACL", "SETUSER", "app", "on", ">pw", "~app:*", "&*", "+@all"});
  std::vector<std::string> uris;
  for (std::size_t i = 0; i < 3; ++i) uris.push_back("redis://app:pw@127.0.0.1:" + std::to_string(m[i].port()));
  auto client = options_for(uris);
  client.key_prefix = "app:";
  auto r = redlock::diagnose(client, {.round_trips = 5});
  auto acl = found(r, "acl");
  BOOST_REQUIRE_EQUAL(acl.size(), 3u);
  BOOST_TEST(acl[0].level == severity::error);
  BOOST_TEST(contains(acl[0].message, "user 'app'"), acl[0].message);
  BOOST_TEST(contains(acl[0].message, "{app:redlock-doctor}:fence"), acl[0].message);
  BOOST_TEST(!contains(acl[0].message, "'app:redlock-doctor' key"), acl[0].message);
  BOOST_TEST(others(r, {"acl"}) == 0u, dump(r));
}

BOOST_AUTO_TEST_CASE(acl_user_without_channels_or_scripts) {
  masters m(3, durable());
  // No channels (Redis 7's default for new users): releases cannot be published or heard.
  m.on_all({"ACL", "SETUSER", "nochan", "on", ">pw", "~*", "resetchannels", "+@all"});
  // No SCRIPT: the library's scripts cannot be loaded.
  m.on_all({"ACL", "SETUSER", "noscript", "on", ">pw", "~*", "&*", "+@all", "-script"});
  auto uris_for = [&](const std::string& user) {
    std::vector<std::string> uris;
    for (std::size_t i = 0; i < 3; ++i)
      uris.push_back("redis://" + user + ":pw@127.0.0.1:" + std::to_string(m[i].port()));
    return uris;
  };
  auto nochan = diagnose(uris_for("nochan"));
  BOOST_REQUIRE_EQUAL(found(nochan, "acl").size(), 3u);
  BOOST_TEST(contains(found(nochan, "acl")[0].message, "channel"), found(nochan, "acl")[0].message);
  BOOST_TEST(others(nochan, {"acl"}) == 0u, dump(nochan));

  auto noscript = diagnose(uris_for("noscript"));
  BOOST_REQUIRE_EQUAL(found(noscript, "scripts").size(), 3u);
  BOOST_TEST(contains(found(noscript, "scripts")[0].message, "mutex_acquire"));
  BOOST_REQUIRE_EQUAL(found(noscript, "acl").size(), 3u);
  BOOST_TEST(contains(found(noscript, "acl")[0].message, "script"));
  BOOST_TEST(others(noscript, {"acl", "scripts"}) == 0u, dump(noscript));
}

BOOST_AUTO_TEST_CASE(acl_rights_of_another_user_checked_by_an_admin) {
  masters m(3, durable());
  m.on_all({"ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-publish"});
  auto r = diagnose(m.uris(), {.acl_user = "app"});
  BOOST_REQUIRE_EQUAL(found(r, "acl").size(), 3u);
  BOOST_TEST(contains(found(r, "acl")[0].message, "publish"));
  BOOST_TEST(others(r, {"acl"}) == 0u, dump(r));
}

BOOST_AUTO_TEST_CASE(a_user_that_may_not_run_acl_dryrun_is_reported_unchecked) {
  masters m(3, durable());
  m.on_all({"ACL", "SETUSER", "plain", "on", ">pw", "~*", "&*", "+@all", "-acl"});
  std::vector<std::string> uris;
  for (std::size_t i = 0; i < 3; ++i) uris.push_back("redis://plain:pw@127.0.0.1:" + std::to_string(m[i].port()));
  auto r = diagnose(uris);
  auto unchecked = found(r, "unchecked");
  BOOST_REQUIRE_EQUAL(unchecked.size(), 3u);
  BOOST_TEST(unchecked[0].level == severity::warning);
  BOOST_TEST(contains(unchecked[0].message, "--acl-user plain"), unchecked[0].message);
  BOOST_TEST(others(r, {"unchecked"}) == 0u, dump(r));
}

BOOST_AUTO_TEST_CASE(round_trips_judged_against_the_node_timeout_and_ttl) {
  masters m(3, durable());
  // Every reply to the third master comes at least 40 ms late.
  redlock::fault::fault_proxy slow(m[2].port());
  slow.set_latency(redlock::fault::direction::server_to_client, 40ms);
  std::vector<std::string> uris{m.uris()[0], m.uris()[1], slow.uri()};
  auto client = options_for(uris);
  client.node_timeout = 30ms;
  auto r = redlock::diagnose(client, {.ttl = 250ms, .round_trips = 5});
  // Not below the node timeout: an error; more than a tenth of the TTL: a warning.
  std::size_t errors = 0, warnings = 0;
  for (auto& f : found(r, "round_trip", slow.uri())) (f.level == severity::error ? errors : warnings) += 1;
  BOOST_TEST(errors == 1u, dump(r));
  BOOST_TEST(warnings == 1u, dump(r));
  BOOST_TEST(r.nodes[2].rtt_p50 >= 40ms);
  // And the node timeout is more than a tenth of the TTL: said once, for the deployment.
  std::size_t deployment = 0;
  for (auto& f : r.findings) deployment += f.check == "round_trip" && f.node.empty();
  BOOST_TEST(deployment == 1u, dump(r));
}

BOOST_AUTO_TEST_CASE(bad_options_are_rejected_naming_the_problem) {
  BOOST_TEST(redlock::testing::code_of([] { redlock::diagnose({}); }) == redlock::errc::empty_node_list);
  masters m(1);
  BOOST_TEST(redlock::testing::code_of([&] { diagnose(m.uris(), {.ttl = 0ms}); }) == redlock::errc::bad_ttl);
  BOOST_TEST(redlock::testing::code_of([&] { diagnose(m.uris(), {.name = ""}); }) == redlock::errc::empty_name);
}

// ---- the `redlock doctor` command -------------------------------------------
#ifdef REDLOCK_CLI_PATH

namespace {

struct run_result {
  int status = -1;
  std::string out;
};

// `env`: "NAME=value ..." set for the command.
run_result doctor_cli(const std::vector<std::string>& uris, const std::string& args, const std::string& env = "") {
  std::string nodes;
  for (auto& u : uris) nodes += (nodes.empty() ? "" : ",") + u;
  auto out = "/tmp/redlock-doctor-test-" + std::to_string(::getpid()) + ".out";
  auto cmd = env + " " + std::string(REDLOCK_CLI_PATH) + " doctor --nodes " + nodes + " --node-timeout 500ms --round-trips 5 " +
             args + " >" + out + " 2>/dev/null </dev/null";
  int status = std::system(cmd.c_str());
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(out.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text.str()};
}

std::size_t lines(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

BOOST_AUTO_TEST_CASE(cli_exit_status_and_one_line_per_problem) {
  masters m(3, durable());
  auto ok = doctor_cli(m.uris(), "");
  BOOST_TEST(ok.status == 0, ok.out);
  BOOST_TEST(contains(ok.out, "no problems found on 3 masters"), ok.out);

  // Warnings only: exit 1, one line each.
  m[0].command({"CONFIG", "SET", "appendonly", "no"});
  m[1].command({"CONFIG", "SET", "appendfsync", "everysec"});
  auto warn = doctor_cli(m.uris(), "");
  BOOST_TEST(warn.status == 1, warn.out);
  BOOST_TEST(lines(warn.out) == 2u, warn.out);
  BOOST_TEST(contains(warn.out, "warning persistence " + m.uris()[0] + ": "), warn.out);

  // An error on top: exit 2.
  m[2].command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
  auto err = doctor_cli(m.uris(), "");
  BOOST_TEST(err.status == 2, err.out);
  BOOST_TEST(lines(err.out) == 3u, err.out);
  BOOST_TEST(contains(err.out, "error eviction " + m.uris()[2] + ": maxmemory-policy is allkeys-lru"), err.out);

  // --json: the same findings, and what was read from each master.
  auto js = doctor_cli(m.uris(), "--json");
  BOOST_TEST(js.status == 2);
  auto doc = boost::json::parse(js.out).as_object();
  BOOST_TEST(doc.at("errors").as_int64() == 1);
  BOOST_TEST(doc.at("warnings").as_int64() == 2);
  BOOST_TEST(doc.at("findings").as_array().size() == 3u);
  auto& node0 = doc.at("nodes").as_array().at(0).as_object();
  BOOST_TEST(node0.at("appendonly").as_bool() == false);
  BOOST_TEST(node0.at("role").as_string() == "master");
  BOOST_TEST(node0.at("rtt_p99_us").as_int64() > 0);

  // Bad usage: 64.
  BOOST_TEST(doctor_cli(m.uris(), "--ttl forever").status == 64);
}

BOOST_AUTO_TEST_CASE(cli_warns_of_a_password_on_the_command_line) {
  auto o = durable();
  o.extra_args = {"--requirepass", "s3cret"};
  masters m(3, o);
  std::vector<std::string> with_password;
  for (auto& u : m.uris()) with_password.push_back("redis://:s3cret@" + u.substr(std::string("redis://").size()));
  auto warned = doctor_cli(with_password, "");
  BOOST_TEST(warned.status == 1, warned.out);
  BOOST_TEST(lines(warned.out) == 3u, warned.out);
  for (auto& u : m.uris()) {
    auto shown = "redis://:***@" + u.substr(std::string("redis://").size());
    BOOST_TEST(contains(warned.out, "warning password_in_argv " + shown +
                                        ": the URI given with --nodes carries a password, which every user of this "
                                        "machine can read with `ps`: give it with --password-file FILE or "
                                        "$REDLOCK_PASSWORD instead"),
               warned.out);
  }
  BOOST_TEST(!contains(warned.out, "s3cret"), warned.out);
  // The same password from the environment: nothing to warn of.
  auto quiet = doctor_cli(m.uris(), "", "REDLOCK_PASSWORD=s3cret");
  BOOST_TEST(quiet.status == 0, quiet.out);
  BOOST_TEST(contains(quiet.out, "no problems found on 3 masters"), quiet.out);
}
#endif  // REDLOCK_CLI_PATH
