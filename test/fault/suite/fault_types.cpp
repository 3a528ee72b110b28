// SPDX-License-Identifier: Apache-2.0
// The kinds of fault: their names, which are safe (inside docs/safety.md's
// assumptions), which these servers and clients allow, and how often each is
// drawn.
#include "nemesis_internal.hpp"

namespace redlock::fault {

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

// Long, exclusive or blocking faults are drawn less often so that a round
// injects many faults.
double weight(fault_type t) {
  switch (t) {
    case fault_type::delayed_restart: return 0.35;
    case fault_type::holder_pause: return 0.6;
    default: return 1.0;
  }
}

}  // namespace redlock::fault
