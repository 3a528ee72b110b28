// SPDX-License-Identifier: Apache-2.0
// Tests of redlock_clockshim: directly on a small probe process, and on a
// real (jemalloc-linked) redis-server whose keys must expire early or late.
// Timing assertions are lower bounds, or guarded by the real time measured.
#define BOOST_TEST_MODULE fault_clockshim
#include <boost/test/unit_test.hpp>

#include "clockshim/clock_control.hpp"
#include "redis_process.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using redlock::fault::clock_control;
using redlock::fault::mono_mode;
using steady = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

struct temp_dir {
  fs::path path;
  temp_dir() {
    char tmpl[] = "/tmp/redlock-clockshim-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

double now_ms_real() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

long long since_ms(steady::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count();
}

// ---- the probe ------------------------------------------------------------
struct sample {
  double rt = 0, mono = 0, monoc = 0, tod = 0, rtc = 0;
  long long t = 0;
};

sample parse_sample(const std::string& line) {
  sample s;
  std::istringstream in(line);
  in >> s.rt >> s.mono >> s.monoc >> s.tod >> s.rtc >> s.t;
  if (!in) throw std::runtime_error("bad probe line: " + line);
  return s;
}

// Runs the probe under the shim; `between` runs after the first sample.
template <class F>
std::pair<sample, sample> probe(const clock_control& ctl, int sleep_ms, F between) {
  std::string cmd = "LD_PRELOAD='" + std::string(REDLOCK_CLOCKSHIM_PATH) + "' " + ctl.env() +
                    " '" + std::string(REDLOCK_CLOCKSHIM_PROBE) + "' " + std::to_string(sleep_ms);
  FILE* p = ::popen(cmd.c_str(), "r");
  BOOST_REQUIRE(p);
  char buf[512];
  std::string l1, l2;
  if (std::fgets(buf, sizeof buf, p)) l1 = buf;
  between();
  if (std::fgets(buf, sizeof buf, p)) l2 = buf;
  int status = ::pclose(p);
  BOOST_REQUIRE_EQUAL(status, 0);
  return {parse_sample(l1), parse_sample(l2)};
}

std::pair<sample, sample> probe(const clock_control& ctl, int sleep_ms) {
  return probe(ctl, sleep_ms, [] {});
}

// ---- a shimmed redis-server ------------------------------------------------
struct shimmed_redis {
  temp_dir dir;
  clock_control clock{dir.path / "clock"};
  redlock::testing::redis_process server{options()};

  redlock::testing::redis_options options() {
    redlock::testing::redis_options o;
    o.preload = REDLOCK_CLOCKSHIM_PATH;
    o.extra_env = {clock.env()};
    return o;
  }

  // TIME in ms.
  double time_ms() {
    std::istringstream in(server.command({"TIME"}));
    long long sec = 0, usec = 0;
    in >> sec >> usec;
    return double(sec) * 1e3 + double(usec) / 1e3;
  }

  // Lets the shim see a new setting (it polls on the server's clock reads).
  static void settle() { std::this_thread::sleep_for(30ms); }

  // Polls until `key` is gone; returns the real ms it took, or -1 after `limit`.
  long long wait_gone(const std::string& key, steady::time_point t0, std::chrono::milliseconds limit) {
    while (steady::now() - t0 < limit) {
      if (server.command({"GET", key}) == "(nil)") return since_ms(t0);
      std::this_thread::sleep_for(10ms);
    }
    return -1;
  }
};

}  // namespace

// ===========================================================================
BOOST_AUTO_TEST_SUITE(probe_process)

BOOST_AUTO_TEST_CASE(identity_without_changes) {
  temp_dir d;
  clock_control ctl(d.path / "clock");
  auto before = now_ms_real();
  auto [a, b] = probe(ctl, 50);
  auto after = now_ms_real();
  BOOST_TEST(a.rt >= before - 5);
  BOOST_TEST(b.rt <= after + 5);
  BOOST_TEST(b.mono - a.mono >= 49);
}

BOOST_AUTO_TEST_CASE(rate_scales_every_clock) {
  temp_dir d;
  clock_control ctl(d.path / "clock");
  ctl.set_rate(4.0);
  auto [a, b] = probe(ctl, 200);
  BOOST_TEST(b.rt - a.rt >= 790);
  BOOST_TEST(b.tod - a.tod >= 790);
  BOOST_TEST(b.mono - a.mono >= 790);
  BOOST_TEST(b.monoc - a.monoc >= 760);  // coarse clocks tick every few ms
  BOOST_TEST(b.rtc - a.rtc >= 760);
}

BOOST_AUTO_TEST_CASE(offset_jump_while_running) {
  temp_dir d;
  clock_control ctl(d.path / "clock");
  auto [a, b] = probe(ctl, 100, [&] { ctl.set(60s, 1.0, mono_mode::follow); });
  BOOST_TEST(b.rt - a.rt >= 60'000);
  BOOST_TEST(b.tod - a.tod >= 60'000);
  BOOST_TEST(b.mono - a.mono >= 60'000);
  BOOST_TEST(b.t - a.t >= 60);
  // Continuity: the jump is exactly the offset change, no more.
  BOOST_TEST(b.rt - a.rt < 60'000 + 30'000);
}

BOOST_AUTO_TEST_CASE(monotonic_never_goes_back) {
  temp_dir d;
  clock_control ctl(d.path / "clock");
  auto [a, b] = probe(ctl, 100, [&] { ctl.set(-10s, 1.0, mono_mode::follow); });
  BOOST_TEST(b.rt - a.rt < -9'000);
  BOOST_TEST(b.mono >= a.mono);
  BOOST_TEST(b.monoc >= a.monoc);
}

BOOST_AUTO_TEST_CASE(mono_modes) {
  temp_dir d;
  clock_control ctl(d.path / "clock");
  {
    auto [a, b] = probe(ctl, 100, [&] { ctl.set(60s, 1.0, mono_mode::rate_only); });
    BOOST_TEST(b.rt - a.rt >= 60'000);
    BOOST_TEST(b.mono - a.mono < 30'000);  // no jump on the monotonic clock
  }
  {
    ctl.set(0s, 4.0, mono_mode::untouched);
    auto [a, b] = probe(ctl, 200);
    BOOST_TEST(b.rt - a.rt >= 790);
    BOOST_TEST(b.mono - a.mono < (b.rt - a.rt) / 2);  // real speed
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ===========================================================================
BOOST_AUTO_TEST_SUITE(redis_server)

BOOST_FIXTURE_TEST_CASE(starts_and_serves_with_the_shim, shimmed_redis) {
  // The shim is really loaded (and jemalloc did not hang on it).
  std::ifstream maps("/proc/" + std::to_string(server.pid()) + "/maps");
  std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  BOOST_TEST(all.find(fs::path(REDLOCK_CLOCKSHIM_PATH).filename().string()) != std::string::npos);
  BOOST_TEST(all.find("jemalloc") != std::string::npos);
  for (int i = 0; i < 200; ++i) {
    BOOST_REQUIRE(server.command({"SET", "k" + std::to_string(i), std::string(1000, 'x')}) == "OK");
  }
  BOOST_TEST(server.command({"DBSIZE"}) == "200");
  BOOST_TEST(std::abs(time_ms() - now_ms_real()) < 2000);
  server.restart();  // a second start is fine too
  BOOST_TEST(server.command({"PING"}) == "PONG");
}

BOOST_FIXTURE_TEST_CASE(time_moves_with_offset, shimmed_redis) {
  clock.set_offset(100s);
  settle();
  BOOST_TEST(std::abs(time_ms() - now_ms_real() - 100'000) < 2000);
  clock.set_offset(-50s);
  settle();
  BOOST_TEST(std::abs(time_ms() - now_ms_real() + 50'000) < 2000);
  clock.reset();
  settle();
  BOOST_TEST(std::abs(time_ms() - now_ms_real()) < 2000);
}

BOOST_FIXTURE_TEST_CASE(time_runs_at_rate, shimmed_redis) {
  clock.set_rate(4.0);
  settle();
  auto t0 = steady::now();
  double a = time_ms();
  std::this_thread::sleep_for(300ms);
  double b = time_ms();
  auto real = since_ms(t0);
  BOOST_TEST(b - a >= 3.5 * 300);
  BOOST_TEST_MESSAGE("server time advanced " << (b - a) << " ms in " << real << " ms real");
}

BOOST_FIXTURE_TEST_CASE(key_expires_early_at_rate_4, shimmed_redis) {
  auto t0 = steady::now();
  BOOST_REQUIRE(server.command({"SET", "lease", "token", "PX", "2000"}) == "OK");
  clock.set_rate(4.0);
  auto gone = wait_gone("lease", t0, 5s);
  BOOST_TEST_MESSAGE("PX 2000 at rate 4 vanished after " << gone << " ms real");
  BOOST_TEST(gone >= 0);
  BOOST_TEST(gone < 1500);  // ~500 ms expected; 2000 ms without the shim
}

BOOST_FIXTURE_TEST_CASE(key_expires_early_after_offset_jump, shimmed_redis) {
  auto t0 = steady::now();
  BOOST_REQUIRE(server.command({"SET", "lease", "token", "PX", "2000"}) == "OK");
  clock.set_offset(5s);
  auto gone = wait_gone("lease", t0, 5s);
  BOOST_TEST_MESSAGE("PX 2000 after +5 s vanished after " << gone << " ms real");
  BOOST_TEST(gone >= 0);
  BOOST_TEST(gone < 1000);
}

BOOST_FIXTURE_TEST_CASE(key_survives_at_rate_1, shimmed_redis) {
  clock.set(0ms, 1.0);
  settle();
  auto t0 = steady::now();
  BOOST_REQUIRE(server.command({"SET", "lease", "token", "PX", "2000"}) == "OK");
  std::this_thread::sleep_for(1500ms);
  std::string v = server.command({"GET", "lease"});
  auto elapsed = since_ms(t0);
  if (elapsed < 1900) {
    BOOST_TEST(v == "token");
  } else {
    BOOST_TEST_MESSAGE("machine too slow for the survival check (" << elapsed << " ms)");
  }
  auto gone = wait_gone("lease", t0, 5s);
  BOOST_TEST(gone >= 1990);  // never before its TTL
}

BOOST_FIXTURE_TEST_CASE(key_expires_late_at_slow_rate, shimmed_redis) {
  clock.set_rate(0.25);
  settle();
  auto t0 = steady::now();
  BOOST_REQUIRE(server.command({"SET", "lease", "token", "PX", "300"}) == "OK");
  std::this_thread::sleep_for(700ms);  // 175 ms of server time
  std::string v = server.command({"GET", "lease"});
  if (since_ms(t0) < 1150) BOOST_TEST(v == "token");
  auto gone = wait_gone("lease", t0, 5s);
  BOOST_TEST(gone >= 1150);  // 300 ms of server time = 1200 ms real
}

BOOST_AUTO_TEST_SUITE_END()
