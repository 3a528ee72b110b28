// SPDX-License-Identifier: Apache-2.0
// `alloc`: heap allocations per uncontended acquire+release pair, counted by
// replacing malloc, calloc, realloc and the aligned allocators in this
// executable (glibc lets a program replace them; the counters forward to
// glibc's own __libc_*). The aligned ones matter: Asio's handler memory comes
// from std::aligned_alloc.
// Every thread is counted, the client's I/O thread included, from the first
// acquire call to the last release's completion, driven by plain callbacks
// so the bench itself allocates nothing per pair. Sanitizer builds bring
// their own allocator: there the scenario says it is unavailable.
#include "bench.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <optional>
#include <utility>

// Build with -DREDLOCK_BENCH_NO_MALLOC_HOOK to profile the bench with
// heaptrack instead (its preload cannot see allocations once this executable
// defines malloc itself); `alloc` is then skipped.
#if REDLOCK_BENCH_SANITIZE || defined(REDLOCK_BENCH_NO_MALLOC_HOOK)
#define REDLOCK_BENCH_COUNTS_MALLOC 0
#else
#define REDLOCK_BENCH_COUNTS_MALLOC 1
#endif

#if REDLOCK_BENCH_COUNTS_MALLOC
namespace {
std::atomic<bool> counting{false};
std::atomic<std::uint64_t> allocations{0};
void note() {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);

void* malloc(std::size_t n) {
  note();
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t size) {
  note();
  return __libc_calloc(n, size);
}
void* realloc(void* p, std::size_t n) {
  note();
  return __libc_realloc(p, n);
}
void* aligned_alloc(std::size_t alignment, std::size_t n) {
  note();
  return __libc_memalign(alignment, n);
}
void* memalign(std::size_t alignment, std::size_t n) {
  note();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t n) {
  note();
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void free(void* p) { __libc_free(p); }
}
#endif

namespace bench {

#if REDLOCK_BENCH_COUNTS_MALLOC
namespace {

// Acquire then release `names` one after the other, each step started from
// the previous one's completion handler (a small lambda: no allocation of
// ours). Returns the pairs that completed.
std::size_t run_pairs(redlock::async_client& c, std::vector<std::string>& names, const redlock::acquire_options& o,
                      boost::asio::io_context& io) {
  std::size_t next = 0, done = 0;
  bool finished = false;
  std::function<void()> step;  // built once, before counting starts
  step = [&] {
    if (next == names.size()) {
      finished = true;
      return;
    }
    c.async_acquire(std::move(names[next++]), o, [&](boost::system::error_code ec, redlock::lock l) {
      if (ec) return step();
      c.async_release(l, [&](boost::system::error_code) {
        ++done;
        step();
      });
    });
  };
  step();
  // The client's connections keep reads pending: run until the chain ends.
  io.restart();
  while (!finished && io.run_one()) {
  }
  return done;
}

}  // namespace
#endif

outcome run_alloc(settings& s) {
  outcome r;
#if !REDLOCK_BENCH_COUNTS_MALLOC
  r.skipped = "sanitizer builds replace malloc themselves (or built with REDLOCK_BENCH_NO_MALLOC_HOOK): allocations "
              "not counted";
  return r;
#else
  const std::size_t warm = 200, n = s.sized<std::size_t>(2000, 500, 500);
  redlock::acquire_options o;
  o.ttl = s.ttl;
  // Short names (within std::string's small buffer): moving them into the
  // call allocates nothing.
  auto names_for = [&](char tag, std::size_t count) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < count; ++i) names.push_back(std::string(1, tag) + std::to_string(i));
    return names;
  };
  // One client, warmed up, then `n` counted pairs: {pairs, allocations}.
  auto count_pairs = [&](bool one_thread, char tag) -> std::pair<std::size_t, std::uint64_t> {
    boost::asio::io_context io{1};
    std::optional<redlock::async_client> client;
    auto co = s.client_options();
    co.key_prefix = s.tag + ":";  // unique keys per run, short names
    co.executor_runs_on_one_thread = one_thread;
    client.emplace(io.get_executor(), co);
    auto warm_names = names_for(static_cast<char>(tag + 1), warm);
    run_pairs(*client, warm_names, o, io);
    auto names = names_for(tag, n);
    allocations.store(0);
    counting.store(true);
    auto pairs = run_pairs(*client, names, o, io);
    counting.store(false);
    auto counted = allocations.load();
    client.reset();
    io.restart();
    io.run_for(std::chrono::seconds(2));
    return {pairs, counted};
  };
  auto [pairs, counted] = count_pairs(false, 'a');
  auto [pairs_one, counted_one] = count_pairs(true, 'c');
  if (pairs == 0 || pairs_one == 0) {
    r.skipped = "no pair completed";
    return r;
  }
  double per_pair = static_cast<double>(counted) / static_cast<double>(pairs);
  double per_pair_one = static_cast<double>(counted_one) / static_cast<double>(pairs_one);
  auto masters = static_cast<double>(s.masters.size());
  r.data["pairs"] = pairs;
  r.data["allocations"] = counted;
  r.data["allocations_per_pair"] = per_pair;
  r.data["per_master_per_pair"] = per_pair / masters;
  // The same with client_options::executor_runs_on_one_thread (no strand of
  // the client's own; what the sync client does on its I/O thread).
  r.data["one_thread_allocations_per_pair"] = per_pair_one;
  r.data["one_thread_per_master_per_pair"] = per_pair_one / masters;
  r.data["counted"] = "malloc, calloc, realloc and aligned_alloc/memalign/posix_memalign calls of every thread, from the first acquire to the last release";
  return r;
#endif
}

}  // namespace bench
