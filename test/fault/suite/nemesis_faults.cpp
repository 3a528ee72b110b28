// SPDX-License-Identifier: Apache-2.0
// The catalogue of faults: how the nemesis picks each kind's targets, what
// each does, how it is healed, and what shows that it acted.
#include "nemesis_internal.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

namespace redlock::fault {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

namespace {

// fault_proxy::heal() listens again on the same port after set_down(true); if
// another socket took the port meanwhile it throws. Say who holds it.
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

}  // namespace

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

}  // namespace redlock::fault
