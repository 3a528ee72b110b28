// SPDX-License-Identifier: Apache-2.0
// The configurations of the nemesis's histories: which servers, which
// workload, which faults, by seed.
#include "nemesis.hpp"

namespace redlock::fault {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

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

}  // namespace redlock::fault
