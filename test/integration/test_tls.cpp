// SPDX-License-Identifier: Apache-2.0
// rediss:// end to end: masters that speak only TLS (--tls-port, --port 0)
// with a certificate from a private CA the test makes with `openssl`.
#define BOOST_TEST_MODULE integration_tls
#include <boost/test/unit_test.hpp>

#include "masters.hpp"

#include <redlock/fenced_store.hpp>
#include <redlock/observer.hpp>
#include <redlock/redlock.hpp>

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
namespace asio = boost::asio;
using redlock::errc;
using redlock::testing::code_of;
using redlock::testing::eventually;
using redlock::testing::masters;
using redlock::testing::redis_options;

namespace {

const redlock::testing::tls_files& test_tls() { return redlock::testing::shared_test_tls(); }

redis_options tls_only() {
  redis_options o;
  o.tls = test_tls();
  return o;
}

redlock::client_options tls_client(const masters& m, std::chrono::milliseconds node_timeout = 200ms) {
  auto o = m.options(node_timeout);
  o.tls_ca_file = test_tls().ca_cert.string();
  return o;
}

// Every log line, for the tests that look for one.
struct log_lines : redlock::observer {
  std::mutex mutex;
  std::string text;
  void on_log(redlock::log_level, std::string_view message) override {
    std::lock_guard lock(mutex);
    text.append(message).append("\n");
  }
  bool has(std::string_view part) {
    std::lock_guard lock(mutex);
    return text.find(part) != std::string::npos;
  }
  std::string all() {
    std::lock_guard lock(mutex);
    return text;
  }
};

// Counts "connection closed" warnings: the client closed (or lost) a connection.
struct close_counter : redlock::observer {
  std::atomic<int> closed{0};
  void on_log(redlock::log_level, std::string_view message) override {
    if (message.find("connection closed") != std::string_view::npos) ++closed;
  }
};

// Acquires `name` and releases it: true when every master had granted it.
// A timeout is only false: the first request on a fresh TLS connection waits
// for the handshakes, which take long under ASan on a loaded machine.
bool acquires_on_every_master(redlock::client& c, masters& m, const std::string& name) {
  try {
    auto l = c.try_acquire(name, {.ttl = 5000ms});
    if (!l) return false;
    bool all = m.holding(name) == m.size();
    c.release(*l);
    return all;
  } catch (const redlock::error&) {
    return false;
  }
}

// Opens every connection of `c` (TCP, TLS and the script preload) so that
// the test's own requests meet warm connections.
void warm_up(redlock::client& c, masters& m) {
  BOOST_REQUIRE(eventually([&] { return acquires_on_every_master(c, m, "warm-up"); }));
}

}  // namespace

BOOST_AUTO_TEST_CASE(tls_masters_refuse_plain_connections) {
  // The fixture really is TLS-only: nothing listens in clear text.
  masters m(1, tls_only());
  BOOST_TEST(m[0].uri().rfind("rediss://", 0) == 0u);
  auto plain = m.options();
  plain.nodes = {"redis://127.0.0.1:" + std::to_string(m[0].port())};
  plain.connect_timeout = 300ms;
  redlock::client c(plain);
  BOOST_TEST(code_of([&] { c.acquire("plain"); }) != errc{});
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("plain") == 0u; }));
}

BOOST_AUTO_TEST_CASE(tls_acquire_release_and_renewal) {
  masters m(3, tls_only());
  redlock::client c(tls_client(m));
  warm_up(c, m);
  auto l = c.acquire("tls-job", {.ttl = 900ms, .renew = true});
  BOOST_TEST(eventually([&] { return m.holding("tls-job") == 3u; }));
  // Three lease times: only the watchdog's renewals over TLS keep it.
  std::this_thread::sleep_for(2700ms);
  BOOST_TEST(!l.lost());
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("tls-job") == 3u; }));
  c.extend(l, 5000ms);
  BOOST_TEST(eventually([&] { return std::stol(m[0].command({"PTTL", "tls-job"})) > 3000; }));
  c.release(l);
  BOOST_TEST(eventually([&] { return m.holding("tls-job") == 0u; }));
}

BOOST_AUTO_TEST_CASE(tls_certificate_from_an_unknown_ca_is_refused) {
  masters m(3, tls_only());
  // No tls_ca_file: the system store, which never signed the test CA. The
  // handshake fails within connect_timeout, well inside the node timeout.
  auto o = m.options(3000ms);
  o.connect_timeout = 1000ms;
  redlock::client c(o);
  BOOST_TEST(code_of([&] { c.acquire("unverified"); }) == errc::not_connected);
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("unverified") == 0u; }));
}

BOOST_AUTO_TEST_CASE(tls_fenced_acquisition_and_fenced_store) {
  masters m(3, tls_only());
  masters storage(1, tls_only());
  redlock::client c(tls_client(m));
  warm_up(c, m);
  auto first = c.acquire("tls-account", {.ttl = 5000ms, .fenced = true});
  BOOST_REQUIRE(first.fence().has_value());
  auto old_token = *first.fence();
  c.release(first);
  auto second = c.acquire("tls-account", {.ttl = 5000ms, .fenced = true});
  BOOST_REQUIRE(second.fence().has_value());
  BOOST_TEST(*second.fence() > old_token);

  redlock::fenced_store store(c.async().get_executor(), storage[0].uri(),
                              {.timeout = 1000ms, .tls_ca_file = test_tls().ca_cert.string()});
  store.write("tls-account", *second.fence(), "balance", "100");
  BOOST_TEST(code_of([&] { store.write("tls-account", old_token, "balance", "666"); }) == errc::stale_token);
  BOOST_TEST(storage[0].command({"GET", "balance"}) == "100");
  c.release(second);

  // Without the CA the store refuses to talk to the server at all.
  redlock::fenced_store unverified(c.async().get_executor(), storage[0].uri(), 3000ms);
  BOOST_TEST(code_of([&] { unverified.write("tls-account", 99, "balance", "0"); }) == errc::not_connected);
  BOOST_TEST(storage[0].command({"GET", "balance"}) == "100");
}

BOOST_AUTO_TEST_CASE(tls_stalled_master_is_closed_and_reconnected) {
  // The stall close destroys the TLS stream while its read is outstanding:
  // under ASan this is where a use after free showed.
  masters m(3, tls_only());
  auto o = tls_client(m, 50ms);
  o.stall_timeout = 300ms;
  auto closes = std::make_shared<close_counter>();
  o.observer = closes;
  redlock::client c(o);
  warm_up(c, m);
  m[0].pause();
  auto l = c.acquire("tls-stall", {.ttl = 5000ms});
  BOOST_TEST(l.remaining_validity() > 0ms);
  // The request to the stopped master stays unanswered: stall close.
  BOOST_TEST(eventually([&] { return closes->closed.load() >= 1; }));
  c.release(l);
  m[0].resume();
  // The master is back: a new TLS connection reaches it.
  BOOST_TEST(eventually([&] { return acquires_on_every_master(c, m, "tls-after-stall"); }));
}

BOOST_AUTO_TEST_CASE(tls_killed_master_then_restarted) {
  masters m(3, tls_only());
  auto o = tls_client(m, 100ms);
  redlock::client c(o);
  warm_up(c, m);
  m[1].kill9();
  auto l = c.acquire("tls-killed", {.ttl = 5000ms});  // a quorum over TLS without m1
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("tls-killed") == 2u; }));
  c.release(l);
  m[1].restart();
  BOOST_TEST(eventually([&] { return acquires_on_every_master(c, m, "tls-after-kill"); }));
}

BOOST_AUTO_TEST_CASE(tls_client_destroyed_with_requests_in_flight) {
  // Shutdown closes TLS streams with reads (and a request) outstanding.
  masters m(3, tls_only());
  auto o = tls_client(m, 50ms);
  {
    redlock::client c(o);
    warm_up(c, m);
    m[2].pause();
    auto l = c.acquire("tls-shutdown", {.ttl = 2000ms});
    BOOST_TEST(l.remaining_validity() > 0ms);
  }
  m[2].resume();
}

BOOST_AUTO_TEST_CASE(a_release_queued_behind_a_tls_handshake_reaches_the_master_before_shutdown) {
  masters m(3, tls_only());
  auto o = tls_client(m, 1000ms);
  o.connect_timeout = 10000ms;  // the handshake below waits for the test, never for this
  redlock::client holder(o);
  auto held = holder.acquire("handshake", {.ttl = 60000ms});
  BOOST_REQUIRE(eventually([&] { return m.holding("handshake") == 3u; }));
  std::thread resume;
  {
    // Another process would do this: release by token (redlock release).
    redlock::client releaser(o);
    auto l = releaser.async().adopt("handshake", held.token(), 60000ms);
    m[2].pause();  // its TLS handshake cannot finish: the release waits in the connection's queue
    resume = std::thread([&] {
      std::this_thread::sleep_for(500ms);
      m[2].resume();
    });
    releaser.release(l);  // confirmed by masters 0 and 1
  }  // the destructor waits (bounded) for the release still queued for master 2
  resume.join();
  BOOST_TEST(m[2].command({"EXISTS", "handshake"}) == "0", "the release never reached master 2");
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("handshake") == 0u; }));
}

namespace {

// A field of the master's INFO stats.
long long info_stat(const redlock::testing::redis_process& r, const std::string& field) {
  auto text = r.command({"INFO", "stats"});
  auto at = text.find(field + ":");
  BOOST_REQUIRE(at != std::string::npos);
  return std::stoll(text.substr(at + field.size() + 1));
}

}  // namespace

BOOST_AUTO_TEST_CASE(tls_requests_pipelined_on_one_connection_go_out_together) {
  // The replies to several batches of pipelined requests arrive as several
  // TLS records, which reach the client together. Answered record by record,
  // each sent the requests it unblocked on their own, so the batches never
  // merged again: with 64 in flight the master read 3 commands per read in
  // an optimized build (over 100 over TCP), 14 to 22 in this sanitized test
  // (64 to 76 since). Counted on the master, not timed.
  masters m(1, tls_only());
  asio::io_context io;
  // Generous deadlines: a slow (sanitized, loaded) run must not time out.
  auto o = tls_client(m, 5000ms);
  o.stall_timeout = 10000ms;
  redlock::async_client c(io.get_executor(), o);
  constexpr int loops = 64, pairs_per_loop = 200;
  int finished = 0, failures = 0;
  std::function<void(int, int)> pair = [&](int loop, int k) {
    if (k == pairs_per_loop) return void(++finished);
    auto name = "batch:" + std::to_string(loop) + ":" + std::to_string(k);
    c.async_acquire(name, {.ttl = 10000ms}, [&, loop, k](boost::system::error_code ec, redlock::lock l) {
      if (ec) {
        ++failures;
        return pair(loop, k + 1);
      }
      c.async_release(l, [&, loop, k](boost::system::error_code rec) {
        if (rec) ++failures;
        pair(loop, k + 1);
      });
    });
  };
  auto run = [&](int n) {
    finished = 0;
    for (int loop = 0; loop < n; ++loop) pair(loop, 0);
    auto limit = std::chrono::steady_clock::now() + 60s;
    while (finished < n && std::chrono::steady_clock::now() < limit) io.run_one_for(100ms);
    BOOST_REQUIRE_EQUAL(finished, n);
  };
  run(1);  // the connection open and the scripts loaded
  auto commands = info_stat(m[0], "total_commands_processed");
  auto reads = info_stat(m[0], "total_reads_processed");
  run(loops);
  BOOST_TEST(failures == 0);
  // Less the INFO commands (each one read and one command).
  commands = info_stat(m[0], "total_commands_processed") - commands - 1;
  reads = info_stat(m[0], "total_reads_processed") - reads - 1;
  BOOST_TEST_MESSAGE(commands << " commands in " << reads << " reads");
  BOOST_TEST(commands >= 2 * loops * pairs_per_loop);
  BOOST_TEST(commands >= 32 * reads, commands << " commands in " << reads << " reads");
}

namespace {

redis_options asking_for_client_certificates() {
  auto o = tls_only();
  o.tls_auth_clients = true;
  return o;
}

redlock::client_options with_client_certificate(redlock::client_options o) {
  o.tls_cert_file = test_tls().client_cert.string();
  o.tls_key_file = test_tls().client_key.string();
  return o;
}

// The bad_option message `options` are refused with when a client is built.
std::string refusal_of(const redlock::client_options& options) {
  try {
    redlock::client c(options);
  } catch (const redlock::error& e) {
    BOOST_TEST((e.code() == errc::bad_option), e.what());
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(mutual_tls_client_certificate_acquires) {
  masters m(3, asking_for_client_certificates());
  redlock::client c(with_client_certificate(tls_client(m)));
  warm_up(c, m);
  auto l = c.acquire("mtls-job", {.ttl = 5000ms, .fenced = true});
  BOOST_TEST(l.fence().has_value());
  BOOST_TEST(eventually([&] { return m.holding("mtls-job") == 3u; }));
  c.release(l);
  BOOST_TEST(eventually([&] { return m.holding("mtls-job") == 0u; }));
}

BOOST_AUTO_TEST_CASE(mutual_tls_without_a_client_certificate_fails_without_hanging) {
  masters m(3, asking_for_client_certificates());
  auto o = tls_client(m, 3000ms);
  o.connect_timeout = 1000ms;
  auto log = std::make_shared<log_lines>();
  o.observer = log;
  redlock::client c(o);
  // The masters hang up on a connection that shows no certificate (in TLS
  // 1.3 right after the client's side of the handshake, with an alert):
  // each request fails with the connection, none waits out the node timeout
  // for a reply that never comes (that would be errc::timeout).
  auto code = code_of([&] { c.acquire("no-certificate", {.ttl = 5000ms}); });
  BOOST_TEST((code == errc::connection_lost || code == errc::not_connected), redlock::make_error_code(code).message());
  // The log says why.
  BOOST_TEST(log->has("alert certificate required"), log->all());
  BOOST_TEST(m.holding("no-certificate") == 0u);
}

BOOST_AUTO_TEST_CASE(mutual_tls_bad_certificate_options_are_refused_when_the_client_is_built) {
  masters m(1, asking_for_client_certificates());
  auto good = with_client_certificate(tls_client(m));
  const auto cert = test_tls().client_cert.string(), key = test_tls().client_key.string();

  auto key_only = good;
  key_only.tls_cert_file.clear();
  auto why = refusal_of(key_only);
  BOOST_TEST(why.find("'" + key + "' is given without its certificate") != std::string::npos, why);

  auto cert_only = good;
  cert_only.tls_key_file.clear();
  why = refusal_of(cert_only);
  BOOST_TEST(why.find("'" + cert + "' is given without its key") != std::string::npos, why);

  auto missing = good;
  missing.tls_cert_file = "/nonexistent/client.crt";
  why = refusal_of(missing);
  BOOST_TEST(why.find("'/nonexistent/client.crt' cannot be read: No such file or directory") != std::string::npos, why);

  auto missing_key = good;
  missing_key.tls_key_file = "/nonexistent/client.key";
  why = refusal_of(missing_key);
  BOOST_TEST(why.find("'/nonexistent/client.key' cannot be read") != std::string::npos, why);

  // Files that are not PEM at all: the key and the certificate swapped.
  auto swapped = good;
  std::swap(swapped.tls_cert_file, swapped.tls_key_file);
  why = refusal_of(swapped);
  BOOST_TEST(why.find("TLS client certificate file '" + key + "' cannot be loaded") != std::string::npos, why);

  // The server's key: a key, but not the one of the client's certificate.
  auto wrong_key = good;
  wrong_key.tls_key_file = test_tls().key.string();
  why = refusal_of(wrong_key);
  BOOST_TEST(why.find("'" + test_tls().key.string() + "' does not fit the certificate in '" + cert + "'") !=
                 std::string::npos,
             why);
}
