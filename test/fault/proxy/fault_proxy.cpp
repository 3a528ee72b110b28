// SPDX-License-Identifier: Apache-2.0
#include "fault_proxy.hpp"

#include <boost/asio.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <future>
#include <list>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace redlock::fault {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;
using error_code = boost::system::error_code;

namespace {

constexpr std::size_t read_chunk = 16 * 1024;
constexpr std::size_t high_water = 1 << 20;  // stop reading a source beyond this much queued
constexpr std::size_t low_water = high_water / 2;

constexpr int c2s = 0;
constexpr int s2c = 1;

// The faults configured for one direction.
struct dir_faults {
  fault_proxy::duration latency{0}, jitter{0};
  double latency_p = 0;
  std::uint64_t bps = 0;
  double bandwidth_p = 0;
  std::size_t slice = 0;
  fault_proxy::duration slice_delay{0};
  double slice_p = 0;
  double blackhole_p = 0;
  fault_proxy::duration reset_after{0};
  double reset_p = 0;
  fault_proxy::duration slow_close{0};
  double slow_close_p = 0;
  std::uint64_t close_after = 0;
  double close_after_p = 0;
};

enum counter { k_delayed, k_throttled, k_sliced, k_blackholed, k_resets, k_slow_closes,
               k_closes_after, k_dropped, k_held_chunks, k_resets_pending, k_count };

double clamp_p(double p) { return p != p ? 0.0 : std::clamp(p, 0.0, 1.0); }

template <class F>
void for_dirs(direction d, F&& f) {
  if (d != direction::server_to_client) f(c2s);
  if (d != direction::client_to_server) f(s2c);
}

void close_socket(tcp::socket& s, bool abort) {
  error_code ec;
  if (!s.is_open()) return;
  if (abort) {
    s.set_option(asio::socket_base::linger(true, 0), ec);
  } else {
    s.shutdown(tcp::socket::shutdown_both, ec);
  }
  s.close(ec);
}

}  // namespace

struct proxy_session;

struct fault_proxy::impl {
  asio::io_context io;  // first member: destroyed last
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  tcp::endpoint upstream;
  std::atomic<std::uint16_t> port{0};
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  unsigned acceptor_gen = 0;
  bool is_down = false;
  bool stopping = false;
  std::mt19937_64 rng;
  dir_faults faults[2];
  std::list<std::weak_ptr<proxy_session>> sessions;

  std::atomic<bool> down_flag{false};
  std::atomic<std::uint64_t> accepted{0}, upstream_failures{0}, open{0};
  std::atomic<std::uint64_t> bytes[2]{};
  std::atomic<std::uint64_t> counters[k_count]{};

  std::thread thread;
  std::future<void> thread_done;

  impl(std::uint16_t upstream_port, std::uint64_t seed)
      : upstream(asio::ip::address_v4::loopback(), upstream_port), rng(seed) {}

  void count(counter c) { counters[c].fetch_add(1, std::memory_order_relaxed); }

  bool draw(double p) {
    if (p <= 0) return false;
    if (p >= 1) return true;
    return static_cast<double>(rng() >> 11) * 0x1.0p-53 < p;
  }

  // Uniform in [-j, +j] microseconds.
  std::int64_t jitter_us(fault_proxy::duration j) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(j).count();
    if (us <= 0) return 0;
    return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(2 * us + 1)) - us;
  }

  template <class F>
  void run(F&& f) {
    if (std::this_thread::get_id() == thread.get_id()) {
      f();
      return;
    }
    std::packaged_task<void()> task(std::forward<F>(f));
    auto fut = task.get_future();
    asio::post(io, [&task] { task(); });
    fut.get();
  }

  template <class F>
  void for_each_session(F&& f);

  void open_acceptor(std::uint16_t want_port);
  void do_accept();
  void set_down(bool down);
  void heal();
};

// One proxied connection: the client socket, the upstream socket and one pipe
// per direction. Lives as long as a handler holds it; everything runs on the
// proxy's io thread.
struct proxy_session : std::enable_shared_from_this<proxy_session> {
  struct item {
    std::vector<char> data;
    std::size_t off = 0;
    steady::time_point not_before;
    std::uint64_t bps = 0;
    std::size_t slice = 0;
    fault_proxy::duration slice_delay{0};
  };

  struct pipe {
    explicit pipe(asio::io_context& io) : timer(io), reset_timer(io) {}
    std::array<char, read_chunk> rbuf{};
    std::deque<item> q;
    std::size_t queued = 0;
    bool reading = false;  // a read is in flight
    bool busy = false;     // a write or a writer wait is in flight
    bool eof = false;      // the source sent FIN
    bool held = false;     // blackholed
    bool fin_scheduled = false;
    bool fin_done = false;
    bool reset_pending = false;
    unsigned reset_gen = 0;
    std::optional<std::uint64_t> budget;  // close-after-bytes
    steady::time_point bw_next{};
    asio::steady_timer timer;        // writer waits (latency, slicing, pacing, slow close)
    asio::steady_timer reset_timer;  // the reset fault
  };

  proxy_session(fault_proxy::impl& px, tcp::socket s)
      : px(px), client(std::move(s)), server(px.io), p{pipe(px.io), pipe(px.io)} {}

  fault_proxy::impl& px;
  tcp::socket client;
  tcp::socket server;
  pipe p[2];
  bool closed = false;
  bool started = false;
  bool awaiting_reply = false;  // the client's last bytes came after redis's last

  // A request without its reply yet, or bytes still in the proxy.
  bool pending() const { return awaiting_reply || p[0].queued > 0 || p[1].queued > 0; }
  // An abort by a fault: counted as acting when it cut pending traffic.
  void abort_by_fault(bool abort_client, bool abort_server) {
    if (!closed && pending()) px.count(k_resets_pending);
    close(abort_client, abort_server);
  }

  tcp::socket& src(int d) { return d == c2s ? client : server; }
  tcp::socket& dst(int d) { return d == c2s ? server : client; }

  void connect() {
    error_code ec;
    client.set_option(tcp::no_delay(true), ec);
    server.async_connect(px.upstream, [self = shared_from_this()](const error_code& ec) {
      if (self->closed) return;
      if (ec) {
        self->px.upstream_failures.fetch_add(1, std::memory_order_relaxed);
        self->close(true, true);
        return;
      }
      self->start();
    });
  }

  void start() {
    error_code ec;
    server.set_option(tcp::no_delay(true), ec);
    started = true;
    px.open.fetch_add(1, std::memory_order_relaxed);
    for (int d : {c2s, s2c}) {
      const auto& f = px.faults[d];
      if (px.draw(f.close_after_p)) p[d].budget = f.close_after;
      if (px.draw(f.reset_p)) arm_reset(d, f.reset_after);
    }
    start_read(c2s);
    start_read(s2c);
  }

  // abort_*: RST that side (SO_LINGER 0), else FIN.
  void close(bool abort_client, bool abort_server) {
    if (closed) return;
    closed = true;
    close_socket(client, abort_client);
    close_socket(server, abort_server);
    for (auto& pp : p) {
      pp.timer.cancel();
      pp.reset_timer.cancel();
    }
    if (started) px.open.fetch_sub(1, std::memory_order_relaxed);
  }

  // ---- reading ------------------------------------------------------------
  void start_read(int d) {
    auto& pp = p[d];
    if (closed || !started || pp.reading || pp.eof || pp.queued >= high_water) return;
    pp.reading = true;
    src(d).async_read_some(asio::buffer(pp.rbuf),
                           [self = shared_from_this(), d](const error_code& ec, std::size_t n) {
                             self->on_read(d, ec, n);
                           });
  }

  void on_read(int d, const error_code& ec, std::size_t n) {
    auto& pp = p[d];
    pp.reading = false;
    if (closed) return;
    if (n > 0) on_chunk(d, n);
    if (closed) return;
    if (ec == asio::error::eof) {
      pp.eof = true;
      pump(d);
      return;
    }
    if (ec) {  // the source reset or failed: pass it on as a reset
      close(true, true);
      return;
    }
    start_read(d);
  }

  void on_chunk(int d, std::size_t n) {
    auto& pp = p[d];
    const auto& f = px.faults[d];
    item it;
    it.data.assign(pp.rbuf.data(), pp.rbuf.data() + n);
    auto now = steady::now();
    it.not_before = now;
    awaiting_reply = d == c2s;
    if (!pp.held && px.draw(f.blackhole_p)) {
      pp.held = true;
      px.count(k_blackholed);
    }
    if (pp.held) px.count(k_held_chunks);
    if ((f.latency.count() > 0 || f.jitter.count() > 0) && px.draw(f.latency_p)) {
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(f.latency).count() +
                px.jitter_us(f.jitter);
      it.not_before = now + std::chrono::microseconds(std::max<std::int64_t>(us, 0));
      px.count(k_delayed);
    }
    if (f.bps > 0 && px.draw(f.bandwidth_p)) {
      it.bps = f.bps;
      px.count(k_throttled);
    }
    if (f.slice > 0 && px.draw(f.slice_p)) {
      it.slice = f.slice;
      it.slice_delay = f.slice_delay;
      px.count(k_sliced);
    }
    pp.queued += n;
    pp.q.push_back(std::move(it));
    pump(d);
  }

  // ---- writing ------------------------------------------------------------
  void wait_until(int d, steady::time_point t) {
    auto& pp = p[d];
    pp.busy = true;
    pp.timer.expires_at(t);
    pp.timer.async_wait([self = shared_from_this(), d](const error_code&) {
      self->p[d].busy = false;
      if (self->closed) return;
      self->pump(d);
    });
  }

  void pump(int d) {
    auto& pp = p[d];
    if (closed || pp.busy || pp.held) return;
    if (pp.q.empty()) {
      if (pp.eof && !pp.fin_scheduled) begin_fin(d);
      return;
    }
    auto& it = pp.q.front();
    auto now = steady::now();
    if (it.not_before > now) return wait_until(d, it.not_before);
    if (it.bps && pp.bw_next > now) return wait_until(d, pp.bw_next);
    std::size_t n = it.data.size() - it.off;
    if (it.slice) n = std::min(n, it.slice);
    if (it.bps) n = std::min<std::size_t>(n, std::max<std::uint64_t>(1, it.bps / 100));
    if (pp.budget) {
      if (*pp.budget == 0) return close_after_bytes();
      n = static_cast<std::size_t>(std::min<std::uint64_t>(n, *pp.budget));
    }
    pp.busy = true;
    asio::async_write(dst(d), asio::buffer(it.data.data() + it.off, n),
                      [self = shared_from_this(), d](const error_code& ec, std::size_t w) {
                        self->on_written(d, ec, w);
                      });
  }

  void on_written(int d, const error_code& ec, std::size_t n) {
    auto& pp = p[d];
    pp.busy = false;
    if (closed) return;
    if (ec) {
      close(true, true);
      return;
    }
    px.bytes[d].fetch_add(n, std::memory_order_relaxed);
    auto& it = pp.q.front();
    it.off += n;
    pp.queued -= n;
    auto now = steady::now();
    if (it.bps) {
      pp.bw_next = std::max(pp.bw_next, now) +
                   std::chrono::nanoseconds(static_cast<std::int64_t>(n * 1'000'000'000ull / it.bps));
    }
    if (it.off == it.data.size()) {
      pp.q.pop_front();
    } else if (it.slice) {
      it.not_before = now + it.slice_delay;
    }
    if (pp.budget) {
      *pp.budget -= std::min<std::uint64_t>(*pp.budget, n);
      if (*pp.budget == 0) return close_after_bytes();
    }
    if (pp.queued < low_water) start_read(d);
    pump(d);
  }

  void close_after_bytes() {
    px.count(k_closes_after);
    close(false, false);
  }

  void begin_fin(int d) {
    auto& pp = p[d];
    pp.fin_scheduled = true;
    const auto& f = px.faults[d];
    if (px.draw(f.slow_close_p)) {
      px.count(k_slow_closes);
      pp.busy = true;
      pp.timer.expires_after(f.slow_close);
      pp.timer.async_wait([self = shared_from_this(), d](const error_code&) {
        self->p[d].busy = false;
        if (self->closed) return;
        self->do_fin(d);
      });
      return;
    }
    do_fin(d);
  }

  void do_fin(int d) {
    p[d].fin_done = true;
    error_code ec;
    dst(d).shutdown(tcp::socket::shutdown_send, ec);
    if (p[c2s].fin_done && p[s2c].fin_done) close(false, false);
  }

  // ---- fault hooks called by the proxy ----------------------------------
  void arm_reset(int d, fault_proxy::duration after) {
    auto& pp = p[d];
    unsigned gen = ++pp.reset_gen;
    pp.reset_pending = true;
    pp.reset_timer.expires_after(after);
    pp.reset_timer.async_wait([self = shared_from_this(), d, gen](const error_code& ec) {
      if (ec || self->closed || gen != self->p[d].reset_gen) return;
      self->fire_reset(d);
    });
  }

  void cancel_reset(int d) {
    auto& pp = p[d];
    ++pp.reset_gen;
    pp.reset_pending = false;
    pp.reset_timer.cancel();
  }

  void fire_reset(int d) {
    px.count(k_resets);
    bool both = p[1 - d].reset_pending;
    abort_by_fault(d == s2c || both, d == c2s || both);
  }

  void release(int d) {
    auto& pp = p[d];
    if (!pp.held) return;
    pp.held = false;
    start_read(d);
    pump(d);
  }

  // heal(): forget per-connection faults, release held data, send pending FINs.
  void heal() {
    if (closed) return;
    for (int d : {c2s, s2c}) {
      cancel_reset(d);
      p[d].budget.reset();
      p[d].timer.cancel();  // wakes the writer: a pending slow close finishes now
      release(d);
    }
  }
};

template <class F>
void fault_proxy::impl::for_each_session(F&& f) {
  for (auto it = sessions.begin(); it != sessions.end();) {
    if (auto s = it->lock()) {
      ++it;
      if (!s->closed) f(*s);
    } else {
      it = sessions.erase(it);
    }
  }
}

void fault_proxy::impl::open_acceptor(std::uint16_t want_port) {
  // Re-listening on the same port can race with another process; retry a bit.
  for (int attempt = 0;; ++attempt) {
    error_code ec;
    tcp::acceptor a(io);
    a.open(tcp::v4(), ec);
    if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) a.bind(tcp::endpoint(asio::ip::address_v4::loopback(), want_port), ec);
    if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) {
      acceptor = std::move(a);
      port = acceptor.local_endpoint().port();
      ++acceptor_gen;
      do_accept();
      return;
    }
    if (attempt >= 100 || want_port == 0) {
      throw std::runtime_error("fault_proxy: cannot listen on 127.0.0.1:" +
                               std::to_string(want_port) + ": " + ec.message());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void fault_proxy::impl::do_accept() {
  unsigned gen = acceptor_gen;
  acceptor.async_accept([this, gen](const error_code& ec, tcp::socket s) {
    if (stopping || is_down || gen != acceptor_gen) {
      close_socket(s, true);
      return;
    }
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // EMFILE and friends: try again shortly instead of spinning.
      accept_retry.expires_after(std::chrono::milliseconds(10));
      accept_retry.async_wait([this, gen](const error_code& e) {
        if (!e && !stopping && !is_down && gen == acceptor_gen) do_accept();
      });
      return;
    }
    accepted.fetch_add(1, std::memory_order_relaxed);
    for (auto it = sessions.begin(); it != sessions.end();) {
      it = it->expired() ? sessions.erase(it) : std::next(it);
    }
    auto session = std::make_shared<proxy_session>(*this, std::move(s));
    sessions.push_back(session);
    session->connect();
    do_accept();
  });
}

void fault_proxy::impl::set_down(bool down) {
  if (down == is_down) return;
  if (down) {
    is_down = true;
    down_flag = true;
    ++acceptor_gen;
    error_code ec;
    acceptor.close(ec);
    accept_retry.cancel();
    for_each_session([this](proxy_session& s) {
      count(k_dropped);
      s.abort_by_fault(true, true);
    });
  } else {
    open_acceptor(port);
    is_down = false;
    down_flag = false;
  }
}

void fault_proxy::impl::heal() {
  faults[c2s] = dir_faults{};
  faults[s2c] = dir_faults{};
  for_each_session([](proxy_session& s) { s.heal(); });
  set_down(false);
}

// ---- fault_proxy ----------------------------------------------------------

fault_proxy::fault_proxy(std::uint16_t upstream_port, std::uint64_t seed)
    : impl_(std::make_unique<impl>(upstream_port, seed)) {
  impl_->open_acceptor(0);
  impl_->work.emplace(impl_->io.get_executor());
  std::promise<void> done;
  impl_->thread_done = done.get_future();
  impl_->thread = std::thread([p = impl_.get(), done = std::move(done)]() mutable {
    for (;;) {
      try {
        p->io.run();
        break;
      } catch (...) {
        // A handler threw (it should not): keep the proxy alive.
      }
    }
    done.set_value();
  });
}

fault_proxy::~fault_proxy() {
  auto* p = impl_.get();
  try {
    p->run([p] {
      p->stopping = true;
      ++p->acceptor_gen;
      error_code ec;
      p->acceptor.close(ec);
      p->accept_retry.cancel();
      p->for_each_session([](proxy_session& s) { s.close(true, true); });
      p->sessions.clear();
    });
  } catch (...) {
  }
  p->work.reset();
  // Everything is closed, so run() should return at once; never hang on it.
  if (p->thread_done.wait_for(std::chrono::seconds(2)) != std::future_status::ready) p->io.stop();
  p->thread.join();
}

std::uint16_t fault_proxy::port() const noexcept { return impl_->port; }
std::uint16_t fault_proxy::upstream_port() const noexcept { return impl_->upstream.port(); }
std::string fault_proxy::uri() const { return "redis://127.0.0.1:" + std::to_string(port()); }

void fault_proxy::set_latency(direction d, duration latency, duration jitter, double probability) {
  probability = clamp_p(probability);
  impl_->run([&] {
    for_dirs(d, [&](int i) {
      auto& f = impl_->faults[i];
      f.latency = std::max(latency, duration{0});
      f.jitter = std::max(jitter, duration{0});
      f.latency_p = probability;
    });
  });
}

void fault_proxy::set_bandwidth(direction d, std::uint64_t bytes_per_second, double probability) {
  probability = clamp_p(probability);
  impl_->run([&] {
    for_dirs(d, [&](int i) {
      impl_->faults[i].bps = bytes_per_second;
      impl_->faults[i].bandwidth_p = probability;
    });
  });
}

void fault_proxy::set_slicing(direction d, std::size_t piece_bytes, duration delay, double probability) {
  probability = clamp_p(probability);
  impl_->run([&] {
    for_dirs(d, [&](int i) {
      auto& f = impl_->faults[i];
      f.slice = piece_bytes;
      f.slice_delay = std::max(delay, duration{0});
      f.slice_p = probability;
    });
  });
}

void fault_proxy::set_blackhole(direction d, double probability) {
  probability = clamp_p(probability);
  impl_->run([&] {
    for_dirs(d, [&](int i) {
      impl_->faults[i].blackhole_p = probability;
      impl_->for_each_session([&](proxy_session& s) {
        if (probability <= 0) {
          s.release(i);
        } else if (!s.p[i].held && impl_->draw(probability)) {
          s.p[i].held = true;
          impl_->count(k_blackholed);
          if (s.p[i].queued > 0) impl_->count(k_held_chunks);  // bytes already on their way, held
        }
      });
    });
  });
}

void fault_proxy::set_reset(direction d, duration after, double probability) {
  probability = clamp_p(probability);
  after = std::max(after, duration{0});
  impl_->run([&] {
    for_dirs(d, [&](int i) {
      impl_->faults[i].reset_after = after;
      impl_->faults[i].reset_p = probability;
      impl_->for_each_session([&](proxy_session& s) {
        s.cancel_reset(i);
        if (s.started && impl_->draw(probability)) s.arm_reset(i, after);
      });
    });
  });
}

void fault_proxy::reset_now(direction d, double probability) {
  probability = clamp_p(probability);
  impl_->run([&] {
    impl_->for_each_session([&](proxy_session& s) {
      if (!impl_->draw(probability)) return;
      impl_->count(k_resets);
      s.abort_by_fault(d != direction::client_to_server, d != direction::server_to_client);
    });
  });
}

void fault_proxy::set_slow_close(direction d, duration delay, double probability) {
  probability = clamp_p(probability);
  impl_->run([&] {
    for_dirs(d, [&](int i) {
      impl_->faults[i].slow_close = std::max(delay, duration{0});
      impl_->faults[i].slow_close_p = probability;
    });
  });
}

void fault_proxy::set_close_after(direction d, std::uint64_t bytes, double probability) {
  probability = clamp_p(probability);
  impl_->run([&] {
    for_dirs(d, [&](int i) {
      impl_->faults[i].close_after = bytes;
      impl_->faults[i].close_after_p = probability;
      impl_->for_each_session([&](proxy_session& s) {
        s.p[i].budget.reset();
        if (s.started && impl_->draw(probability)) s.p[i].budget = bytes;
        if (s.p[i].budget && *s.p[i].budget == 0) s.close_after_bytes();
      });
    });
  });
}

void fault_proxy::set_down(bool down) {
  impl_->run([&] { impl_->set_down(down); });
}

bool fault_proxy::down() const { return impl_->down_flag.load(); }

void fault_proxy::heal() {
  impl_->run([&] { impl_->heal(); });
}

void fault_proxy::reseed(std::uint64_t seed) {
  impl_->run([&] { impl_->rng.seed(seed); });
}

proxy_stats fault_proxy::stats() const {
  const auto& p = *impl_;
  auto ld = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  proxy_stats s;
  s.connections_accepted = ld(p.accepted);
  s.upstream_failures = ld(p.upstream_failures);
  s.open_connections = ld(p.open);
  s.bytes_client_to_server = ld(p.bytes[c2s]);
  s.bytes_server_to_client = ld(p.bytes[s2c]);
  s.delayed_chunks = ld(p.counters[k_delayed]);
  s.throttled_chunks = ld(p.counters[k_throttled]);
  s.sliced_chunks = ld(p.counters[k_sliced]);
  s.blackholed_pipes = ld(p.counters[k_blackholed]);
  s.resets = ld(p.counters[k_resets]);
  s.slow_closes = ld(p.counters[k_slow_closes]);
  s.closes_after_bytes = ld(p.counters[k_closes_after]);
  s.dropped_by_down = ld(p.counters[k_dropped]);
  s.held_chunks = ld(p.counters[k_held_chunks]);
  s.resets_pending = ld(p.counters[k_resets_pending]);
  s.faults_applied = s.delayed_chunks + s.throttled_chunks + s.sliced_chunks + s.blackholed_pipes +
                     s.resets + s.slow_closes + s.closes_after_bytes + s.dropped_by_down;
  return s;
}

}  // namespace redlock::fault
