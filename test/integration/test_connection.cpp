// SPDX-License-Identifier: Apache-2.0
#define BOOST_TEST_MODULE integration_connection
#include <boost/test/unit_test.hpp>

#include "masters.hpp"
#include "scripts/keys.hpp"

#include <redlock/redlock.hpp>

#include <redlock/observer.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::testing::masters;
namespace keys = redlock::detail::keys;
using redlock::testing::code_of;
using redlock::testing::eventually;
using redlock::testing::redis_options;
using redlock::testing::command_calls;
using redlock::testing::lock_calls;
using steady = std::chrono::steady_clock;

namespace {
std::string with_userinfo(const std::string& uri, const std::string& userinfo) {
  return "redis://" + userinfo + "@" + uri.substr(std::string("redis://").size());
}
}  // namespace

namespace {
// Whether process `pid` still runs (a zombie waiting to be reaped does not).
bool runs(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto after_name = line.rfind(')');
  return after_name != std::string::npos && after_name + 2 < line.size() && line[after_name + 2] != 'Z';
}
}  // namespace

namespace {
// A child process runs `start` (which makes a redis_process it never
// destroys and returns it), tells its pid and port, and is killed with
// SIGKILL, without unwinding: the server must die with it. `start` returns
// nullptr when it found the server already broken (a message says why).
void server_dies_with_its_killed_test(const std::function<redlock::testing::redis_process*()>& start) {
  int out[2];
  BOOST_REQUIRE(::pipe(out) == 0);
  pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    ::close(out[0]);
    pid_t server = -1;
    std::uint16_t port = 0;
    try {
      if (auto* s = start()) {
        server = s->pid();
        port = s->port();
      }
    } catch (...) {
    }
    [[maybe_unused]] auto w1 = ::write(out[1], &server, sizeof server);
    [[maybe_unused]] auto w2 = ::write(out[1], &port, sizeof port);
    ::raise(SIGKILL);
  }
  ::close(out[1]);
  pid_t server = -1;
  std::uint16_t port = 0;
  bool got = ::read(out[0], &server, sizeof server) == sizeof server && ::read(out[0], &port, sizeof port) == sizeof port;
  ::close(out[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  BOOST_REQUIRE(got);
  BOOST_REQUIRE_MESSAGE(server > 0, "the child could not start a working redis-server");
  BOOST_TEST((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
  bool gone = eventually([&] { return !runs(server); }, 5s);
  BOOST_TEST(gone, "the killed test's redis-server (pid " << server << ", port " << port << ") still runs");
  if (!gone) ::kill(server, SIGKILL);  // this test's own clean-up
}
}  // namespace

BOOST_AUTO_TEST_CASE(test_servers_die_with_a_test_process_killed_before_its_destructors) {
  // The fixture's own guarantee: a test process that dies without unwinding
  // (an abort, or ctest's SIGKILL at its timeout) takes its redis-servers
  // with it, instead of leaving them on their ports with ctest's output pipe
  // open.
  server_dies_with_its_killed_test([] { return new redlock::testing::redis_process(); });
}

BOOST_AUTO_TEST_CASE(test_servers_started_by_a_thread_that_ended_die_with_the_test_process) {
  // The same for a server a nemesis thread restarted: it must outlive that
  // thread (the test goes on using it), and still die with the test.
  server_dies_with_its_killed_test([]() -> redlock::testing::redis_process* {
    redlock::testing::redis_process* s = nullptr;
    std::thread([&] { s = new redlock::testing::redis_process(); }).join();
    std::thread([&] { s->restart(); }).join();
    if (s->command({"PING"}) != "PONG") {
      std::fprintf(stderr, "the server did not outlive the thread that restarted it\n");
      return nullptr;
    }
    return s;
  });
}

BOOST_AUTO_TEST_CASE(scripts_survive_script_flush) {
  masters m(3);
  redlock::client c(m.options());
  c.release(c.acquire("flush"));
  m.on_all({"SCRIPT", "FLUSH"});
  // NOSCRIPT costs one EVAL round trip per master, not an error.
  auto l = c.acquire("flush");
  for (auto& r : l.nodes()) BOOST_TEST((r.state != redlock::node_state::failed));
  // Both return at quorum: the third master's answer (for the release, after
  // its own NOSCRIPT round trip) may still be on its way.
  BOOST_TEST(eventually([&] { return m.holding("flush") == 3u; }));
  c.release(l);
  BOOST_TEST(eventually([&] { return m.holding("flush") == 0u; }));
  BOOST_TEST(m[0].command({"SCRIPT", "EXISTS", "0"}).size() > 0u);
}

BOOST_AUTO_TEST_CASE(auth_with_password_and_acl_user) {
  redis_options protected_opts;
  protected_opts.extra_args = {"--requirepass", "s3cret"};
  masters m(3, protected_opts);
  // A fresh connection's first request waits for AUTH and the script
  // preload: 100 ms was too short under ASan on a loaded machine (1 of 20 runs).
  auto o = m.options(1000ms);
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
  auto uo = users.options(1000ms);
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

BOOST_AUTO_TEST_CASE(default_user_and_password_for_uris_without_their_own) {
  // Secrets kept out of the URIs: client_options::user and password log in
  // on every master whose URI carries no password; a URI's own still wins.
  redis_options acl_opts;
  acl_opts.extra_args = {"--user", "alice", "on", ">wonder", "~*", "&*", "+@all", "--user", "default", "off"};
  masters users(3, acl_opts);
  auto o = users.options(1000ms);
  o.user = "alice";
  o.password = "wonder";
  {
    redlock::client c(o);
    c.release(c.acquire("default-credentials"));
  }
  // One URI with credentials of its own (wrong ones): they are used there,
  // so that master refuses while the other two grant a quorum. (The
  // fixture's own commands cannot log in here: a client that can reads.)
  auto mixed = o;
  mixed.nodes[0] = with_userinfo(mixed.nodes[0], "alice:wrong");
  {
    redlock::client c(mixed), reader(o);
    auto l = c.acquire("uri-wins", {.ttl = 5000ms});
    auto held_on = [&] {
      std::vector<bool> held;
      for (auto& n : reader.status("uri-wins")) held.push_back(n.content == redlock::key_content::mutex);
      return held;
    };
    BOOST_TEST(eventually([&] { return held_on() == std::vector<bool>{false, true, true}; }));
    c.release(l);
  }
  // The password alone: AUTH <password> as the default user (off here).
  auto no_user = o;
  no_user.user.clear();
  redlock::client anonymous(no_user);
  BOOST_TEST(code_of([&] { anonymous.acquire("default-credentials"); }) == errc::auth_failed);
  // A user without a password is refused when the client is built.
  auto no_password = users.options();
  no_password.user = "alice";
  try {
    redlock::client c(no_password);
    BOOST_FAIL("a user without a password was accepted");
  } catch (const redlock::error& e) {
    BOOST_TEST((e.code() == errc::bad_option));
    BOOST_TEST(std::string(e.what()).find("alice") != std::string::npos, e.what());
  }
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

// An idle connection writes a request at once, without an asynchronous
// write (connection.cpp, start_write); what the socket does not take then
// must follow, in order. A name of 8 MiB is far more than a loopback socket
// takes in one write.
BOOST_AUTO_TEST_CASE(a_request_larger_than_the_socket_takes_at_once_arrives_whole) {
  masters m(3);
  redlock::client c(m.options(2000ms));  // the stall timeout (5 s) must exceed it
  std::string name(8u << 20, 'n');
  name.back() = 'e';  // the last byte arrived too: the key is the whole name
  auto l = c.acquire(name);
  BOOST_TEST(eventually([&] { return m.holding(name) == 3u; }));  // the call returns at a quorum
  BOOST_TEST(m[0].command({"STRLEN", name}) == std::to_string(l.token().size()));
  c.release(l);
  BOOST_TEST(eventually([&] { return m.holding(name) == 0u; }));
  // The connections are still in step: the next replies match their requests.
  // (A quorum decides: the last master may still be pending.)
  auto small = c.acquire("small-after-large");
  for (auto& r : small.nodes()) BOOST_TEST((r.state == redlock::node_state::locked || r.state == redlock::node_state::pending));
  BOOST_TEST(eventually([&] { return m.holding("small-after-large") == 3u; }));
  c.release(small);
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

namespace {

// Counts connection closes the client reports, and acquisition attempts.
struct connection_events : redlock::observer {
  std::atomic<int> closed{0}, attempts{0};
  void on_log(redlock::log_level, std::string_view message) override {
    if (message.find("connection closed") != std::string_view::npos) ++closed;
  }
  void on_acquire_attempt(std::string_view, unsigned) override { ++attempts; }
};

// Clients subscribed to `channel` on `server` (PUBSUB NUMSUB).
long subscribers(redlock::testing::redis_process& server, const std::string& channel) {
  auto reply = server.command({"PUBSUB", "NUMSUB", channel});  // "channel count"
  return std::stol(reply.substr(reply.rfind(' ') + 1));
}

// Mutex waiters listen on their own client's wake channel for `key`
// (keys::wake_channel): the subscriptions to all such channels on `server`.
long wake_subscribers(redlock::testing::redis_process& server, std::string_view key) {
  std::istringstream channels(server.command({"PUBSUB", "CHANNELS", keys::wake_channel(key, "*")}));
  long total = 0;
  for (std::string channel; channels >> channel;) total += subscribers(server, channel);
  return total;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_waiter_is_woken_after_its_wake_up_connections_were_dropped) {
  masters m(3);
  redlock::client holder(m.options());
  auto held = holder.acquire("wake", {.ttl = 60000ms});
  auto events = std::make_shared<connection_events>();
  auto wo = m.options();
  wo.observer = events;
  redlock::client waiter(wo);
  // A retry delay far longer than the test's bounds: only a wake-up can
  // explain a prompt acquisition.
  constexpr auto retry_delay = 60000ms;
  auto got = std::async(std::launch::async, [&] {
    return waiter.try_acquire("wake", {.ttl = 5000ms, .wait = 120000ms, .retry_delay = retry_delay,
                                       .retry_jitter = 0ms});
  });
  BOOST_REQUIRE(eventually([&] {
    for (std::size_t i = 0; i < m.size(); ++i)
      if (wake_subscribers(m[i], "wake") != 1) return false;
    return true;
  }));
  BOOST_TEST(events->attempts.load() == 1);
  // Every master drops the waiter's subscriber connection, as a restart would.
  m.on_all({"CLIENT", "KILL", "TYPE", "pubsub"});
  for (std::size_t i = 0; i < m.size(); ++i) {
    BOOST_TEST_CONTEXT("master " << i) {
      BOOST_TEST(eventually([&] { return wake_subscribers(m[i], "wake") == 1; }),
                 "the subscriber connection did not come back by itself");
    }
  }
  holder.release(held);
  // Woken: well before the retry delay (the bound is generous, a tenth of it).
  BOOST_TEST((got.wait_for(retry_delay / 10) == std::future_status::ready), "the release did not wake the waiter");
  auto l = got.get();
  BOOST_TEST(l.has_value());
  // The first, and the one the wake-up started; or two it started, when
  // the first copy's retry reached a master the release had not yet (the
  // quorum-th copy retries again: release_news::named).
  BOOST_TEST(events->attempts.load() >= 2);
  BOOST_TEST(events->attempts.load() <= 3);
  if (l) waiter.release(*l);
}

BOOST_AUTO_TEST_CASE(wake_up_connections_come_back_after_a_master_restart) {
  masters m(3);
  redlock::client holder(m.options());
  auto held = holder.acquire("wake-restart", {.ttl = 60000ms});
  redlock::client waiter(m.options());
  auto got = std::async(std::launch::async, [&] {
    return waiter.try_acquire("wake-restart", {.ttl = 5000ms, .wait = 120000ms, .retry_delay = 60000ms,
                                               .retry_jitter = 0ms});
  });
  BOOST_REQUIRE(eventually([&] { return wake_subscribers(m[0], "wake-restart") == 1; }));
  m[0].kill9();
  m[0].restart(true);
  BOOST_TEST(eventually([&] { return wake_subscribers(m[0], "wake-restart") == 1; }),
             "the subscriber did not reconnect and resubscribe to the restarted master");
  holder.release(held);
  BOOST_TEST((got.wait_for(6000ms) == std::future_status::ready));
  if (auto l = got.get()) waiter.release(*l);
}

BOOST_AUTO_TEST_CASE(a_stalled_wake_up_connection_is_closed_and_reopened) {
  // A master that stops answering (SIGSTOP here; a blackhole in production)
  // sends no EOF: only the subscriber's own heartbeat can notice it.
  masters m(3);
  auto events = std::make_shared<connection_events>();
  auto wo = m.options(50ms);
  wo.stall_timeout = 300ms;
  wo.observer = events;
  redlock::client holder(m.options());
  auto held = holder.acquire("wake-stall", {.ttl = 60000ms});
  redlock::client waiter(wo);
  auto got = std::async(std::launch::async, [&] {
    return waiter.try_acquire("wake-stall", {.ttl = 5000ms, .wait = 120000ms, .retry_delay = 60000ms,
                                             .retry_jitter = 0ms});
  });
  BOOST_REQUIRE(eventually([&] { return wake_subscribers(m[0], "wake-stall") == 1; }));
  auto before = events->closed.load();
  m[0].pause();
  BOOST_TEST(eventually([&] { return events->closed.load() > before; }),
             "the silent subscriber connection was never closed");
  m[0].resume();
  holder.release(held);
  BOOST_TEST((got.wait_for(6000ms) == std::future_status::ready));
  if (auto l = got.get()) waiter.release(*l);
}

BOOST_AUTO_TEST_CASE(a_release_reaches_a_master_whose_connection_is_in_reconnect_backoff) {
  redis_options persistent;
  persistent.aof = true;  // appendfsync always: the key survives the kill
  masters m(3, persistent);
  auto events = std::make_shared<connection_events>();
  auto o = m.options(100ms);
  // Once the connection to the killed master closes, the client waits this
  // long before it connects again on its own: the release comes inside it.
  o.reconnect_min = 60000ms;
  o.reconnect_max = 60000ms;
  o.observer = events;
  auto t0 = steady::now();
  {
    redlock::client c(o);
    auto l = c.acquire("backoff", {.ttl = 60000ms});
    BOOST_REQUIRE(eventually([&] { return m.holding("backoff") == 3u; }));
    m[2].kill9();
    BOOST_REQUIRE(eventually([&] { return events->closed.load() >= 1; }));
    m[2].restart();
    BOOST_REQUIRE(m[2].command({"EXISTS", "backoff"}) == "1");
    c.release(l);  // a quorum (masters 0 and 1) confirms at once
  }  // destroying the client waits for the release still in flight
  BOOST_TEST(m[2].command({"EXISTS", "backoff"}) == "0", "the restarted master still holds the released key");
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("backoff") == 0u; }));
  BOOST_TEST((steady::now() - t0 < 30000ms));  // nowhere near the back-off
}

BOOST_AUTO_TEST_CASE(shutdown_waits_for_a_release_in_flight_only_about_a_node_timeout) {
  masters m(3);
  auto o = m.options(200ms);
  o.connect_timeout = 300ms;
  auto c = std::make_unique<redlock::client>(o);
  auto l = c->acquire("bounded", {.ttl = 60000ms});
  m[2].pause();  // its release is never answered
  c->release(l);
  auto t0 = steady::now();
  c.reset();
  auto took = steady::now() - t0;
  // About connect_timeout + node_timeout (500 ms) at most; generous for a busy machine.
  BOOST_TEST((took < 5000ms), std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  m[2].resume();
  // The release was written before the client went: the master applies it when it runs again.
  BOOST_TEST(eventually([&] { return m.holding("bounded") == 0u; }));
}

// Redis answers a refused SELECT (or AUTH) with an error and goes on with
// the commands pipelined behind it, on the connection's current database, 0,
// as the default user. Requests therefore wait for those replies: none may
// take a lock key in a database nobody configured while the client reports
// "failed, nothing taken" (connection_open.cpp, start_handshake).
namespace {
redis_options with_two_databases() {
  redis_options o;
  o.extra_args = {"--databases", "2"};
  return o;
}
}  // namespace

BOOST_AUTO_TEST_CASE(no_request_runs_behind_a_select_the_master_refused) {
  masters m(1, with_two_databases());
  auto o = m.options(1000ms);
  o.nodes[0] += "/5";  // out of range on a master with two databases
  {
    redlock::client c(o);
    BOOST_TEST(code_of([&] { c.acquire("bad-db", {.ttl = 60000ms}); }) == errc::bad_database);
  }  // destroying the client waits for the attempt's clean-up
  BOOST_TEST(command_calls(m[0], {"select"}) >= 1);  // the SELECT was sent, and refused
  BOOST_TEST(lock_calls(m[0]) == 0, "a lock command ran on database 0");
}

BOOST_AUTO_TEST_CASE(a_database_the_masters_do_not_have_is_named_and_ends_the_wait) {
  masters m(3, with_two_databases());
  auto o = m.options(1000ms);
  for (auto& u : o.nodes) u += "/5";
  struct log_lines : redlock::observer {
    std::mutex mutex;
    std::string text;
    void on_log(redlock::log_level, std::string_view line) override {
      std::lock_guard lock(mutex);
      text.append(line).append("\n");
    }
  };
  auto logged = std::make_shared<log_lines>();
  o.observer = logged;
  redlock::client c(o);
  // Waiting cannot fix it: the first attempt ends the wait, with its error
  // (retries in the reconnect back-off would end with not_connected).
  auto t0 = steady::now();
  try {
    c.acquire("bad-db", {.ttl = 60000ms, .wait = 60000ms});
    BOOST_FAIL("acquired");
  } catch (const redlock::error& e) {
    BOOST_TEST(e.code() == errc::bad_database);
    BOOST_TEST(std::string(e.what()).find("select the database the URI names") != std::string::npos, e.what());
  }
  BOOST_TEST((steady::now() - t0 < 30000ms));  // nowhere near the wait
  std::lock_guard lock(logged->mutex);
  BOOST_TEST(logged->text.find("(the master said: ERR DB index is out of range)") != std::string::npos, logged->text);
}

BOOST_AUTO_TEST_CASE(a_master_that_refuses_select_holds_nothing_while_the_others_grant) {
  // A quorum wins on the two masters that have database 5; the third must
  // not hold the lock in its database 0 meanwhile (every db-0 user of the
  // name would be locked out until the release, or the TTL).
  masters good(2);
  redlock::testing::redis_process bad(with_two_databases());
  auto o = good.options(1000ms);
  o.nodes.push_back(bad.uri());
  for (auto& u : o.nodes) u += "/5";
  {
    redlock::client c(o);
    auto l = c.acquire("bad-db", {.ttl = 60000ms});
    BOOST_REQUIRE(eventually([&] { return command_calls(bad, {"select"}) >= 1; }));
    BOOST_TEST(bad.command({"EXISTS", "bad-db"}) == "0", "the lock is held in database 0 of the master without db 5");
    BOOST_TEST(lock_calls(bad) == 0);
    c.release(l);
  }
  BOOST_TEST(lock_calls(bad) == 0);
}

BOOST_AUTO_TEST_CASE(no_request_runs_behind_an_auth_the_master_refused) {
  // A master without a password refuses AUTH, then serves the default user.
  masters m(1);
  auto o = m.options(1000ms);
  o.nodes[0] = with_userinfo(o.nodes[0], ":s3cret");
  {
    redlock::client c(o);
    BOOST_TEST(code_of([&] { c.acquire("bad-auth", {.ttl = 60000ms}); }) == errc::auth_failed);
  }
  BOOST_TEST(lock_calls(m[0]) == 0, "a lock command ran as the default user");
}


// The pending limit is back-pressure on new work. A clean-up (an abandoned
// attempt's, a hold's release) is sent behind the request it undoes, on the
// same connection, and counts on running after it there (docs/algorithm.md,
// section 2, "Unknown means maybe yes"; acquire_op::on_late_grant): refused
// locally, it is never written, the request it follows still runs, and its
// key stays for the whole TTL while the client believes it gone. With one
// request allowed outstanding, and master 2 paused, the attempt is still
// outstanding there when the clean-up comes.
namespace {
redlock::client_options one_request_outstanding(const masters& m, std::chrono::milliseconds node_timeout) {
  auto o = m.options(node_timeout);
  o.max_pending_per_node = 1;
  return o;
}

// Refused by masters 0 and 1, the attempt is abandoned and its clean-up
// sent to master 2 before try_acquire returns; master 2 resumes after
// `paused_for` more.
void abandon_an_attempt_master_2_runs_later(masters& m, std::chrono::milliseconds node_timeout,
                                            std::chrono::milliseconds paused_for) {
  for (std::size_t i : {0u, 1u}) m[i].command({"SET", "limited", "someone-else", "PX", "60000"});
  redlock::client c(one_request_outstanding(m, node_timeout));
  m[2].pause();
  BOOST_TEST(!c.try_acquire("limited", {.ttl = 60000ms}).has_value());
  std::this_thread::sleep_for(paused_for);
  m[2].resume();
  BOOST_REQUIRE(eventually([&] { return lock_calls(m[2]) >= 1; }));  // the attempt ran there, and granted
  bool gone = eventually([&] { return m[2].command({"EXISTS", "limited"}) == "0"; });
  BOOST_TEST(gone,
             "the abandoned attempt's key stays on master 2, PTTL " << m[2].command({"PTTL", "limited"}));
}
}  // namespace

BOOST_AUTO_TEST_CASE(an_abandoned_attempts_clean_up_is_not_refused_by_the_pending_limit) {
  masters m(3);
  abandon_an_attempt_master_2_runs_later(m, 2000ms, 0ms);  // its answer comes as a late grant
}

BOOST_AUTO_TEST_CASE(an_abandoned_attempts_clean_up_is_not_refused_by_the_pending_limit_after_a_timeout) {
  // Master 2's deadline passes first: no grant ever reaches the client, only
  // the clean-up behind the attempt can take the key down.
  masters m(3);
  abandon_an_attempt_master_2_runs_later(m, 100ms, 300ms);
}

BOOST_AUTO_TEST_CASE(a_release_is_not_refused_by_the_pending_limit) {
  masters m(3);
  redlock::client c(one_request_outstanding(m, 2000ms));  // master 2's answer comes as a late grant
  m[2].pause();
  auto l = c.acquire("limited-hold", {.ttl = 60000ms});  // masters 0 and 1 make the quorum
  c.release(l);
  m[2].resume();
  BOOST_REQUIRE(eventually([&] { return lock_calls(m[2]) >= 1; }));
  bool gone = eventually([&] { return m[2].command({"EXISTS", "limited-hold"}) == "0"; });
  BOOST_TEST(gone,
             "the released hold's key stays on master 2, PTTL " << m[2].command({"PTTL", "limited-hold"}));
}
