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
#include <mutex>
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

// `waiter` asks for `name`, which `holder` holds as `held`, and gets it when
// the holder releases it: a refusal, then a hand-off. Its lock.
redlock::lock handed_over(masters& m, redlock::client& holder, const redlock::lock& held, redlock::client& waiter,
                          const std::string& name) {
  auto waiting = std::async(std::launch::async, [&] {
    return waiter.acquire(name, {.ttl = 5s, .wait = 5s, .retry_delay = 2000ms, .retry_jitter = 0ms});
  });
  // The waiter listens for the release on every master (its retry is 2 s away).
  for (std::size_t i = 0; i < m.size(); ++i)
    BOOST_REQUIRE(redlock::testing::eventually(
        [&] { return !m[i].command({"PUBSUB", "CHANNELS", "{" + name + "}:released:*"}).empty(); }));
  holder.release(held);
  return waiting.get();
}

// The registry's exposition, as a scrape would see it.
std::string exposition(prometheus::Registry& registry) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

// A sample, absent counted as 0 (a histogram not yet observed).
double count_of(const std::string& text, const std::string& series) { return std::max(0.0, sample(text, series)); }

std::string held_gauge(std::string_view kind) { return "redlock_locks_held{kind=\"" + std::string(kind) + "\"}"; }
std::string holds_ended(std::string_view kind, std::string_view ended = "released") {
  return "redlock_hold_duration_seconds_count{ended=\"" + std::string(ended) + "\",kind=\"" + std::string(kind) +
         "\"}";
}
std::string waits(std::string_view kind, std::string_view result = "acquired") {
  return "redlock_acquire_duration_seconds_count{kind=\"" + std::string(kind) + "\",result=\"" +
         std::string(result) + "\"}";
}

// Every span a client reports, copied (the hook's views live only in the call).
struct recorded_span {
  redlock::span_kind what;
  std::string name, outcome;
  redlock::lock_kind kind;
  unsigned masters, answered, granted, attempts;
  std::chrono::microseconds duration;
};
struct span_recorder : redlock::observer {
  std::mutex mutex;
  std::vector<recorded_span> spans;
  void on_span(const redlock::span& s) override {
    std::lock_guard lock(mutex);
    spans.push_back({s.what, std::string(s.name), std::string(s.outcome), s.kind, s.masters, s.answered, s.granted,
                     s.attempts, s.duration});
  }
  std::vector<recorded_span> of(const std::string& name) {
    std::lock_guard lock(mutex);
    std::vector<recorded_span> out;
    for (auto& s : spans)
      if (s.name == name) out.push_back(s);
    return out;
  }
};

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
  other.release(handed_over(m, c, held, other, "metrics-contended"));

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

// Three masters, and a client `c` whose prometheus_observer fills `registry`.
struct metered {
  masters m{3};
  prometheus::Registry registry;
  redlock::client_options o = observed();
  redlock::client c{o};

  // A generous node timeout: a fresh client's first round also waits for
  // its connections, which took over 100 ms in sanitized builds on a loaded
  // 2-core machine (load 9); nothing here depends on the timeout.
  redlock::client_options observed() {
    auto options = m.options(500ms);
    options.observer = std::make_shared<redlock::prometheus_observer>(registry, m.uris());
    return options;
  }
};

// Every kind feeds the hold series: the gauge is up while held and back
// down after the release, and each release adds one hold to the histogram
// and one acquisition to the wait histogram.
BOOST_FIXTURE_TEST_CASE(every_kind_counts_its_hold_and_its_wait, metered) {
  using redlock::lock_kind;
  struct case_ {
    std::string name;
    redlock::acquire_options options;
  };
  std::vector<case_> cases{
      {"hold-mutex", {}},
      {"hold-reentrant", {.kind = lock_kind::reentrant, .owner = "me"}},
      {"hold-fair", {.kind = lock_kind::fair, .owner = "me"}},
      {"hold-semaphore", {.kind = lock_kind::semaphore, .permits = 2}},
      {"hold-read", {.kind = lock_kind::read, .owner = "me"}},
      {"hold-write", {.kind = lock_kind::write, .owner = "me"}},
      {"hold-together", {.other_names = {"hold-together-b", "hold-together-c"}}},
  };
  for (auto& [name, options] : cases) {
    auto kind = redlock::to_string(options.kind);
    auto before = exposition(registry);
    auto l = c.acquire(name, options);
    auto during = exposition(registry);
    BOOST_TEST(sample(during, held_gauge(kind)) == 1.0, name << "\n" << during);
    BOOST_TEST(count_of(during, holds_ended(kind)) == count_of(before, holds_ended(kind)), name);
    BOOST_TEST(count_of(during, waits(kind)) == count_of(before, waits(kind)) + 1, name);
    c.release(l);
    auto after = exposition(registry);
    BOOST_TEST(sample(after, held_gauge(kind)) == 0.0, name << "\n" << after);
    BOOST_TEST(count_of(after, holds_ended(kind)) == count_of(before, holds_ended(kind)) + 1, name << "\n" << after);
  }

  // Leadership is a hold of its own name, ended by resigning.
  auto lead = c.campaign("hold-office", {.ttl = 5s});
  BOOST_TEST(sample(exposition(registry), held_gauge("mutex")) == 1.0);
  c.resign(lead);
  BOOST_TEST(sample(exposition(registry), held_gauge("mutex")) == 0.0);

  // A handle dropped unreleased ends its hold too (when the client lets go
  // of its last copy, maybe a moment after the call returned).
  c.acquire("hold-dropped", {.ttl = 5s});
  BOOST_TEST(redlock::testing::eventually([&] { return sample(exposition(registry), held_gauge("mutex")) == 0.0; }));
  auto text = exposition(registry);
  BOOST_TEST(count_of(text, holds_ended("mutex", "dropped")) == 1.0, text);

  auto [status, said] = promtool_check(text);
  BOOST_TEST(status == 0, "promtool check metrics: " << said << "\n" << text);
}

// A re-entry is no new hold: the gauge stays at one, and the hold ends (and
// is timed) at the owner's last release only.
BOOST_FIXTURE_TEST_CASE(a_reentry_is_not_a_new_hold, metered) {
  redlock::acquire_options mine{.kind = redlock::lock_kind::reentrant, .owner = "me"};
  auto outer = c.acquire("reentered", mine);
  auto inner = c.acquire("reentered", mine);
  BOOST_TEST(sample(exposition(registry), held_gauge("reentrant")) == 1.0);
  BOOST_TEST(count_of(exposition(registry), waits("reentrant")) == 2.0);  // the re-entry waited too
  c.release(inner);
  auto text = exposition(registry);
  BOOST_TEST(sample(text, held_gauge("reentrant")) == 1.0, text);
  BOOST_TEST(count_of(text, holds_ended("reentrant")) == 0.0, text);
  c.release(outer);
  text = exposition(registry);
  BOOST_TEST(sample(text, held_gauge("reentrant")) == 0.0, text);
  BOOST_TEST(count_of(text, holds_ended("reentrant")) == 1.0, text);
}

// A hold ends once: a second release, or a release after the lease was
// lost, does not take the gauge below zero nor time the hold again.
BOOST_FIXTURE_TEST_CASE(a_hold_ends_once, metered) {
  auto twice = c.acquire("released-twice", {.ttl = 5s});
  c.release(twice);
  boost::system::error_code ec;
  c.release(twice, ec);  // whatever the masters say, the hold already ended
  auto text = exposition(registry);
  BOOST_TEST(sample(text, held_gauge("mutex")) == 0.0, text);
  BOOST_TEST(count_of(text, holds_ended("mutex")) == 1.0, text);

  std::promise<redlock::lost_reason> lost;
  auto renewed = c.acquire("released-after-loss", {.ttl = 2s, .renew = true, .on_lost = [&](redlock::lost_reason why) {
                                                     lost.set_value(why);
                                                   }});
  for (std::size_t i = 0; i < 3; ++i) m[i].pause();
  auto why = lost.get_future();
  BOOST_REQUIRE((why.wait_for(5s) == std::future_status::ready));
  for (std::size_t i = 0; i < 3; ++i) m[i].resume();
  auto reason = std::string(redlock::to_string(why.get()));
  text = exposition(registry);
  BOOST_TEST(sample(text, held_gauge("mutex")) == 0.0, text);
  BOOST_TEST(count_of(text, holds_ended("mutex", reason)) == 1.0, text);
  c.release(renewed, ec);
  text = exposition(registry);
  BOOST_TEST(sample(text, held_gauge("mutex")) == 0.0, text);
  BOOST_TEST(count_of(text, holds_ended("mutex", reason)) == 1.0, text);
  BOOST_TEST(count_of(text, holds_ended("mutex")) == 1.0, text);  // only the first lock's
}

// Contention shows as acquisitions that took more than one round: a waiter
// refused once, then woken by the holder's release.
BOOST_FIXTURE_TEST_CASE(contention_shows_as_attempts_above_one, metered) {
  redlock::client other(o);
  other.release(handed_over(m, c, c.acquire("contended-attempts", {.ttl = 5s}), other, "contended-attempts"));
  auto text = exposition(registry);
  // Two acquisitions: the holder's in one round, the waiter's in more.
  BOOST_TEST(sample(text, R"(redlock_acquire_attempts_count{kind="mutex",result="acquired"})") == 2.0, text);
  BOOST_TEST(sample(text, R"(redlock_acquire_attempts_bucket{kind="mutex",result="acquired",le="1"})") == 1.0, text);
  BOOST_TEST(sample(text, R"(redlock_acquire_attempts_sum{kind="mutex",result="acquired"})") > 2.0, text);
}

// The span hook: an acquire, an extend, the hold and the release, in that
// order (the hold ends when the release is asked for, before its round is
// decided); a failed acquisition reports one span and no hold.
BOOST_AUTO_TEST_CASE(spans_of_acquire_extend_hold_release_and_of_a_failure) {
  masters m(3);
  auto spans = std::make_shared<span_recorder>();
  auto o = m.options(500ms);  // as in `metered`
  o.observer = spans;
  redlock::client c(o), other(m.options(500ms));
  auto l = c.acquire("spanned", {.ttl = 5s});
  c.extend(l, 5s);
  c.release(l);
  auto seen = spans->of("spanned");
  using redlock::span_kind;
  BOOST_REQUIRE(seen.size() == 4u);
  BOOST_TEST((seen[0].what == span_kind::acquire));
  BOOST_TEST((seen[1].what == span_kind::extend));
  BOOST_TEST((seen[2].what == span_kind::hold));
  BOOST_TEST((seen[3].what == span_kind::release));
  for (auto& s : seen) {
    BOOST_TEST((s.kind == redlock::lock_kind::mutex));
    BOOST_TEST(s.masters == 3u);
  }
  BOOST_TEST(seen[0].outcome == "ok");
  BOOST_TEST(seen[0].attempts == 1u);
  BOOST_TEST(seen[0].granted >= 2u);  // a quorum said yes
  BOOST_TEST(seen[1].outcome == "ok");
  BOOST_TEST(seen[1].granted >= 2u);
  BOOST_TEST(seen[2].outcome == "released");
  BOOST_TEST(seen[2].granted == seen[0].granted);  // the hold's masters are its acquisition's
  BOOST_TEST(seen[3].outcome == "ok");
  // The hold lasted at least the extend's round trip; the acquire ended before it began.
  BOOST_TEST(seen[2].duration >= seen[1].duration);

  auto theirs = other.acquire("spanned-refused", {.ttl = 5s});
  BOOST_TEST(!c.try_acquire("spanned-refused", {.max_attempts = 1}));
  auto refused = spans->of("spanned-refused");
  BOOST_REQUIRE(refused.size() == 1u);
  BOOST_TEST((refused[0].what == span_kind::acquire));
  BOOST_TEST(refused[0].outcome == "not_acquired");
  BOOST_TEST(refused[0].attempts == 1u);
  // No quorum; a master the holder's round did not wait for may have said
  // yes to us first (seen once in 20 runs under load).
  BOOST_TEST(refused[0].granted < 2u);
  other.release(theirs);
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
