// SPDX-License-Identifier: Apache-2.0
// Tests of redlock::fault::fault_proxy against a small Asio echo server and
// against a real redis-server. Timing assertions are lower bounds only.
#define BOOST_TEST_MODULE fault_proxy
#include <boost/test/unit_test.hpp>

#include "proxy/fault_proxy.hpp"
#include "redis_process.hpp"

#include <boost/asio.hpp>
#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <memory>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <random>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace std::chrono_literals;
using redlock::fault::direction;
using redlock::fault::fault_proxy;
using steady = std::chrono::steady_clock;

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Echoes every byte back; answers EOF with FIN.
class echo_server {
 public:
  echo_server() : acceptor_(io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)) {
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~echo_server() {
    asio::post(io_, [this] {
      boost::system::error_code ec;
      acceptor_.close(ec);
    });
    io_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  struct conn : std::enable_shared_from_this<conn> {
    explicit conn(tcp::socket s) : sock(std::move(s)) {}
    tcp::socket sock;
    std::array<char, 8192> buf{};
    void read() {
      sock.async_read_some(asio::buffer(buf), [self = shared_from_this()](auto ec, std::size_t n) {
        if (ec) {
          boost::system::error_code e;
          self->sock.shutdown(tcp::socket::shutdown_send, e);
          return;
        }
        asio::async_write(self->sock, asio::buffer(self->buf.data(), n),
                          [self](auto ec2, std::size_t) {
                            if (!ec2) self->read();
                          });
      });
    }
  };
  void accept() {
    acceptor_.async_accept([this](auto ec, tcp::socket s) {
      if (ec) return;
      boost::system::error_code e;
      s.set_option(tcp::no_delay(true), e);
      std::make_shared<conn>(std::move(s))->read();
      accept();
    });
  }
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

enum class rc { ok, timeout, eof, error };

// A blocking loopback client with explicit deadlines.
struct client {
  int fd = -1;
  int err = 0;  // errno of the last failure (connect or recv)

  explicit client(std::uint16_t port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      err = errno;  // out of descriptors, say: not connected, and says why
      return;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      err = errno;
      ::close(fd);
      fd = -1;
    }
  }
  ~client() {
    if (fd >= 0) ::close(fd);
  }
  bool connected() const { return fd >= 0; }

  bool send(const std::string& s) {
    std::size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        err = errno;
        return false;
      }
      off += std::size_t(n);
    }
    return true;
  }

  // Reads until `out` holds n bytes, EOF, an error, or the deadline.
  rc recv(std::string& out, std::size_t n, std::chrono::milliseconds timeout) {
    auto deadline = steady::now() + timeout;
    char buf[65536];
    while (out.size() < n) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
      if (left.count() <= 0) return rc::timeout;
      pollfd p{fd, POLLIN, 0};
      int r = ::poll(&p, 1, int(left.count()));
      if (r == 0) return rc::timeout;
      if (r < 0) {
        if (errno == EINTR) continue;
        err = errno;
        return rc::error;
      }
      ssize_t got = ::recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
      if (got == 0) return rc::eof;
      if (got < 0) {
        if (errno == EINTR) continue;
        err = errno;
        return rc::error;
      }
      out.append(buf, std::size_t(got));
    }
    return rc::ok;
  }

  // Sends `msg` and waits for its echo; returns the round trip or -1 ms.
  std::chrono::milliseconds round_trip(const std::string& msg, std::chrono::milliseconds timeout = 5s) {
    auto t0 = steady::now();
    if (!send(msg)) return -1ms;
    std::string got;
    if (recv(got, msg.size(), timeout) != rc::ok || got != msg) return -1ms;
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
  }
};

std::string random_bytes(std::size_t n, std::uint64_t seed = 42) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::chrono::milliseconds since(steady::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
}

// ---- hiredis helpers ------------------------------------------------------
struct redis_conn {
  redisContext* c = nullptr;
  explicit redis_conn(std::uint16_t port, std::chrono::milliseconds timeout = 2s) {
    timeval tv{long(timeout.count() / 1000), long(timeout.count() % 1000) * 1000};
    c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c && !c->err) redisSetTimeout(c, tv);
  }
  ~redis_conn() {
    if (c) redisFree(c);
  }
  bool ok() const { return c && !c->err; }
  std::string err() const { return c ? std::string(c->errstr) : "no context"; }
  // The reply as text, or "<error: ...>" when the connection failed.
  std::string cmd(const std::vector<std::string>& argv) {
    if (!ok()) return "<error: " + err() + ">";
    std::vector<const char*> a;
    std::vector<size_t> l;
    for (auto& s : argv) {
      a.push_back(s.data());
      l.push_back(s.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(c, int(a.size()), a.data(), l.data()));
    if (!r) return "<error: " + err() + ">";
    std::string out;
    switch (r->type) {
      case REDIS_REPLY_STRING:
      case REDIS_REPLY_STATUS:
      case REDIS_REPLY_ERROR: out.assign(r->str, r->len); break;
      case REDIS_REPLY_INTEGER: out = std::to_string(r->integer); break;
      case REDIS_REPLY_NIL: out = "(nil)"; break;
      default: out = "?"; break;
    }
    freeReplyObject(r);
    return out;
  }
};

bool is_error(const std::string& s) { return s.rfind("<error", 0) == 0; }

}  // namespace

// ===========================================================================
BOOST_AUTO_TEST_SUITE(echo)

BOOST_AUTO_TEST_CASE(pass_through) {
  echo_server echo;
  fault_proxy proxy(echo.port(), 1);
  BOOST_TEST(proxy.port() != 0);
  BOOST_TEST(proxy.upstream_port() == echo.port());
  client c(proxy.port());
  BOOST_REQUIRE(c.connected());
  auto msg = random_bytes(200 * 1024);
  BOOST_REQUIRE(c.send(msg));
  std::string got;
  BOOST_REQUIRE(c.recv(got, msg.size(), 5s) == rc::ok);
  BOOST_TEST((got == msg));
  // The proxy counts a write in its completion handler, which may run after
  // the peer has already read the bytes: wait for the count to settle.
  auto s = proxy.stats();
  for (auto until = std::chrono::steady_clock::now() + 2s;
       s.bytes_server_to_client < msg.size() && std::chrono::steady_clock::now() < until; s = proxy.stats())
    std::this_thread::sleep_for(1ms);
  BOOST_TEST(s.connections_accepted == 1u);
  BOOST_TEST(s.open_connections == 1u);
  BOOST_TEST(s.bytes_client_to_server == msg.size());
  BOOST_TEST(s.bytes_server_to_client == msg.size());
  BOOST_TEST(s.faults_applied == 0u);
}

BOOST_AUTO_TEST_CASE(latency_adds_delay) {
  echo_server echo;
  fault_proxy proxy(echo.port(), 2);
  client c(proxy.port());
  BOOST_REQUIRE(c.connected());
  BOOST_REQUIRE(c.round_trip("warm-up").count() >= 0);

  proxy.set_latency(direction::client_to_server, 100ms);
  auto rt = c.round_trip("ping");
  BOOST_TEST(rt.count() >= 100);

  proxy.set_latency(direction::both, 60ms, 20ms);  // 40..80 ms each way
  for (int i = 0; i < 3; ++i) BOOST_TEST(c.round_trip("ping" + std::to_string(i)).count() >= 80);

  proxy.set_latency(direction::both, 200ms, 0ms, 0.0);  // probability 0: disabled
  BOOST_TEST(c.round_trip("fast").count() >= 0);
  BOOST_TEST(proxy.stats().delayed_chunks == 7u);

  // Byte order survives latency with jitter over many pipelined chunks.
  proxy.set_latency(direction::both, 5ms, 5ms);
  std::string all;
  for (int i = 0; i < 50; ++i) {
    auto part = "<" + std::to_string(i) + ">";
    all += part;
    BOOST_REQUIRE(c.send(part));
    std::this_thread::sleep_for(1ms);
  }
  std::string got;
  BOOST_REQUIRE(c.recv(got, all.size(), 5s) == rc::ok);
  BOOST_TEST(got == all);
}

BOOST_AUTO_TEST_CASE(bandwidth_limit) {
  echo_server echo;
  fault_proxy proxy(echo.port(), 3);
  proxy.set_bandwidth(direction::server_to_client, 50'000);
  client c(proxy.port());
  BOOST_REQUIRE(c.connected());
  auto msg = random_bytes(10'000);
  auto rt = c.round_trip(msg);
  BOOST_TEST(rt.count() >= 150);  // 10 kB at 50 kB/s = 200 ms
  BOOST_TEST(proxy.stats().throttled_chunks >= 1u);
}

BOOST_AUTO_TEST_CASE(blackhole_then_heal) {
  echo_server echo;
  fault_proxy proxy(echo.port(), 4);
  client old(proxy.port());
  BOOST_REQUIRE(old.round_trip("before").count() >= 0);

  proxy.set_blackhole(direction::client_to_server);
  BOOST_REQUIRE(old.send("held"));
  std::string got;
  BOOST_TEST((old.recv(got, 4, 300ms) == rc::timeout));

  client fresh(proxy.port());  // accepted, but nothing gets through
  BOOST_REQUIRE(fresh.connected());
  BOOST_REQUIRE(fresh.send("x"));
  std::string got2;
  BOOST_TEST((fresh.recv(got2, 1, 200ms) == rc::timeout));
  BOOST_TEST(proxy.stats().blackholed_pipes >= 2u);

  proxy.heal();
  client after(proxy.port());
  BOOST_TEST(after.round_trip("after").count() >= 0);
  // Held bytes are delivered late, in order, once healed.
  BOOST_TEST((old.recv(got, 4, 2s) == rc::ok));
  BOOST_TEST(got == "held");
}

BOOST_AUTO_TEST_CASE(reset_now_and_after) {
  echo_server echo;
  fault_proxy proxy(echo.port(), 5);
  {
    client c(proxy.port());
    BOOST_REQUIRE(c.round_trip("hello").count() >= 0);
    proxy.reset_now(direction::server_to_client);
    std::string got;
    auto r = c.recv(got, 1, 2s);
    BOOST_TEST((r == rc::error));
    BOOST_TEST(c.err == ECONNRESET);
  }
  {
    proxy.set_reset(direction::server_to_client, 200ms);
    auto t0 = steady::now();
    client c(proxy.port());
    BOOST_REQUIRE(c.round_trip("quick").count() >= 0);
    std::string got;
    auto r = c.recv(got, 1, 3s);
    BOOST_TEST((r == rc::error));
    BOOST_TEST(c.err == ECONNRESET);
    BOOST_TEST(since(t0).count() >= 200);
  }
  proxy.heal();
  client c(proxy.port());
  BOOST_TEST(c.round_trip("healed").count() >= 0);
  BOOST_TEST(proxy.stats().resets == 2u);
}

BOOST_AUTO_TEST_CASE(close_after_bytes) {
  echo_server echo;
  fault_proxy proxy(echo.port(), 6);
  proxy.set_close_after(direction::server_to_client, 10);
  client c(proxy.port());
  BOOST_REQUIRE(c.send(std::string(100, 'a')));
  std::string got;
  auto r = c.recv(got, 100, 3s);
  BOOST_TEST((r == rc::eof || r == rc::error));
  BOOST_TEST(got == std::string(10, 'a'));
  BOOST_TEST(proxy.stats().closes_after_bytes == 1u);
}

BOOST_AUTO_TEST_CASE(slicing_keeps_bytes) {
  echo_server echo;
  fault_proxy proxy(echo.port(), 7);
  proxy.set_slicing(direction::both, 64, 2ms);
  client c(proxy.port());
  auto msg = random_bytes(3000, 7);
  auto rt = c.round_trip(msg);
  // 47 pieces 2 ms apart; the echo pipelines them back piece by piece.
  BOOST_TEST(rt.count() >= 46 * 2);
  BOOST_TEST(proxy.stats().sliced_chunks >= 2u);
  proxy.set_slicing(direction::both, 1, 0ms);  // byte by byte
  auto msg2 = random_bytes(500, 8);
  BOOST_TEST(c.round_trip(msg2).count() >= 0);
}

BOOST_AUTO_TEST_CASE(slow_close) {
  echo_server echo;
  fault_proxy proxy(echo.port(), 8);
  proxy.set_slow_close(direction::client_to_server, 250ms);
  client c(proxy.port());
  BOOST_REQUIRE(c.round_trip("x").count() >= 0);
  auto t0 = steady::now();
  ::shutdown(c.fd, SHUT_WR);
  std::string got;
  BOOST_TEST((c.recv(got, 1, 3s) == rc::eof));
  BOOST_TEST(since(t0).count() >= 250);
  BOOST_TEST(proxy.stats().slow_closes == 1u);
}

BOOST_AUTO_TEST_CASE(down_refuses_and_drops) {
  echo_server echo;
  fault_proxy proxy(echo.port(), 9);
  client live(proxy.port());
  BOOST_REQUIRE(live.round_trip("x").count() >= 0);
  proxy.set_down(true);
  BOOST_TEST(proxy.down());
  client refused(proxy.port());
  BOOST_TEST(!refused.connected());
  BOOST_TEST(refused.err == ECONNREFUSED);
  std::string got;
  auto r = live.recv(got, 1, 2s);
  BOOST_TEST((r == rc::error || r == rc::eof));
  BOOST_TEST(proxy.stats().dropped_by_down == 1u);
  proxy.set_down(false);
  BOOST_TEST(!proxy.down());
  client back(proxy.port());
  BOOST_TEST(back.round_trip("back").count() >= 0);
}

BOOST_AUTO_TEST_CASE(seed_reproduces_draws) {
  echo_server echo;
  auto run = [&](std::uint64_t seed) {
    fault_proxy proxy(echo.port(), seed);
    proxy.set_latency(direction::client_to_server, 1ms, 0ms, 0.5);
    client c(proxy.port());
    for (int i = 0; i < 40; ++i) BOOST_REQUIRE(c.round_trip("m" + std::to_string(i)).count() >= 0);
    return proxy.stats().delayed_chunks;
  };
  auto a = run(1234), b = run(1234);
  BOOST_TEST(a == b);
  BOOST_TEST(a > 0u);
  BOOST_TEST(a < 40u);
}

BOOST_AUTO_TEST_CASE(destruction_while_holding_data) {
  echo_server echo;
  auto t0 = steady::now();
  {
    fault_proxy proxy(echo.port(), 10);
    client a(proxy.port()), b(proxy.port());
    BOOST_REQUIRE(a.round_trip("x").count() >= 0);
    proxy.set_latency(direction::client_to_server, 10s);
    BOOST_REQUIRE(a.send(random_bytes(100'000)));
    proxy.set_blackhole(direction::server_to_client);
    BOOST_REQUIRE(b.send("y"));
    proxy.set_slow_close(direction::both, 10s);
    std::this_thread::sleep_for(50ms);
  }
  BOOST_TEST(since(t0).count() < 3000);
}

BOOST_AUTO_TEST_CASE(upstream_down_resets_client) {
  auto dead_port = redlock::testing::free_port();
  fault_proxy proxy(dead_port, 11);
  client c(proxy.port());
  // The proxy accepts, fails upstream and resets us. On a loaded machine the
  // reset can land before our blocking connect() has returned, and connect()
  // then reports it (ECONNRESET; ECONNABORTED should the socket have no
  // error recorded): the same outcome, seen earlier. Any other errno is a
  // real failure.
  if (c.connected()) {
    std::string got;
    auto r = c.recv(got, 1, 2s);
    BOOST_TEST((r == rc::error || r == rc::eof));
  } else {
    BOOST_TEST((c.err == ECONNRESET || c.err == ECONNABORTED),
               "connect failed with errno " << c.err);
  }
  BOOST_TEST(proxy.stats().upstream_failures == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

// ===========================================================================
BOOST_AUTO_TEST_SUITE(redis)

struct redis_fixture {
  redlock::testing::redis_process server;
  fault_proxy proxy{server.port(), 99};
};

BOOST_FIXTURE_TEST_CASE(pass_through, redis_fixture) {
  redis_conn c(proxy.port());
  BOOST_REQUIRE_MESSAGE(c.ok(), c.err());
  BOOST_TEST(c.cmd({"SET", "k", "v"}) == "OK");
  BOOST_TEST(c.cmd({"GET", "k"}) == "v");
  BOOST_TEST(server.command({"GET", "k"}) == "v");
}

BOOST_FIXTURE_TEST_CASE(latency, redis_fixture) {
  redis_conn c(proxy.port());
  BOOST_REQUIRE(c.cmd({"PING"}) == "PONG");
  proxy.set_latency(direction::server_to_client, 80ms, 10ms);
  auto t0 = steady::now();
  BOOST_TEST(c.cmd({"PING"}) == "PONG");
  BOOST_TEST(since(t0).count() >= 70);
}

BOOST_FIXTURE_TEST_CASE(blackhole_times_out_then_heal, redis_fixture) {
  proxy.set_blackhole(direction::both);
  redis_conn c(proxy.port(), 300ms);
  BOOST_REQUIRE(c.ok());  // the proxy accepts
  auto t0 = steady::now();
  BOOST_TEST(is_error(c.cmd({"SET", "bh", "1"})));
  BOOST_TEST(since(t0).count() >= 250);
  proxy.heal();
  redis_conn d(proxy.port());
  BOOST_TEST(d.cmd({"PING"}) == "PONG");
}

BOOST_FIXTURE_TEST_CASE(reset_is_a_connection_error, redis_fixture) {
  redis_conn c(proxy.port());
  BOOST_REQUIRE(c.cmd({"PING"}) == "PONG");
  proxy.set_reset(direction::server_to_client);
  std::this_thread::sleep_for(50ms);
  BOOST_TEST(is_error(c.cmd({"PING"})));
  BOOST_TEST_MESSAGE("hiredis after reset: " << c.err());
  proxy.heal();
  redis_conn d(proxy.port());
  BOOST_TEST(d.cmd({"PING"}) == "PONG");
}

BOOST_FIXTURE_TEST_CASE(close_after_bytes, redis_fixture) {
  server.command({"SET", "big", std::string(1000, 'z')});
  proxy.set_close_after(direction::server_to_client, 100);
  redis_conn c(proxy.port());
  BOOST_TEST(is_error(c.cmd({"GET", "big"})));
  BOOST_TEST(proxy.stats().closes_after_bytes == 1u);
}

BOOST_FIXTURE_TEST_CASE(slicing_delivers_exact_bytes, redis_fixture) {
  proxy.set_slicing(direction::both, 100, 1ms);
  redis_conn c(proxy.port());
  auto value = random_bytes(8000, 5);
  BOOST_TEST(c.cmd({"SET", "sliced", value}) == "OK");
  BOOST_TEST((c.cmd({"GET", "sliced"}) == value));
  BOOST_TEST(proxy.stats().sliced_chunks >= 2u);
}

BOOST_FIXTURE_TEST_CASE(down_refuses_connections, redis_fixture) {
  redis_conn live(proxy.port());
  BOOST_REQUIRE(live.cmd({"PING"}) == "PONG");
  proxy.set_down(true);
  redis_conn refused(proxy.port());
  BOOST_TEST(!refused.ok());
  BOOST_TEST(is_error(live.cmd({"PING"})));
  proxy.heal();
  redis_conn back(proxy.port());
  BOOST_TEST(back.cmd({"PING"}) == "PONG");
}

BOOST_AUTO_TEST_SUITE_END()
