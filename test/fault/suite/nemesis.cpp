// SPDX-License-Identifier: Apache-2.0
#include "nemesis.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <fstream>
#include <functional>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace redlock::fault {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

const char* name(fault_type t) {
  switch (t) {
    case fault_type::sigstop: return "sigstop";
    case fault_type::kill9_aof_restart: return "kill9-aof-restart";
    case fault_type::delayed_restart: return "delayed-restart";
    case fault_type::client_pause_write: return "client-pause-write";
    case fault_type::latency: return "latency";
    case fault_type::blackhole: return "blackhole";
    case fault_type::reset: return "reset";
    case fault_type::slicing: return "slicing";
    case fault_type::slow_link: return "slow-link";
    case fault_type::proxy_down: return "proxy-down";
    case fault_type::partition: return "partition";
    case fault_type::client_partition: return "client-partition";
    case fault_type::server_clock_fast_bounded: return "server-clock-fast-bounded";
    case fault_type::server_clock_slow: return "server-clock-slow";
    case fault_type::server_clock_back_jump: return "server-clock-back-jump";
    case fault_type::client_clock_jump: return "client-clock-jump";
    case fault_type::client_clock_fast: return "client-clock-fast";
    case fault_type::client_clock_slow_bounded: return "client-clock-slow-bounded";
    case fault_type::holder_pause: return "holder-pause";
    case fault_type::immediate_restart_wipe: return "UNSAFE-immediate-restart-wipe";
    case fault_type::server_clock_fast: return "UNSAFE-server-clock-fast";
    case fault_type::server_clock_forward_jump: return "UNSAFE-server-clock-forward-jump";
    case fault_type::client_clock_slow: return "UNSAFE-client-clock-slow";
  }
  return "?";
}

bool is_safe(fault_type t) {
  switch (t) {
    case fault_type::immediate_restart_wipe:
    case fault_type::server_clock_fast:
    case fault_type::server_clock_forward_jump:
    case fault_type::client_clock_slow:
      return false;
    default:
      return true;
  }
}

std::vector<fault_type> safe_fault_types(const cluster_options& c, const workload_options& w) {
  std::vector<fault_type> out{fault_type::sigstop, fault_type::client_pause_write};
  if (c.aof) out.push_back(fault_type::kill9_aof_restart);
  if (c.proxies && c.listen_ip.empty()) {
    out.insert(out.end(), {fault_type::latency, fault_type::blackhole, fault_type::reset, fault_type::slicing,
                           fault_type::proxy_down, fault_type::partition, fault_type::delayed_restart});
  }
  if (c.proxies && c.listen_ip.empty() && c.client_views > 0) out.push_back(fault_type::client_partition);
  if (c.clock_shim) {
    out.insert(out.end(), {fault_type::server_clock_fast_bounded, fault_type::server_clock_back_jump});
    // A slow master clock falls behind; a later quick restart (whose shim
    // starts again from the file's offset) would step it forward: unsafe.
    // So slow clocks only where there are no quick restarts.
    if (!c.aof) out.push_back(fault_type::server_clock_slow);
  }
  if (w.injected_clocks)
    out.insert(out.end(),
               {fault_type::client_clock_jump, fault_type::client_clock_fast, fault_type::client_clock_slow_bounded});
  if (w.fenced) out.push_back(fault_type::holder_pause);
  return out;
}

// ---- nemesis ------------------------------------------------------------------

namespace {

// fault_proxy::heal() listens again on the same port after set_down(true); if
// another socket took the port meanwhile it throws. Say who holds it.
bool verbose() {
  static const bool on = [] {
    const char* v = std::getenv("REDLOCK_FAULT_VERBOSE");
    return v && *v && *v != '0';
  }();
  return on;
}

void heal_proxy(fault_proxy& p) {
  try {
    p.heal();
  } catch (const std::exception& e) {
    std::cerr << "nemesis: " << e.what() << "; sockets on that port:" << std::endl;
    std::string cmd = "ss -tanpe | grep ':" + std::to_string(p.port()) + " ' 1>&2";
    if (std::system(cmd.c_str()) != 0) std::cerr << "(ss failed)" << std::endl;
    throw;
  }
}

}  // namespace

// Whether process `pid` is stopped (state T in /proc/<pid>/stat).
// Waits (up to 200 ms: SIGSTOP is delivered asynchronously) to see it.
bool stopped(pid_t pid) {
  auto until = steady::now() + 200ms;
  do {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(f, line);
    auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'T') return true;
    std::this_thread::sleep_for(1ms);
  } while (steady::now() < until);
  return false;
}

struct nemesis::active {
  fault_type type;
  std::function<bool()> acted;  // evaluated at the heal: did the fault act?
  std::size_t op = 0;
  std::vector<std::size_t> masters;
  int client = -1;
  time_point not_before{};  // heal no earlier (delayed restart)
  std::function<void()> heal;
  bool exclusive = false;
  bool healed = false;
};

nemesis::nemesis(cluster& c, workload& w, history& h, nemesis_options o)
    : cluster_(c), workload_(w), history_(h), options_(std::move(o)), rng_(options_.seed) {}

nemesis::~nemesis() {
  try {
    heal_all();
  } catch (...) {
  }
}

template <typename T>
T nemesis::uniform(T lo, T hi) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::uniform_real_distribution<T>(lo, hi)(rng_);
  } else {
    if (hi <= lo) return lo;
    return std::uniform_int_distribution<T>(lo, hi)(rng_);
  }
}

std::vector<std::size_t> nemesis::free_masters() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < cluster_.size(); ++i) {
    bool busy = false;
    for (auto& a : active_)
      if (!a.healed && std::find(a.masters.begin(), a.masters.end(), i) != a.masters.end()) busy = true;
    if (!busy) out.push_back(i);
  }
  return out;
}

std::vector<std::size_t> nemesis::pick(std::vector<std::size_t> from, std::size_t n) {
  std::shuffle(from.begin(), from.end(), rng_);
  from.resize(std::min(n, from.size()));
  std::sort(from.begin(), from.end());
  return from;
}

void nemesis::sleep_until(time_point t) {
  while (!stop_ && steady::now() < t) std::this_thread::sleep_for(std::min<steady::duration>(t - steady::now(), 10ms));
}

std::size_t nemesis::inject(fault_type t, const std::vector<std::size_t>& masters, int client) {
  return apply(t, masters, client);
}

void nemesis::heal(std::size_t index) {
  auto& a = active_.at(index);
  if (a.healed) return;
  if (steady::now() < a.not_before) {
    auto until = a.not_before;
    while (steady::now() < until) std::this_thread::sleep_for(5ms);
  }
  if (verbose()) std::cerr << "nemesis: healing #" << a.op << std::endl;
  bool acted = a.acted && a.acted();
  a.heal();
  a.healed = true;
  // A fast master clock and a slow client clock each use most of the drift
  // allowance: never both on one window (the longest TTL apart).
  auto apart = workload_.options().ttl_max * 5 / 4;
  if (a.type == fault_type::server_clock_fast_bounded) fast_master_clear_ = steady::now() + apart;
  if (a.type == fault_type::client_clock_slow_bounded) slow_client_clear_ = steady::now() + apart;
  history_.update(a.op, [&](op& o) { o.acted = acted; });
  history_.complete(a.op, steady::now(), outcome::ok);
}

void nemesis::heal_all() {
  for (std::size_t i = active_.size(); i-- > 0;) heal(i);
}

std::size_t nemesis::apply(fault_type t, std::vector<std::size_t> masters, int client) {
  active a;
  a.type = t;
  a.masters = masters;
  a.client = client;
  std::ostringstream detail;
  if (!masters.empty()) {
    detail << "masters";
    for (auto m : masters) detail << " m" << m;
  }
  if (client >= 0) detail << "client c" << client;
  auto& w = workload_;
  auto& c = cluster_;
  auto each = [&](auto f) {
    for (auto m : masters) f(m);
  };
  auto proxies_heal = [&c, masters] {
    for (auto m : masters) heal_proxy(*c.proxy(m));
  };
  double drift = w.options().drift_factor;
  // Evidence that a fault acted, from what the proxies of its masters counted.
  auto proxy_total = [&c, masters](auto field) {
    std::uint64_t sum = 0;
    for (auto m : masters)
      if (auto* p = c.proxy(m)) sum += field(p->stats());
    return sum;
  };
  // What "acted" means, per kind (the proxies' counters of traffic a client
  // waited on): a request delayed (delayed, sliced), withheld (held), cut
  // while pending (resets_pending), refused (upstream_failures: a client
  // reconnecting to a dead master), delivered to a master stopped, paused or
  // on a changed clock (bytes_served while the fault lasted).
  auto delayed = [](const proxy_stats& s) { return s.delayed_chunks; };
  auto sliced = [](const proxy_stats& s) { return s.sliced_chunks; };
  auto held = [](const proxy_stats& s) { return s.held_chunks; };
  auto cut = [](const proxy_stats& s) { return s.resets_pending; };
  auto refused = [](const proxy_stats& s) { return s.upstream_failures; };
  auto accepted = [](const proxy_stats& s) { return s.connections_accepted; };
  auto bytes_served = [](const proxy_stats& s) { return s.bytes_client_to_server; };
  // Taken before the fault is applied: a setter may act at once (live pipes).
  auto proxy_grew = [proxy_total](auto field) {
    return [proxy_total, field, before = proxy_total(field)] { return proxy_total(field) > before; };
  };
  auto either = [](std::function<bool()> x, std::function<bool()> y) { return [x, y] { return x() || y(); }; };
  const bool proxied = c.proxy(0) != nullptr;
  auto now = steady::now();
  switch (t) {
    case fault_type::sigstop: {
      auto served = proxy_grew(bytes_served);
      bool all_stopped = true;
      each([&](auto m) {
        c.master(m).pause();
        all_stopped = all_stopped && stopped(c.master(m).pid());
      });
      // A request reached a stopped master (and waited there).
      if (proxied) a.acted = [all_stopped, served] { return all_stopped && served(); };
      else a.acted = [all_stopped] { return all_stopped; };
      a.heal = [&c, masters] {
        for (auto m : masters) c.master(m).resume();
      };
      break;
    }
    case fault_type::kill9_aof_restart:
      each([&](auto m) { c.master(m).kill9(); });
      // A client tried to reach a dead master (its reconnect refused).
      if (proxied) a.acted = proxy_grew(refused);
      else a.acted = [&c, masters] {
        return std::none_of(masters.begin(), masters.end(), [&](auto m) { return c.master(m).running(); });
      };
      a.heal = [&c, masters] {
        for (auto m : masters) c.master(m).restart(false);
      };
      break;
    case fault_type::delayed_restart: {
      // Out of service for longer than any TTL (plus the drift allowance and
      // slow client clocks): every window that counted on it has ended.
      auto away = milliseconds(static_cast<long long>(w.options().ttl_max.count() * 1.25)) + 300ms;
      a.not_before = now + away;
      a.exclusive = true;
      // The proxy holds every byte for this master until the heal (after the
      // counters are restored) and drops the live connections now.
      each([&](auto m) {
        c.proxy(m)->set_blackhole(direction::both);
        c.proxy(m)->reset_now(direction::both);
        c.master(m).kill9();
      });
      detail << " away >= " << away.count() << " ms";
      a.heal = [&c, &w, masters] {
        for (auto m : masters) c.master(m).restart(true);  // no data at all
        // Operations procedure for fencing (docs/fencing.md): a master that
        // lost its counters gets the maximum of the others' before clients
        // can reach it again.
        if (w.options().fenced) {
          for (auto& r : w.resources())
            for (auto& fence_key : w.fence_keys(r)) {
              long long best = 0;
              for (std::size_t o = 0; o < c.size(); ++o) {
                if (std::find(masters.begin(), masters.end(), o) != masters.end()) continue;
                auto v = c.master(o).command({"GET", fence_key});
                if (v != "(nil)") best = std::max(best, std::stoll(v));
              }
              for (auto m : masters) c.master(m).command({"SET", fence_key, std::to_string(best)});
            }
        }
        for (auto m : masters) heal_proxy(*c.proxy(m));
      };
      break;
    }
    case fault_type::immediate_restart_wipe:
      each([&](auto m) { c.master(m).restart(true); });
      a.acted = [] { return true; };  // restart(true) returned: the data is gone
      a.heal = [] {};
      break;
    case fault_type::client_pause_write: {
      auto ms = uniform<long long>(200, 2000);
      auto served = proxy_grew(bytes_served);
      bool paused = true;
      each([&](auto m) { paused = c.master(m).command({"CLIENT", "PAUSE", std::to_string(ms), "WRITE"}) == "OK" && paused; });
      // Every lock request is a write: one that reached the master waited.
      if (proxied) a.acted = [paused, served] { return paused && served(); };
      else a.acted = [paused] { return paused; };
      detail << " for up to " << ms << " ms";
      a.heal = [&c, masters] {
        for (auto m : masters) c.master(m).command({"CLIENT", "UNPAUSE"});
      };
      break;
    }
    case fault_type::latency: {
      auto l = uniform<long long>(1, 80), j = uniform<long long>(0, l);
      each([&](auto m) { c.proxy(m)->set_latency(direction::both, milliseconds(l), milliseconds(j)); });
      detail << " " << l << " +/- " << j << " ms";
      a.heal = proxies_heal;
      break;
    }
    case fault_type::blackhole: {
      auto d = uniform<int>(0, 1) ? direction::client_to_server : direction::server_to_client;
      each([&](auto m) { c.proxy(m)->set_blackhole(d); });
      detail << (d == direction::client_to_server ? " requests" : " replies");
      a.heal = proxies_heal;
      break;
    }
    case fault_type::reset: {
      auto after = uniform<long long>(0, 30);
      auto p = uniform<double>(0.3, 1.0);
      each([&](auto m) { c.proxy(m)->set_reset(direction::both, milliseconds(after), p); });
      detail << " after " << after << " ms, p " << std::setprecision(2) << p;
      a.heal = proxies_heal;
      break;
    }
    case fault_type::slicing:
    case fault_type::slow_link: {
      auto piece = uniform<std::size_t>(1, 16);
      auto delay = t == fault_type::slicing ? 0 : uniform<long long>(1, 3);
      each([&](auto m) { c.proxy(m)->set_slicing(direction::both, piece, milliseconds(delay)); });
      detail << " " << piece << " B pieces every " << delay << " ms";
      a.heal = proxies_heal;
      break;
    }
    case fault_type::proxy_down:
      // Every live and new connection is reset at once. (Not set_down(true):
      // listening again on the same port after it can fail with EADDRINUSE
      // while connections to the old listener linger, and then
      // fault_proxy::heal() terminates the process.)
      each([&](auto m) {
        c.proxy(m)->set_reset(direction::both, milliseconds(0));
        c.proxy(m)->reset_now(direction::both);
      });
      a.heal = proxies_heal;
      break;
    case fault_type::client_partition: {
      // Each client's view of the masters, by shape. Halves: clients and
      // masters split at random, links across cut. Bridge: the same, but one
      // master stays reachable from both sides. Ring: client i reaches the
      // quorum masters starting at a random offset + i (every client its own
      // majority; any two overlap).
      auto n = c.size(), q = c.quorum(), clients = c.options().client_views;
      int shape = uniform<int>(0, 2);
      std::vector<std::vector<bool>> reach(clients, std::vector<bool>(n, true));
      if (shape < 2) {
        std::vector<int> side_of_master(n), side_of_client(clients);
        for (auto& x : side_of_master) x = uniform<int>(0, 1);
        for (auto& x : side_of_client) x = uniform<int>(0, 1);
        auto bridge = uniform<std::size_t>(0, n - 1);
        for (std::size_t k = 0; k < clients; ++k)
          for (std::size_t m = 0; m < n; ++m)
            reach[k][m] = side_of_client[k] == side_of_master[m] || (shape == 1 && m == bridge);
        detail << (shape == 0 ? " halves" : " bridge m" + std::to_string(bridge));
      } else {
        auto offset = uniform<std::size_t>(0, n - 1);
        for (std::size_t k = 0; k < clients; ++k)
          for (std::size_t m = 0; m < n; ++m) reach[k][m] = (m + n - (offset + k) % n) % n < q;
        detail << " ring";
      }
      std::vector<fault_proxy*> links;
      for (std::size_t k = 0; k < clients; ++k) {
        detail << " c" << k << ":";
        for (std::size_t m = 0; m < n; ++m) {
          detail << (reach[k][m] ? std::to_string(m) : "-");
          if (!reach[k][m]) links.push_back(&c.link(k, m));
        }
      }
      std::uint64_t before = 0;
      for (auto* l : links) before += l->stats().held_chunks;
      for (auto* l : links) l->set_blackhole(direction::both);
      a.acted = [links, before] {
        std::uint64_t now_held = 0;
        for (auto* l : links) now_held += l->stats().held_chunks;
        return now_held > before;  // a request or reply withheld on a cut link
      };
      a.heal = [links] {
        for (auto* l : links) heal_proxy(*l);
      };
      break;
    }
    case fault_type::partition:
      each([&](auto m) { c.proxy(m)->set_blackhole(direction::both); });
      detail << (masters.size() >= c.quorum() ? " (majority)" : " (minority)");
      a.heal = proxies_heal;
      break;
    case fault_type::server_clock_fast_bounded:
    case fault_type::server_clock_slow:
    case fault_type::server_clock_fast: {
      // Fast within the allowance: 0.9 x drift_factor for at least a whole
      // TTL, so an expiry moves by nearly all the allowance (never with a
      // slow client clock: see pick_and_apply). Slow: the expiry moves later
      // by (1 - rate) x the time it lasts.
      double rate = t == fault_type::server_clock_fast_bounded ? 1.0 + 0.9 * drift
                    : t == fault_type::server_clock_slow       ? uniform<double>(0.5, 0.95)
                                                               : 10.0;
      if (t == fault_type::server_clock_fast_bounded) a.not_before = now + w.options().ttl_max;
      each([&](auto m) { c.clock(m)->set_rate(rate); });
      detail << " rate " << std::setprecision(6) << rate;
      auto served = proxy_grew(bytes_served);
      auto tenth = w.options().ttl_max / 10;
      auto since = now;
      a.acted = [served, rate, tenth, since] {
        auto moved = std::chrono::duration<double>(steady::now() - since) * std::abs(1.0 - rate);
        return served() && (rate > 1.0 || moved >= tenth);  // fast: as far as the allowance lets it
      };
      a.heal = [&c, masters] {
        for (auto m : masters) c.clock(m)->set_rate(1.0);
      };
      break;
    }
    case fault_type::server_clock_back_jump:
    case fault_type::server_clock_forward_jump: {
      auto j = t == fault_type::server_clock_back_jump ? -uniform<long long>(100, 1000) : uniform<long long>(2000, 5000);
      each([&](auto m) { c.clock(m)->set_offset(c.clock(m)->offset() + milliseconds(j)); });
      detail << " by " << j << " ms (not undone)";
      // Every expiry on it moved by the step (>= 100 ms: a tenth of the
      // longest TTL): acted when a request was served on the stepped clock.
      a.acted = proxied ? proxy_grew(bytes_served) : std::function<bool()>([] { return true; });
      a.heal = [] {};  // stepping back again would be a forward step
      break;
    }
    case fault_type::client_clock_jump: {
      auto j = uniform<long long>(50, 2000);
      bool holding = w.holding(static_cast<std::size_t>(client)) > 0;
      w.clock(static_cast<std::size_t>(client)).jump(milliseconds(j));
      detail << " +" << j << " ms" << (holding ? " (holding)" : "");
      // Acted on the windows it cut short, or on the acquisitions that
      // counted their validity on the moved clock.
      a.acted = [&w, client, holding, before = w.acquired_by(static_cast<std::size_t>(client))] {
        return holding || w.acquired_by(static_cast<std::size_t>(client)) > before;
      };
      a.heal = [] {};
      break;
    }
    case fault_type::client_clock_fast:
    case fault_type::client_clock_slow_bounded:
    case fault_type::client_clock_slow: {
      // Slow within the allowance: 0.9 x drift_factor (never with a fast
      // master clock: see pick_and_apply).
      double rate = t == fault_type::client_clock_fast           ? uniform<double>(1.5, 4.0)
                    : t == fault_type::client_clock_slow_bounded ? 1.0 - 0.9 * drift
                                                                 : 0.5;
      auto& clk = w.clock(static_cast<std::size_t>(client));
      clk.set_rate(rate);
      detail << " rate " << std::setprecision(6) << rate;
      a.heal = [&clk] { clk.set_rate(1.0); };
      break;
    }
    case fault_type::holder_pause:
      // Long enough for each of its workers to be caught once.
      a.not_before = now + w.options().ttl_max;
      w.set_holder_pause(static_cast<std::size_t>(client), true);
      a.heal = [&w, client] { w.set_holder_pause(static_cast<std::size_t>(client), false); };
      break;
  }
  if (!a.acted) {
    switch (t) {
      case fault_type::delayed_restart:  // a client's request withheld, or its reconnect refused
        a.acted = either(proxy_grew(held), proxy_grew(refused));
        break;
      case fault_type::latency:
        a.acted = proxy_grew(delayed);
        break;
      case fault_type::slicing:
      case fault_type::slow_link:
        a.acted = proxy_grew(sliced);
        break;
      case fault_type::blackhole:
      case fault_type::partition:
        a.acted = proxy_grew(held);
        break;
      case fault_type::reset:
        a.acted = proxy_grew(cut);
        break;
      case fault_type::proxy_down:  // cut while pending, or a reconnect reset
        a.acted = either(proxy_grew(cut), proxy_grew(accepted));
        break;
      case fault_type::client_clock_fast:
      case fault_type::client_clock_slow_bounded:
      case fault_type::client_clock_slow: {
        // A window counted on the changed clock: held or begun meanwhile.
        auto k = static_cast<std::size_t>(client);
        a.acted = [&w, k, holding = w.holding(k) > 0, before = w.acquired_by(k)] {
          return holding || w.acquired_by(k) > before;
        };
        break;
      }
      case fault_type::holder_pause:  // a write attempted after the holder's window ended
        a.acted = [&w, client, before = w.paused_writes(static_cast<std::size_t>(client))] {
          return w.paused_writes(static_cast<std::size_t>(client)) > before;
        };
        break;
      default:
        break;  // set in the switch above
    }
  }
  op o;
  o.kind = op_kind::fault;
  o.resource = name(t);
  o.fault_masters = masters;
  o.fault_client = client;
  o.detail = detail.str();
  o.invoke = now;
  a.op = history_.invoke(o);
  ++injected_;
  if (verbose())
    std::cerr << "nemesis: +" << o.resource << " " << o.detail << " (#" << a.op << ")" << std::endl;
  active_.push_back(std::move(a));
  return active_.size() - 1;
}

// Long, exclusive or blocking faults are drawn less often so that a round
// injects many faults.
double weight(fault_type t) {
  switch (t) {
    case fault_type::delayed_restart: return 0.35;
    case fault_type::holder_pause: return 0.6;
    default: return 1.0;
  }
}

fault_type nemesis::draw_type() {
  std::vector<double> w;
  for (auto t : options_.types) {
    auto given = options_.weights.find(t);
    w.push_back(given != options_.weights.end() ? given->second : weight(t));
  }
  return options_.types.at(std::discrete_distribution<std::size_t>(w.begin(), w.end())(rng_));
}

bool nemesis::pick_and_apply(fault_type t) {
  auto n = cluster_.size(), q = cluster_.quorum();
  auto free = free_masters();
  if (t == fault_type::server_clock_fast_bounded) {
    if (steady::now() < slow_client_clear_) return false;
    fast_master_clear_ = time_point::max();
  }
  if (t == fault_type::client_clock_slow_bounded) {
    if (steady::now() < fast_master_clear_) return false;
    slow_client_clear_ = time_point::max();
  }
  switch (t) {
    case fault_type::client_clock_jump:
    case fault_type::client_clock_fast:
    case fault_type::client_clock_slow_bounded:
    case fault_type::client_clock_slow:
    case fault_type::holder_pause: {
      std::vector<std::size_t> clients;
      for (std::size_t i = 0; i < workload_.clients(); ++i) {
        bool busy = false;
        for (auto& a : active_)
          if (!a.healed && a.client == static_cast<int>(i)) busy = true;
        if (!busy) clients.push_back(i);
      }
      if (clients.empty()) return false;
      apply(t, {}, static_cast<int>(pick(clients, 1).front()));
      return true;
    }
    case fault_type::client_partition: {
      for (auto& a : active_)
        if (!a.healed && a.type == fault_type::client_partition) return false;  // one at a time
      apply(t, {}, -1);
      return true;
    }
    case fault_type::delayed_restart:
      // Alone, and on a minority only: the fence counters are restored from
      // the other masters, which must include one of every raise quorum.
      if (free.size() != n) return false;
      apply(t, pick(free, uniform<std::size_t>(1, n - q)), -1);
      return true;
    case fault_type::partition: {
      bool majority = uniform<int>(0, 1) == 1;
      auto k = majority ? uniform<std::size_t>(q, n) : uniform<std::size_t>(1, n - q);
      if (free.size() < k) return false;
      apply(t, pick(free, k), -1);
      return true;
    }
    default: {
      if (free.empty()) return false;
      // Mostly a minority (progress continues), sometimes up to every master.
      auto k = uniform<int>(0, 9) < 6 ? uniform<std::size_t>(1, n - q) : uniform<std::size_t>(1, n);
      apply(t, pick(free, k), -1);
      return true;
    }
  }
}

void nemesis::run_until(time_point end) {
  while (!stop_ && steady::now() < end) {
    auto roll = uniform<double>(0.0, 1.0);
    std::size_t count = roll < options_.p_three ? 3 : roll < options_.p_three + options_.p_two ? 2 : 1;
    auto first = active_.size();
    for (std::size_t i = 0; i < count; ++i) {
      auto t = draw_type();
      bool exclusive_running = false;
      for (std::size_t k = first; k < active_.size(); ++k) exclusive_running |= active_[k].exclusive;
      if (exclusive_running) break;
      pick_and_apply(t);
    }
    auto d = milliseconds(uniform<long long>(options_.duration_min.count(), options_.duration_max.count()));
    sleep_until(std::min(end, steady::now() + d));
    for (std::size_t k = active_.size(); k-- > first;) heal(k);
    auto quiet = uniform<double>(0.0, 1.0) < options_.p_long_quiet
                     ? options_.long_quiet
                     : milliseconds(uniform<long long>(options_.quiet_min.count(), options_.quiet_max.count()));
    sleep_until(steady::now() + quiet);
  }
  heal_all();
}

// ---- rounds -------------------------------------------------------------------

round_config safe_round(std::uint64_t seed, milliseconds duration) {
  round_config r;
  r.seed = seed;
  r.duration = duration;
  r.cluster.masters = seed % 2 == 1 ? 5 : 3;
  r.cluster.aof = true;
  r.cluster.proxies = true;
  r.cluster.clock_shim = true;
  r.cluster.seed = seed;
  // N = 5 rounds: every client also has its own link to each master (its
  // own proxy in front of the master's), for per-client partitions.
  if (r.cluster.masters == 5) r.cluster.client_views = r.workload.clients;
  r.workload.seed = seed;
  // Ten resources: a fifth of the sections hold up to their window's end,
  // so throughput comes from many locks at once.
  r.workload.resources = 10;
  r.workload.key_prefix = "s" + std::to_string(seed) + ":";
  r.workload.lease_resources = 3;  // res7-res9: renewed and extended leases
  // Every lock kind under the same faults: seeds 1, 2 (mod 4) the mutex on 5
  // and 3 masters, 3 the fair lock on 5, 0 the reentrant lock on 3. Fair
  // seeds 3 (mod 8) run unfenced, where releases hand the lock over to the
  // head of the queue; 7 (mod 8) fenced, where the head is woken and polls.
  // Reentrant seeds 4 (mod 8) run unfenced too (a fenced acquisition's
  // raise round checks its holds once more, which can hide a hold deleted
  // early; the late-release bug of docs/safety.md hit both hash kinds);
  // 0 (mod 8) fenced.
  r.workload.kind = seed % 4 == 3 ? lock_kind::fair : seed % 4 == 0 ? lock_kind::reentrant : lock_kind::mutex;
  // Mutex seeds 5 (mod 8) run unfenced too: only an unfenced waiter without
  // a description retries a wake-up with the plain SET NX PX (section 10).
  if (seed % 8 == 3 || seed % 8 == 4 || seed % 8 == 5) r.workload.fenced = false;
  // Fair: a queue timeout inside the lease TTLs (100-300 ms) and below the
  // others (300-800 ms), so that hand-overs come both whole and short; a
  // short one is extended to its TTL by the winner's confirmation (or, for
  // renewed leases, by the watchdog's first extend) under the faults too.
  if (r.workload.kind == lock_kind::fair) r.workload.queue_timeout = 250ms;
  // Fair seeds 3 (mod 16), unfenced (CTest's seed 3 among them; not the
  // regression seeds 59 and 7): half the clients wait in line with a longer
  // timeout, so polls with two timeouts share each line. Its keys still
  // expire (2 x 375 ms) before the end-of-round residue check.
  if (seed % 16 == 3) r.workload.odd_clients_queue_timeout = 375ms;
  // Mutex seeds 2 (mod 4), N = 3 (CTest's seed 2): the clients share an
  // io_context run by two threads.
  if (seed % 4 == 2) r.workload.io_threads = 2;
  r.nemesis.seed = seed;
  r.nemesis.types = safe_fault_types(r.cluster, r.workload);
  r.nemesis.long_quiet = r.recovery_bound + 300ms;
  r.tail = r.recovery_bound + 600ms;
  return r;
}

namespace {

// safe_round with another lock kind and workload (`change`), under its own
// key prefix, with the client views and the fault types that follow from it.
template <typename F>
round_config variant_round(std::uint64_t seed, milliseconds duration, const char* prefix, lock_kind kind,
                           F&& change) {
  auto r = safe_round(seed, duration);
  r.workload.kind = kind;
  change(r.workload);
  r.workload.key_prefix = prefix + std::to_string(seed) + ":";
  if (r.cluster.masters == 5) r.cluster.client_views = r.workload.clients;
  r.nemesis.types = safe_fault_types(r.cluster, r.workload);
  return r;
}

}  // namespace

round_config semaphore_round(std::uint64_t seed, milliseconds duration) {
  // Permits 2 or 3 (seeds 0, 1 mod 4: 2; 2, 3 mod 4: 3) on N = 5 (odd seeds) or 3
  // masters; two clients more than permits, so that slots are contended.
  // Fenced, except seeds 0 mod 4 (the acquisition without the raise round).
  return variant_round(seed, duration, "sem", lock_kind::semaphore, [seed](workload_options& w) {
    w.permits = 2 + static_cast<unsigned>(seed / 2 % 2);
    w.clients = w.permits + 2;
    w.fenced = seed % 4 != 0;
  });
}

round_config read_write_round(std::uint64_t seed, milliseconds duration) {
  // lock_kind::write with read_p: each acquisition a read or a write. Fenced
  // but for seeds 3, 4 mod 8 (as safe_round); the writers write to storage.
  return variant_round(seed, duration, "rw", lock_kind::write, [](workload_options& w) {
    w.read_p = 0.7;
    w.clients = 5;
    w.resources = 6;
    w.lease_resources = 1;  // res5: renewed and extended reads and writes
  });
}

round_config together_round(std::uint64_t seed, milliseconds duration) {
  return variant_round(seed, duration, "multi", lock_kind::mutex, [](workload_options& w) {
    w.together_max = 3;
    w.resources = 5;
    w.lease_resources = 1;  // res4's sets: renewed and extended, every name probed
  });
}

round_config fair_round(std::uint64_t seed, milliseconds duration) {
  // Unfenced for seeds 1 mod 3 (hand-overs), fenced otherwise (woken
  // heads poll); two queue timeouts in one line for seeds 3 mod 4.
  return variant_round(seed, duration, "fair", lock_kind::fair, [seed](workload_options& w) {
    w.queue_timeout = 250ms;
    w.fenced = seed % 3 != 1;
    if (seed % 4 == 3) w.odd_clients_queue_timeout = 375ms;
  });
}

round_config reentrant_round(std::uint64_t seed, milliseconds duration) {
  return variant_round(seed, duration, "reent", lock_kind::reentrant, [seed](workload_options& w) {
    w.fenced = seed % 2 == 0;
    w.reentry_p = 0.4;
  });
}

round_config election_round(std::uint64_t seed, milliseconds duration) {
  return variant_round(seed, duration, "elect", lock_kind::mutex, [](workload_options& w) {
    w.election = true;
    w.fenced = true;  // a campaign is fenced: the epoch
    w.resources = 2;
    w.lease_resources = 0;  // every worker leads as a renewed lease anyway
    // ttl * renew_fraction (1/3) must exceed the node timeout.
    w.lease_ttl_min = 150ms;
    w.lease_ttl_max = 400ms;
    w.wait = 1000ms;
  });
}

round_config postgres_round(std::uint64_t seed, milliseconds duration, std::shared_ptr<fenced_storage> storage) {
  auto r = variant_round(seed, duration, "pg", lock_kind::mutex, [&](workload_options& w) {
    w.fenced = true;
    w.data = false;  // the data verdict is the storage's table
    w.storage = std::move(storage);
  });
  r.nemesis.weights[fault_type::holder_pause] = 6.0;
  return r;
}

round_config quick_round(std::uint64_t seed, fault_type t, milliseconds nemesis_time) {
  round_config r;
  r.seed = seed;
  r.cluster.masters = 3;
  r.cluster.aof = t != fault_type::server_clock_slow;  // see safe_fault_types
  r.cluster.proxies = true;
  r.cluster.clock_shim = t == fault_type::server_clock_fast_bounded || t == fault_type::server_clock_slow ||
                         t == fault_type::server_clock_back_jump || t == fault_type::server_clock_fast ||
                         t == fault_type::server_clock_forward_jump;
  r.cluster.seed = seed;
  r.workload.seed = seed;
  r.workload.key_prefix = std::string(name(t)) + ":";
  r.workload.resources = 4;
  r.workload.lease_resources = 1;  // res3: renewed and extended leases under this fault
  r.workload.ttl_min = 200ms;
  r.workload.ttl_max = 400ms;
  r.workload.wait = 150ms;
  r.nemesis.seed = seed;
  r.nemesis.types = {t};
  r.nemesis.p_long_quiet = 0;
  // ttl_max + reconnect backoff + slack; a backward server clock step keeps
  // keys alive up to 1 s longer.
  r.recovery_bound = t == fault_type::server_clock_back_jump ? 2000ms : 1500ms;
  r.tail = r.recovery_bound + 200ms;
  r.duration = nemesis_time + r.tail;
  return r;
}

std::map<std::string, fault_stats> fault_figures(const std::vector<op>& ops) {
  std::map<std::string, fault_stats> out;
  std::vector<time_point> acquired;
  for (auto& o : ops)
    if (o.kind == op_kind::acquire && o.result == outcome::ok && o.completion) acquired.push_back(*o.completion);
  std::sort(acquired.begin(), acquired.end());
  for (auto& o : ops) {
    if (o.kind != op_kind::fault) continue;
    auto& s = out[o.resource];
    ++s.injected;
    s.acted += o.acted;
    auto end = o.completion.value_or(o.invoke);
    s.total_ms += ms_since(o.invoke, end);
    s.acquisitions_during += static_cast<std::size_t>(std::upper_bound(acquired.begin(), acquired.end(), end) -
                                                      std::lower_bound(acquired.begin(), acquired.end(), o.invoke));
  }
  return out;
}

round_result run_round(const round_config& cfg) {
  auto t0 = steady::now();
  auto lap = [&, last = t0](const char* what) mutable {
    if (!verbose()) return;
    auto now = steady::now();
    std::cerr << "round: " << what << " " << ms_since(last, now) << " ms" << std::endl;
    last = now;
  };
  round_result out;
  out.seed = cfg.seed;
  cluster c(cfg.cluster);
  lap("servers up");
  history h;
  auto wo = cfg.workload;
  for (std::size_t k = 0; k < c.options().client_views; ++k) wo.client_uris.push_back(c.uris_of(k));
  workload w(wo, c.uris(), c.storage_uri(), h);
  if (cfg.workload.lease_resources > 0 || cfg.workload.election) w.set_probe(c.make_probe());
  nemesis n(c, w, h, cfg.nemesis);
  w.start();
  auto start = steady::now();
  auto end = start + cfg.duration;
  auto nemesis_end = end - cfg.tail;
  std::string nemesis_error;
  std::thread chaos([&] {
    if (cfg.nemesis.types.empty()) return;  // a fault-free history
    try {
      n.run_until(nemesis_end);
    } catch (const std::exception& e) {
      nemesis_error = e.what();
    }
  });
  while (steady::now() < end) std::this_thread::sleep_for(20ms);
  n.stop();
  chaos.join();
  try {
    n.heal_all();
  } catch (const std::exception& e) {
    nemesis_error += std::string(nemesis_error.empty() ? "" : "; ") + e.what();
  }
  lap("workload and nemesis");
  auto workload_end = w.stop();
  lap("workload stopped");
  c.heal_all();
  out.faults_injected = n.injected();

  // Every client released (or gave up); wait for every TTL, including keys a
  // backward server clock step kept alive a little longer.
  bool back_jumps = std::find(cfg.nemesis.types.begin(), cfg.nemesis.types.end(),
                              fault_type::server_clock_back_jump) != cfg.nemesis.types.end();
  auto wait = cfg.workload.ttl_max * 105 / 100 + (back_jumps ? 1000ms : 0ms) + 200ms;
  std::this_thread::sleep_for(wait);
  if (cfg.residue) out.residue = check_residue(c.keys());
  lap("TTLs waited, residue checked");
  // The data-level verdict, from the storage alone.
  std::vector<violation> data;
  if (cfg.workload.data) {
    auto [host, port] = host_port(c.storage_uri());
    auto registers = read_registers(host, port);
    data = check_data(registers.logs, registers.counters, &out.data);
  }
  out.ops = h.snapshot();
  // A storage that fences itself: its table, with what each client was told.
  if (cfg.workload.storage) {
    std::vector<fenced_outcome> told;
    for (auto& o : out.ops)
      if (o.kind == op_kind::write && o.token && o.acquire_op)
        told.push_back({o.resource, section_id(o.client, *o.acquire_op), *o.token, o.result});
    data_figures f;
    auto found = check_fenced_data(cfg.workload.storage->read(), told, &f);
    data.insert(data.end(), found.begin(), found.end());
    out.data.add(f);
  }
  resolve_deadlines(out.ops, [&](int clock, time_point t) { return w.to_steady(clock, t); });
  check_config cc;
  cc.bounds = w.bounds();
  cc.resources = w.resources();
  cc.recovery_bound = cfg.recovery_bound;
  cc.workload_end = workload_end;
  cc.fencing = cfg.workload.fenced;
  // (h): the bound the library keeps (docs/algorithm.md, section 3): a
  // tenth of the TTL after the window's end, however the client's clock
  // ran (the watchdog looks every twentieth with an injected clock), plus
  // what a strand busy with a round's replies may add (the node timeout,
  // and lost_signal_slack under the sanitizers).
  cc.lost_slack_fraction = 0.1;
  cc.lost_slack_extra = cfg.workload.node_timeout + cfg.workload.lost_signal_slack;
  if (cfg.workload.kind == lock_kind::fair) cc.masters = cfg.cluster.masters;
  // (o): a waiter is woken (section 10) or retries within retry delay +
  // jitter + node timeout; plus what a loaded 2-core machine (and a
  // sanitized build) may add to the client's turn.
  // Sets have no wake list, semaphores and read-write locks other waiters.
  bool single_exclusive = cfg.workload.together_max < 2 && !cfg.workload.election &&
                          (cfg.workload.kind == lock_kind::mutex || cfg.workload.kind == lock_kind::reentrant ||
                           cfg.workload.kind == lock_kind::fair);
  if (single_exclusive) cc.wait = cfg.workload.wait;
  // Keys a fault left behind live up to the longest TTL (a second more
  // after a master clock stepped back); clients reconnect within a second.
  cc.wakeup_settle = cfg.workload.ttl_max + 2000ms;
  cc.wakeup_bound = cfg.workload.retry_delay + cfg.workload.retry_jitter + cfg.workload.node_timeout +
                    cfg.workload.wakeup_slack;
  out.report = check_all(out.ops, cc);
  for (auto& v : data) {
    out.report.by_checker[v.checker] += 1;
    out.report.violations.push_back(std::move(v));
  }
  if (w.died() > 0) {  // a worker that died stopped testing its resource: never a silent pass
    out.report.violations.push_back(
        {"workload", std::to_string(w.died()) + " worker(s) died (see \"worker ... died\" above)", {}});
    out.report.by_checker["workload"] += 1;
  }
  if (!nemesis_error.empty()) {  // the run itself broke: never a silent pass
    out.report.violations.push_back({"nemesis", "the nemesis failed: " + nemesis_error, {}});
    out.report.by_checker["nemesis"] += 1;
  }
  out.faults = fault_figures(out.ops);
  for (auto& [type, f] : out.faults) out.faults_acted += f.acted;
  lap("checked");
  out.seconds = std::chrono::duration<double>(steady::now() - t0).count();
  return out;
}

// ---- summary ------------------------------------------------------------------

void tally::add(const round_result& r) {
  ++histories;
  acquisitions += r.report.acquisitions;
  attempts += r.report.attempts;
  writes_accepted += r.report.writes_accepted;
  writes_rejected += r.report.writes_rejected;
  recovery_periods += r.report.recovery_periods;
  semaphore_full += r.report.semaphore_full;
  reads_shared += r.report.reads_shared;
  fifo_pairs += r.report.fifo_pairs;
  reentries += r.report.reentries;
  wakeups += r.report.wakeups;
  leaders += r.report.leaders;
  failovers += r.report.failovers;
  faults += r.faults_acted;
  faults_injected += r.faults_injected;
  data.add(r.data);
  violations += r.violations();
  for (auto& [k, v] : r.report.by_checker) by_checker[k] += v;
  if (!r.residue.empty()) by_checker["residue"] += r.residue.size();
  for (auto& [k, v] : r.report.by_checker) (is_safety_checker(k) ? safety : liveness) += v;
  liveness += r.residue.size();
  leases += r.report.leases;
  renewals += r.report.renewals;
  renewals_failed += r.report.renewals_failed;
  renewals_under_faults += r.report.renewals_under_faults;
  extends += r.report.extends;
  extends_failed += r.report.extends_failed;
  extends_under_faults += r.report.extends_under_faults;
  lost_signals += r.report.lost_signals;
  lease_repairs += r.report.lease_repairs;
  probes_judged += r.report.probes_judged;
  probes_undecided += r.report.probes_undecided;
  for (auto& [k, s] : r.faults) {
    auto& t = by_type[k];
    t.injected += s.injected;
    t.acted += s.acted;
    t.total_ms += s.total_ms;
    t.acquisitions_during += s.acquisitions_during;
  }
}

void tally::print(std::ostream& os) const {
  os << "fault figures by type (injected, seen to act, total active time, acquisitions completed while active):\n";
  for (auto& [k, s] : by_type)
    os << "  " << std::left << std::setw(34) << k << std::right << std::setw(6) << s.injected << " x "
       << std::setw(6) << s.acted << " acted  "
       << std::setw(9) << std::fixed << std::setprecision(1) << s.total_ms / 1000.0 << " s  " << std::setw(7)
       << s.acquisitions_during << " acquisitions\n";
  os << "  attempts " << attempts << ", writes accepted " << writes_accepted << ", stale writes rejected "
     << writes_rejected << ", recovery periods judged " << recovery_periods << "\n";
  if (semaphore_full > 0)
    os << "  semaphore windows begun with every other permit held (the semaphore full): " << semaphore_full << "\n";
  if (reads_shared > 0) os << "  read windows begun while another read was held (reads shared): " << reads_shared << "\n";
  if (fifo_pairs > 0) os << "  fair waiters whose grant order was judged (no overtaking once queued): " << fifo_pairs << "\n";
  if (reentries > 0) os << "  re-entries granted: " << reentries << "\n";
  if (wakeups > 0) os << "  releases with a waiter, the lock taken again within the wake-up bound: " << wakeups << "\n";
  if (leaders > 0) os << "  leaders " << leaders << ", of which after another client's term (failovers) " << failovers << "\n";
  if (leases > 0)
    os << "  leases " << leases << ": renewals " << renewals << " (" << renewals_under_faults << " under faults, "
       << renewals_failed << " failed), extends " << extends << " (" << extends_under_faults << " under faults, "
       << extends_failed << " failed), lost signals " << lost_signals << ", lease repairs " << lease_repairs << ", master probes judged " << probes_judged << " (undecided " << probes_undecided << ")"
       << "\n";
  if (data.sections + data.late + data.abandoned > 0)
    os << "  data (from the storage alone): " << data.sections << " sections judged (" << data.writes
       << " written back, " << data.reads << " reads), " << data.lost_updates << " lost updates, " << data.overlaps
       << " overlaps (" << std::setprecision(1) << data.exposure_ms << " ms exposure); not judged: " << data.late
       << " past the deadline, " << data.abandoned << " abandoned, " << data.unfinished << " unfinished, "
       << data.unjudged_overlaps << " overlaps with those; reads shared " << data.reads_shared
       << ", semaphore full " << data.full << "; fenced storage: " << data.refused
       << " stale writes refused and absent from it\n";
  if (!by_checker.empty()) {
    os << "  violations by checker:";
    for (auto& [k, v] : by_checker) os << " " << k << "=" << v;
    os << "\n";
  }
  if (faults_injected != faults)
    os << "  faults injected " << faults_injected << ", of which seen to act " << faults << " (only these count)\n";
  os << "fault suite: " << histories << " histories, " << acquisitions << " acquisitions checked, "
     << data.sections << " data-checked sections, " << faults << " faults injected, " << violations << " violations (" << safety << " safety, " << liveness << " liveness)"
     << std::endl;
}

namespace {

// Every count of a tally by name, for write() and read().
template <typename T, typename F>
void each_count(T& t, F&& f) {
  f("histories", t.histories);
  f("acquisitions", t.acquisitions);
  f("faults", t.faults);
  f("faults_injected", t.faults_injected);
  f("violations", t.violations);
  f("safety", t.safety);
  f("liveness", t.liveness);
  f("leases", t.leases);
  f("renewals", t.renewals);
  f("renewals_failed", t.renewals_failed);
  f("renewals_under_faults", t.renewals_under_faults);
  f("extends", t.extends);
  f("extends_failed", t.extends_failed);
  f("extends_under_faults", t.extends_under_faults);
  f("lost_signals", t.lost_signals);
  f("lease_repairs", t.lease_repairs);
  f("probes_judged", t.probes_judged);
  f("probes_undecided", t.probes_undecided);
  f("attempts", t.attempts);
  f("writes_accepted", t.writes_accepted);
  f("writes_rejected", t.writes_rejected);
  f("recovery_periods", t.recovery_periods);
  f("semaphore_full", t.semaphore_full);
  f("reads_shared", t.reads_shared);
  f("fifo_pairs", t.fifo_pairs);
  f("reentries", t.reentries);
  f("leaders", t.leaders);
  f("failovers", t.failovers);
  f("wakeups", t.wakeups);
  f("data.sections", t.data.sections);
  f("data.writes", t.data.writes);
  f("data.reads", t.data.reads);
  f("data.late", t.data.late);
  f("data.abandoned", t.data.abandoned);
  f("data.unfinished", t.data.unfinished);
  f("data.lost_updates", t.data.lost_updates);
  f("data.overlaps", t.data.overlaps);
  f("data.unjudged_overlaps", t.data.unjudged_overlaps);
  f("data.reads_shared", t.data.reads_shared);
  f("data.full", t.data.full);
  f("data.refused", t.data.refused);
}

}  // namespace

void tally::write(std::ostream& os) const {
  each_count(*this, [&](const char* name, const std::size_t& v) { os << name << " " << v << "\n"; });
  os << "data.exposure_ms " << data.exposure_ms << "\n";
  for (auto& [k, s] : by_type)
    os << "type " << k << " " << s.injected << " " << s.acted << " " << s.total_ms << " " << s.acquisitions_during
       << "\n";
  for (auto& [k, v] : by_checker) os << "checker " << k << " " << v << "\n";
}

void tally::read(std::istream& is) {
  std::map<std::string, std::size_t*> counts;
  each_count(*this, [&](const char* name, std::size_t& v) { counts[name] = &v; });
  for (std::string name; is >> name;) {
    if (name == "type") {
      std::string k;
      fault_stats s;
      is >> k >> s.injected >> s.acted >> s.total_ms >> s.acquisitions_during;
      auto& t = by_type[k];
      t.injected += s.injected;
      t.acted += s.acted;
      t.total_ms += s.total_ms;
      t.acquisitions_during += s.acquisitions_during;
    } else if (name == "checker") {
      std::string k;
      std::size_t v = 0;
      is >> k >> v;
      by_checker[k] += v;
    } else if (name == "data.exposure_ms") {
      double v = 0;
      is >> v;
      data.exposure_ms += v;
    } else {
      std::size_t v = 0;
      is >> v;
      if (auto it = counts.find(name); it != counts.end()) *it->second += v;
    }
  }
}

void report_failure(std::ostream& os, const round_result& r, const std::string& reproduce, std::size_t limit) {
  os << "FAULT SUITE FAILURE: seed " << r.seed << ", " << r.violations() << " violations\n";
  std::size_t shown = 0;
  for (auto* list : {&r.report.violations, &r.residue})
    for (auto& v : *list)
      if (shown++ < limit) os << "  " << v << "\n";
  std::string path = "/tmp/redlock-fault-seed" + std::to_string(r.seed) + "-" + std::to_string(::getpid()) + ".history";
  std::ofstream f(path);
  dump(f, r.ops);
  os << "  history: " << path << "\n";
  os << "  reproduce: " << reproduce << std::endl;
}

}  // namespace redlock::fault
