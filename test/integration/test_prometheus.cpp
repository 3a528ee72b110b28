// SPDX-License-Identifier: Apache-2.0
// redlock::prometheus_observer: metrics scraped over HTTP from a real
// endpoint after real acquisitions, hand-offs, renewals and a lost lease,
// checked by value and validated with `promtool check metrics`; and the
// same through `redlock run --metrics-port`.
#define BOOST_TEST_MODULE integration_prometheus
#include <boost/test/unit_test.hpp>

#include "masters.hpp"

#include <redlock/prometheus_observer.hpp>
#include <redlock/redlock.hpp>

#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <cstdio>
#include <fstream>
#include <future>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace std::chrono_literals;
using redlock::testing::masters;

namespace {

// GET http://127.0.0.1:port/metrics; the body, or "" when nothing answers.
std::string scrape(std::uint16_t port) {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  boost::system::error_code ec;
  s.connect({asio::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return {};
  std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  asio::write(s, asio::buffer(request), ec);
  std::string response;
  asio::read(s, asio::dynamic_buffer(response), ec);  // until the server closes
  auto body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || response.find(" 200 ") == std::string::npos || body == std::string::npos)
    return {};
  return response.substr(body + 4);
}

// `promtool check metrics` on the text: its exit status and what it said.
std::pair<int, std::string> promtool_check(const std::string& text) {
  auto base = "/tmp/redlock-promtool-" + std::to_string(::getpid());
  std::ofstream(base + ".txt") << text;
  auto cmd = std::string(REDLOCK_PROMTOOL) + " check metrics <" + base + ".txt >" + base + ".out 2>&1";
  int status = std::system(cmd.c_str());
  std::ifstream in(base + ".out");
  std::stringstream said;
  said << in.rdbuf();
  std::remove((base + ".txt").c_str());
  std::remove((base + ".out").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, said.str()};
}

// The value of one sample ("name{labels}"), or -1 when absent.
double sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return -1;
}

std::string node_label(redlock::testing::redis_process& r) { return "127.0.0.1:" + std::to_string(r.port()); }

}  // namespace

BOOST_AUTO_TEST_CASE(scraped_metrics_count_what_happened_and_pass_promtool) {
  masters m(3);
  auto registry = std::make_shared<prometheus::Registry>();
  auto port = redlock::testing::free_port();
  prometheus::Exposer exposer("127.0.0.1:" + std::to_string(port), 1);
  exposer.RegisterCollectable(registry);
  auto o = m.options(50ms);
  o.observer = std::make_shared<redlock::prometheus_observer>(*registry, m.uris());
  redlock::client c(o);

  // Three plain acquisitions, one of each other kind.
  for (int i = 0; i < 3; ++i) c.release(c.acquire("metrics"));
  c.release(c.acquire("metrics-reentrant", {.kind = redlock::lock_kind::reentrant, .owner = "me"}));
  c.release(c.acquire("metrics-fair", {.kind = redlock::lock_kind::fair, .owner = "me"}));

  // A refusal, then a hand-off: a waiter hears the holder's release.
  auto held = c.acquire("metrics-contended", {.ttl = 5s});
  redlock::client other(o);
  BOOST_TEST(!other.try_acquire("metrics-contended", {.max_attempts = 1}));
  auto waiter = std::async(std::launch::async, [&] {
    return other.acquire("metrics-contended", {.ttl = 5s, .wait = 5s, .retry_delay = 2000ms, .retry_jitter = 0ms});
  });
  // The waiter listens for the release on every master (its retry is 2 s away).
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_REQUIRE(redlock::testing::eventually(
        [&] { return !m[i].command({"PUBSUB", "CHANNELS", "{metrics-contended}:released:*"}).empty(); }));
  c.release(held);
  other.release(waiter.get());

  // Renewals, then a lease lost when every master stops answering.
  std::promise<void> lost;
  auto renewed = c.acquire("metrics-lease", {.ttl = 300ms, .renew = true, .on_lost = [&](redlock::lost_reason) {
                                               lost.set_value();
                                             }});
  std::this_thread::sleep_for(450ms);
  for (std::size_t i = 0; i < 3; ++i) m[i].pause();
  BOOST_REQUIRE((lost.get_future().wait_for(5s) == std::future_status::ready));
  for (std::size_t i = 0; i < 3; ++i) m[i].resume();

  auto text = scrape(port);
  BOOST_REQUIRE(!text.empty());
  auto [status, said] = promtool_check(text);
  BOOST_TEST(status == 0, "promtool check metrics: " << said << "\n" << text);

  BOOST_TEST(sample(text, R"(redlock_acquisitions_total{kind="mutex",outcome="acquired"})") == 6.0, text);
  BOOST_TEST(sample(text, R"(redlock_acquisitions_total{kind="mutex",outcome="not_acquired"})") == 1.0, text);
  BOOST_TEST(sample(text, R"(redlock_acquisitions_total{kind="reentrant",outcome="acquired"})") == 1.0, text);
  BOOST_TEST(sample(text, R"(redlock_acquisitions_total{kind="fair",outcome="acquired"})") == 1.0, text);
  BOOST_TEST(sample(text, R"(redlock_acquire_duration_seconds_count{kind="mutex",result="acquired"})") == 6.0);
  BOOST_TEST(sample(text, R"(redlock_acquire_attempts_count{kind="mutex",result="failed"})") == 1.0);
  BOOST_TEST(sample(text, "redlock_acquire_attempts_total") >= 9.0, text);
  BOOST_TEST(sample(text, R"(redlock_handoff_duration_seconds_count{kind="mutex"})") == 1.0, text);
  // Heard at the release, acquired at once: far less than the 2 s retry delay.
  BOOST_TEST(sample(text, R"(redlock_handoff_duration_seconds_sum{kind="mutex"})") < 1.5, text);
  BOOST_TEST(sample(text, R"(redlock_renewals_total{result="ok"})") >= 1.0, text);
  // Which reason depends on when the last renewal ran; one lease was lost.
  BOOST_TEST(std::max(0.0, sample(text, R"(redlock_leases_lost_total{reason="expired"})")) +
                     std::max(0.0, sample(text, R"(redlock_leases_lost_total{reason="quorum_lost"})")) ==
                 1.0,
             text);
  std::size_t timeouts = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    auto label = node_label(m[i]);
    timeouts += sample(text, "redlock_node_errors_total{error=\"timeout\",node=\"" + label + "\"}") > 0;
    BOOST_TEST(sample(text, "redlock_node_request_duration_seconds_count{node=\"" + label + "\",operation=\"SET\"}") >=
                   1.0,
               text);
  }
  BOOST_TEST(timeouts == 3u, text);
}

BOOST_AUTO_TEST_CASE(node_labels_carry_no_credentials) {
  prometheus::Registry registry;
  redlock::prometheus_observer obs(registry, {"redis://app:s3cret@10.0.0.1:7000/2", "rediss://:pw@h2:6380"});
  obs.on_node_reply(0, "extend", 1500us, {});
  obs.on_node_reply(1, "extend", 1500us, redlock::make_error_code(redlock::errc::auth_failed));
  obs.on_node_reply(2, "extend", 1500us, {});  // past the list: labelled by index
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  auto text = out.str();
  BOOST_TEST(sample(text, R"(redlock_node_request_duration_seconds_count{node="10.0.0.1:7000/2",operation="extend"})") ==
             1.0, text);
  BOOST_TEST(sample(text, R"(redlock_node_errors_total{error="auth_failed",node="h2:6380"})") == 1.0, text);
  BOOST_TEST(sample(text, R"(redlock_node_request_duration_seconds_count{node="2",operation="extend"})") == 1.0, text);
  BOOST_TEST(text.find("s3cret") == std::string::npos);
  BOOST_TEST(text.find("pw") == std::string::npos);
  auto [status, said] = promtool_check(text);
  BOOST_TEST(status == 0, said);
  // The check can fail: a counter not named *_total is rejected.
  BOOST_TEST(promtool_check("# HELP bad a counter\n# TYPE bad counter\nbad 1\n").first != 0);
}

#ifdef REDLOCK_CLI_PATH
BOOST_AUTO_TEST_CASE(redlock_run_metrics_port_serves_the_same_metrics) {
  masters m(3);
  std::string nodes;
  for (auto& u : m.uris()) nodes += (nodes.empty() ? "" : ",") + u;
  auto port = redlock::testing::free_port();
  pid_t pid = ::fork();
  if (pid == 0) {
    auto listen = "127.0.0.1:" + std::to_string(port);
    ::execl(REDLOCK_CLI_PATH, "redlock", "run", "--nodes", nodes.c_str(), "--name", "cli-metrics", "--ttl", "600ms",
            "--metrics-port", listen.c_str(), "--", "sleep", "2", nullptr);
    std::_Exit(127);
  }
  std::string text;
  // Scrape once a renewal has been counted (the lease is 600 ms, the command 2 s).
  redlock::testing::eventually(
      [&] {
        text = scrape(port);
        return sample(text, R"(redlock_renewals_total{result="ok"})") >= 1.0;
      },
      1800ms);
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  BOOST_REQUIRE(!text.empty());
  BOOST_TEST(sample(text, R"(redlock_acquisitions_total{kind="mutex",outcome="acquired"})") == 1.0, text);
  BOOST_TEST(sample(text, R"(redlock_renewals_total{result="ok"})") >= 1.0, text);
  // The CLI describes its holder (host:pid by default): its mutex takes the
  // script, not the plain SET NX PX.
  BOOST_TEST(sample(text, "redlock_node_request_duration_seconds_count{node=\"" + node_label(m[0]) +
                              "\",operation=\"mutex_acquire\"}") == 1.0,
             text);
  auto [check, said] = promtool_check(text);
  BOOST_TEST(check == 0, said);
}

BOOST_AUTO_TEST_CASE(redlock_run_metrics_port_rejects_a_bad_port) {
  masters m(1);
  auto cmd = std::string(REDLOCK_CLI_PATH) + " run --nodes " + m.uris()[0] +
             " --name x --metrics-port 99999 -- true 2>/dev/null";
  int status = std::system(cmd.c_str());
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 64));
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("x") == 0u; }));  // nothing was acquired
}
#endif
