// SPDX-License-Identifier: Apache-2.0
#define BOOST_TEST_MODULE integration_connection
#include <boost/test/unit_test.hpp>

#include "masters.hpp"

#include <redlock/redlock.hpp>

#include <set>
#include <thread>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::testing::masters;
using redlock::testing::code_of;
using redlock::testing::redis_options;
using steady = std::chrono::steady_clock;

namespace {
std::string with_userinfo(const std::string& uri, const std::string& userinfo) {
  return "redis://" + userinfo + "@" + uri.substr(std::string("redis://").size());
}
}  // namespace

BOOST_AUTO_TEST_CASE(scripts_survive_script_flush) {
  masters m(3);
  redlock::client c(m.options());
  c.release(c.acquire("flush"));
  m.on_all({"SCRIPT", "FLUSH"});
  // NOSCRIPT costs one EVAL round trip per master, not an error.
  auto l = c.acquire("flush");
  for (auto& r : l.nodes()) BOOST_TEST((r.state != redlock::node_state::failed));
  BOOST_TEST(m.holding("flush") == 3u);
  c.release(l);
  BOOST_TEST(m.holding("flush") == 0u);
  BOOST_TEST(m[0].command({"SCRIPT", "EXISTS", "0"}).size() > 0u);
}

BOOST_AUTO_TEST_CASE(auth_with_password_and_acl_user) {
  redis_options protected_opts;
  protected_opts.extra_args = {"--requirepass", "s3cret"};
  masters m(3, protected_opts);
  auto o = m.options();
  for (auto& u : o.nodes) u = with_userinfo(u, ":s3cret");
  {
    redlock::client c(o);
    c.release(c.acquire("authed"));
  }
  // An ACL user, configured at start-up (the default user disabled).
  redis_options acl_opts;
  // redis.conf's "user" directive takes the name and the rules as separate words.
  acl_opts.extra_args = {"--user", "alice", "on", ">wonder", "~*", "&*", "+@all", "--user", "default", "off"};
  masters users(3, acl_opts);
  auto uo = users.options();
  for (auto& u : uo.nodes) u = with_userinfo(u, "alice:wonder");
  {
    redlock::client c(uo);
    c.release(c.acquire("acl"));
  }
  auto bad = users.options();
  for (auto& u : bad.nodes) u = with_userinfo(u, "alice:wrong");
  redlock::client wrong(bad);
  BOOST_TEST(code_of([&] { wrong.acquire("acl"); }) == errc::auth_failed);
  redlock::client none(m.options());  // no password at all
  BOOST_TEST(code_of([&] { none.acquire("acl"); }) == errc::auth_failed);
}

BOOST_AUTO_TEST_CASE(select_uses_the_database_from_the_uri) {
  masters m(3);
  auto o = m.options();
  for (auto& u : o.nodes) u += "/3";
  redlock::client c(o);
  auto l = c.acquire("in-db-3", {.ttl = 5000ms});
  for (std::size_t i = 0; i < m.size(); ++i) {
    BOOST_TEST(m[i].command({"EXISTS", "in-db-3"}) == "0");  // not in db 0
    BOOST_TEST(m[i].command({"INFO", "keyspace"}).find("db3:keys=1") != std::string::npos);
  }
  c.release(l);
}

BOOST_AUTO_TEST_CASE(a_restarted_master_is_reconnected_to) {
  masters m(3);
  redlock::client c(m.options());
  c.release(c.acquire("restart"));
  m[0].kill9();
  // Quorum 2 of 3 still works while master 0 is down.
  for (int i = 0; i < 5; ++i) c.release(c.acquire("restart"));
  m[0].restart(true);
  bool back = false;
  auto end = steady::now() + 5s;
  while (!back && steady::now() < end) {
    auto l = c.acquire("restart");
    back = l.nodes()[0].state == redlock::node_state::locked;
    c.release(l);
    std::this_thread::sleep_for(20ms);
  }
  BOOST_TEST(back, "master 0 was not used again after its restart");
}

BOOST_AUTO_TEST_CASE(tokens_are_unique) {
  masters m(1);
  redlock::client c(m.options());
  std::set<std::string> seen;
  for (int i = 0; i < 300; ++i) {
    auto l = c.acquire("unique-" + std::to_string(i));
    BOOST_TEST(seen.insert(l.token()).second);
    c.release(l);
  }
}
