// SPDX-License-Identifier: Apache-2.0
// The servers of one fault-suite run: N redis masters (optionally with AOF
// appendfsync always, optionally under the clock shim), each optionally behind
// a fault_proxy that the clients connect to, and one separate storage redis
// for fenced_store writes (never faulted).
#pragma once

#include "checkers.hpp"
#include "lease_probe.hpp"
#include "clockshim/clock_control.hpp"
#include "proxy/fault_proxy.hpp"
#include "redis_process.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace redlock::fault {

struct cluster_options {
  std::size_t masters = 3;
  bool aof = true;         ///< appendonly yes, appendfsync always
  bool proxies = true;     ///< clients reach each master through a fault_proxy
  bool clock_shim = false; ///< masters run under the clock shim (server clock faults)
  std::uint64_t seed = 1;  ///< seeds the proxies' fault RNGs
  /// Clients [0, client_views) each reach every master through a proxy of
  /// their own (in front of the master's proxy): per-client partitions.
  std::size_t client_views = 0;
  /// Extra address the servers listen on and that uris() uses instead of
  /// 127.0.0.1 (network-namespace partitions). Proxies are not used then.
  std::string listen_ip;
};

class cluster {
 public:
  explicit cluster(cluster_options o);
  ~cluster();
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;

  const cluster_options& options() const { return options_; }
  std::size_t size() const { return masters_.size(); }
  std::size_t quorum() const { return masters_.size() / 2 + 1; }
  testing::redis_process& master(std::size_t i) { return *masters_.at(i); }
  fault_proxy* proxy(std::size_t i) { return proxies_.empty() ? nullptr : proxies_.at(i).get(); }
  /// Client `c`'s own link to master `m` (client_views only).
  fault_proxy& link(std::size_t c, std::size_t m) { return *links_.at(c).at(m); }
  /// What client `c` connects to: its own links, or uris().
  std::vector<std::string> uris_of(std::size_t c) const;
  clock_control* clock(std::size_t i) { return clocks_.empty() ? nullptr : clocks_.at(i).get(); }
  testing::redis_process& storage() { return *storage_; }

  /// What the clients connect to: the proxies, or the masters themselves.
  std::vector<std::string> uris() const;
  /// The masters on 127.0.0.1, whatever listen_ip says.
  std::vector<std::string> loopback_uris() const;
  std::string storage_uri() const;

  /// Reads the masters directly (bypassing the proxies) for check (g).
  std::shared_ptr<lease_probe> make_probe();

  /// Every key on every running master, with its PTTL (for check_residue).
  std::vector<key_state> keys();
  /// Undoes every process and network fault (resume, restart dead masters
  /// from their AOF, CLIENT UNPAUSE, heal proxies). Clocks are left alone.
  void heal_all();

 private:
  cluster_options options_;
  std::filesystem::path dir_;
  std::vector<std::unique_ptr<clock_control>> clocks_;
  std::vector<std::unique_ptr<testing::redis_process>> masters_;
  std::vector<std::unique_ptr<fault_proxy>> proxies_;
  std::vector<std::vector<std::unique_ptr<fault_proxy>>> links_;  // [client][master]
  std::unique_ptr<testing::redis_process> storage_;
};

/// Splits a redis_process::command reply ("a b c") into words.
std::vector<std::string> words(const std::string& s);

}  // namespace redlock::fault
