// SPDX-License-Identifier: Apache-2.0
// The workload of the fault suite: M clients x K resources. Every (client,
// resource) pair is one coroutine that loops: acquire (fenced) -> critical
// section (a fenced_store write with the token on the storage redis, then a
// short sleep) -> release, recording every operation in the history. All
// clients are redlock::async_client on one io_context thread (two when some
// clients live in a network namespace). Every operation runs under a guard
// longer than its bound, so nothing can hang the run; an operation cut by the
// guard is recorded with completion = guard time and is reported by (d).
#pragma once

#include "checkers.hpp"
#include "drift_clock.hpp"
#include "fenced_storage.hpp"
#include "history.hpp"
#include "lease_probe.hpp"
#include "storage_register.hpp"

#include <redlock/lock.hpp>
#include <redlock/options.hpp>

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace redlock::fault {

using std::chrono::milliseconds;

struct workload_options {
  std::size_t clients = 4;
  std::size_t resources = 3;
  std::string key_prefix = "fault:";  ///< client_options::key_prefix
  std::uint64_t seed = 1;
  milliseconds ttl_min{300}, ttl_max{800};  ///< TTL of each acquisition, uniform
  milliseconds node_timeout{40};
  milliseconds wait{250};  ///< acquire_options::wait
  milliseconds retry_delay{10}, retry_jitter{8};
  /// Check (o): what the machine may add to a waiter's turn beyond retry
  /// delay + jitter + node timeout (a sanitized build on 2 busy cores).
#if defined(__SANITIZE_ADDRESS__)
  milliseconds wakeup_slack{400};
#else
  milliseconds wakeup_slack{100};
#endif
  /// Check (h): what a sanitized build on 2 busy cores may add to a lost
  /// signal (seen: 123 ms past the bound, a client's strand busy with four
  /// masters' replies sliced into 1-byte pieces); none when optimized.
#if defined(__SANITIZE_ADDRESS__)
  milliseconds lost_signal_slack{300};
#else
  milliseconds lost_signal_slack{0};
#endif
  milliseconds hold_max{3};  ///< critical section sleep, uniform in [0, hold_max] ...
  /// ... or, with this probability, a long one that ends anywhere up to the
  /// end of the window (less data_margin): a second holder, if the lock
  /// ever lets one in, meets the first inside its section.
  double long_hold_p = 0.2;
  /// The data-level verdict (storage_register.hpp): every section also does
  /// an unfenced read-modify-write of its names' registers on the storage,
  /// judged by check_data from the storage alone.
  bool data = true;
  /// A section begins only with more than twice this left of its window,
  /// and writes back only with more than this left (else it abandons): the
  /// time its write-back may take. max(this, ttl / 10).
  milliseconds data_margin{20};
  /// TEST-ONLY switches that break the lock, to show the data verdict
  /// failing: every client locks under a key prefix of its own (a lock that
  /// grants everyone; the registers stay shared), or every holder believes
  /// its window `overclaim` (a fraction of it) longer than the library says.
  bool grant_everyone = false;
  double overclaim = 0;
  /// TEST-ONLY, for the names check: a name recorded as asked for
  /// together that was never asked for.
  std::string phantom_name;
  /// Leases: the workers of the last `lease_resources` resources hold their
  /// locks as leases instead of short critical sections: 60% with renew = true,
  /// held `lease_hold_min .. lease_hold_max` times the TTL (past it, so the
  /// watchdog must renew); the others with 2 to 5 explicit extends to TTLs of
  /// 0.25 .. 2 times the first one (shorter AND longer). The holder looks at
  /// valid_until() and lost() every `lease_look` while it holds, and the
  /// masters are read directly (lease_probe) after each extend and before the
  /// release. A renewed lock that runs out waits up to `lost_slack` for its
  /// lost signal before releasing.
  std::size_t lease_resources = 0;
  milliseconds lease_ttl_min{100}, lease_ttl_max{300};
  double lease_hold_min = 1.2, lease_hold_max = 3.0;
  milliseconds lease_look{5};
  milliseconds lost_slack{250};
  double drift_factor = 0.01;
  bool fenced = true;          ///< fenced acquisitions and storage writes
  /// When set (and fenced), each section's fenced write is a
  /// read-modify-write of its name's counter on this storage, in a
  /// transaction fenced with the holder's token (fenced_storage.hpp),
  /// instead of a fenced_store write on the storage redis. Recorded as a
  /// write (judged by (c)); the round judges the storage's table too.
  std::shared_ptr<fenced_storage> storage;
  /// The lock kind every worker uses; reentrant and fair workers are each
  /// their own owner (one per resource within a client).
  redlock::lock_kind kind = redlock::lock_kind::mutex;
  /// Semaphores (kind semaphore): the number of permits of every resource.
  /// Each holder records its slot and the slot's token; its storage writes
  /// go to the slot (fencing tokens are per slot).
  unsigned permits = 0;
  /// Read-write locks (kind read or write): each acquisition is a read with
  /// this probability, else a write. Only writers write to storage (readers'
  /// tokens are not ordered among themselves).
  double read_p = 0.7;
  /// Several names held together (mutex): when >= 2, each acquisition takes
  /// its resource with 1 .. together_max - 1 others of the resources
  /// (acquire_options::other_names), so the sets overlap; the holder records
  /// every name with its token and writes each name's data with that token.
  std::size_t together_max = 0;
  /// Reentrant and fair locks: with this probability a short or long section
  /// re-enters its hold (a second acquisition by the same owner, recorded
  /// with op::reentry_of) and releases the two levels in either order.
  double reentry_p = 0.25;
  /// Leader election: every worker campaigns for its resource
  /// (async_campaign: fenced, renewed, waiting `wait`), holds the leadership
  /// as a renewed lease (hold_lease) and resigns (async_resign).
  bool election = false;
  /// Fair locks: short, so a waiter that stopped (and the queue keys) are gone
  /// well before the end-of-round residue check.
  milliseconds queue_timeout{400};
  /// Fair locks: when set, odd-numbered clients wait in line with this queue
  /// timeout instead, so one lock's line holds waiters with two timeouts
  /// (a poll must not cut the line's keys short for the longer one).
  std::optional<milliseconds> odd_clients_queue_timeout;
  bool injected_clocks = true; ///< each client gets a drift_clock
  /// Threads running the clients' io_context (> 1: the clients' handlers on
  /// several threads, each async_client on a strand of its own).
  std::size_t io_threads = 1;
  milliseconds store_timeout{500};
  milliseconds reconnect_max{200};
  milliseconds stall_timeout{500};
  /// The clients' connect timeout (four node timeouts, at least 200 ms).
  milliseconds connect_timeout() const { return std::max(node_timeout * 4, milliseconds(200)); }

  /// When set, client c connects to client_uris[c] (its own links to the
  /// masters: cluster::uris_of) instead of the shared uris.
  std::vector<std::vector<std::string>> client_uris;

  /// Clients [0, netns_clients) run on a second io thread that entered the
  /// network namespace at `netns_path` and use netns_uris/netns_storage_uri.
  std::string netns_path;
  std::size_t netns_clients = 0;
  std::vector<std::string> netns_uris;
  std::string netns_storage_uri;
};

class workload {
 public:
  workload(workload_options o, std::vector<std::string> uris, std::string storage_uri, history& h);
  ~workload();
  workload(const workload&) = delete;
  workload& operator=(const workload&) = delete;

  void start();
  /// Workers finish their current cycle (releasing) and stop; the clients are
  /// destroyed. Returns the steady time at which stop was requested.
  time_point stop();

  const workload_options& options() const { return options_; }
  const std::vector<std::string>& resources() const { return resources_; }
  /// The key of resource `r` on the masters (prefix + name).
  std::string key(const std::string& r) const { return options_.key_prefix + r; }
  /// The fencing counters of resource `r` on the masters: its own, or one
  /// per permit slot of a semaphore.
  std::vector<std::string> fence_keys(const std::string& r) const;
  std::size_t clients() const { return options_.clients; }

  /// The injected clock of `client` (injected_clocks only).
  drift_clock& clock(std::size_t client) { return *clocks_.at(client); }
  /// While set, `client`'s critical sections sleep past their validity before
  /// writing: a paused holder (GC, SIGSTOP) whose late write storage must refuse.
  void set_holder_pause(std::size_t client, bool on) { holder_paused_.at(client)->store(on); }
  /// Writes `client` made as a paused holder after its window ended so far.
  std::size_t paused_writes(std::size_t client) const { return paused_writes_.at(client)->load(); }
  /// Locks `client` holds now, and the acquisitions it completed so far.
  std::size_t holding(std::size_t client) const { return counts_.at(client)->holding.load(); }
  std::size_t acquired_by(std::size_t client) const { return counts_.at(client)->acquired.load(); }

  /// Maps a valid_until() reading of client clock `clock` to steady time.
  time_point to_steady(int clock, time_point reading) const;
  /// Bounds for check_bounded, derived from the options.
  op_bounds bounds() const;

  /// Counters, for progress output.
  std::size_t acquired() const { return acquired_.load(); }
  /// Workers that died of an exception (each stopped testing its resource).
  std::size_t died() const { return died_.load(); }
  /// The register name of lock name `r` on the storage (shared by every
  /// client, whatever their key prefixes).
  std::string register_name(const std::string& r) const { return options_.key_prefix + r; }

  /// Where leases are checked on the masters; set before start().
  void set_probe(std::shared_ptr<lease_probe> p) { probe_ = std::move(p); }

 private:
  struct group;
  struct client_slot;
  void run_worker(std::size_t client, std::size_t resource);
  boost::asio::awaitable<void> hold_lease(client_slot& slot, std::size_t client, lock l, std::size_t acquire_op,
                                          bool renewed, std::shared_ptr<std::atomic<long long>> lost_at,
                                          std::mt19937_64& rng);
  boost::asio::awaitable<void> probe_masters(std::size_t client, const lock& l, std::size_t acquire_op);
  boost::asio::awaitable<void> probe_key(std::size_t client, const lock& l, std::size_t acquire_op, std::string name,
                                         std::string key, bool hash);
  /// Releases (an election: resigns) `l`, recorded as a release of acquisition `acquire_op`.
  boost::asio::awaitable<void> release(client_slot& slot, std::size_t client, const std::string& resource,
                                       const lock& l, std::size_t acquire_op);
  /// The end of the window client `c` believes `l` has (steady time; with
  /// `overclaim`, stretched from `acquired`).
  time_point believed_until(std::size_t c, const lock& l, time_point acquired) const;
  /// One script on the storage for client `c`, waited for (a none reply:
  /// no answer in time).
  boost::asio::awaitable<storage_reply> storage_call(std::size_t c, std::vector<std::string> argv);

  workload_options options_;
  std::vector<std::string> uris_;
  std::string storage_uri_;
  history& history_;
  std::vector<std::string> resources_;
  std::vector<std::shared_ptr<drift_clock>> clocks_;
  std::vector<std::unique_ptr<std::atomic<bool>>> holder_paused_;
  std::vector<std::unique_ptr<std::atomic<std::size_t>>> paused_writes_;
  struct client_counts {
    std::atomic<std::size_t> holding{0}, acquired{0}, reentries{0};
  };
  std::vector<std::unique_ptr<client_counts>> counts_;
  std::vector<std::unique_ptr<group>> groups_;
  std::vector<std::unique_ptr<client_slot>> slots_;
  std::shared_ptr<lease_probe> probe_;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> running_{0};
  std::atomic<std::size_t> acquired_{0};
  std::atomic<std::size_t> died_{0};
  bool started_ = false, stopped_ = false;
};

}  // namespace redlock::fault
