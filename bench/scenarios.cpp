// SPDX-License-Identifier: Apache-2.0
// The scenarios of redlock-bench. Each builds its own clients (so no state
// leaks from one to the next), warms up, then measures.
#include "bench.hpp"

#include <proxy/fault_proxy.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <random>
#include <optional>
#include <poll.h>
#include <stdexcept>
#include <thread>

namespace bench {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace std::chrono_literals;

namespace {

constexpr auto as_tuple_awaitable = asio::as_tuple(asio::use_awaitable);

double round_to(double x, int decimals) {
  double scale = std::pow(10.0, decimals);
  return std::round(x * scale) / scale;
}

// Runs coroutines on `io`, on this thread, until every one has finished (the
// client's connections keep the context busy, so run() alone would not return).
void run_all(asio::io_context& io, std::vector<asio::awaitable<void>> tasks) {
  std::size_t left = tasks.size();
  std::exception_ptr first;
  for (auto& t : tasks)
    asio::co_spawn(io, std::move(t), [&](std::exception_ptr e) {
      if (e && !first) first = e;
      if (--left == 0) io.stop();
    });
  io.restart();
  io.run();
  if (first) std::rethrow_exception(first);
  if (left != 0) throw std::runtime_error("io_context ran out of work with tasks unfinished");
}

void run_one(asio::io_context& io, asio::awaitable<void> task) {
  std::vector<asio::awaitable<void>> v;
  v.push_back(std::move(task));
  run_all(io, std::move(v));
}

// One async_client on a single-threaded io_context driven by this thread. On
// destruction the client is shut down and the context run until its sockets
// are closed.
struct async_env {
  asio::io_context io{1};
  std::optional<redlock::async_client> client;

  explicit async_env(const settings& s) { client.emplace(io.get_executor(), s.client_options()); }
  ~async_env() {
    client.reset();
    try {
      io.restart();
      io.run_for(2s);
    } catch (...) {
    }
  }
};

struct pair_samples {
  std::vector<double> acquire, release, pair;  // µs
  std::size_t failures = 0;                    // acquisitions that failed
  std::map<std::string, std::size_t> errors;
  std::vector<std::uint64_t> fences;
  double elapsed_s = 0;

  double pairs_per_s() const { return elapsed_s > 0 ? static_cast<double>(pair.size()) / elapsed_s : 0; }
};

// Sequential acquire+release. Names are prefix + i, or just prefix when
// `distinct` is false (one resource: its fence counter keeps growing).
asio::awaitable<void> sequential_pairs(redlock::async_client& c, std::string prefix, bool distinct, std::size_t n,
                                       redlock::acquire_options o, pair_samples& out) {
  auto start = steady::now();
  for (std::size_t i = 0; i < n; ++i) {
    std::string name = distinct ? prefix + std::to_string(i) : prefix;
    auto t0 = steady::now();
    auto [ec, l] = co_await c.async_acquire(std::move(name), o, as_tuple_awaitable);
    auto t1 = steady::now();
    if (ec) {
      ++out.failures;
      ++out.errors[error_name(ec)];
      continue;
    }
    if (auto f = l.fence()) out.fences.push_back(*f);
    auto [rec] = co_await c.async_release(l, as_tuple_awaitable);
    auto t2 = steady::now();
    if (rec) ++out.errors["release:" + error_name(rec)];
    out.acquire.push_back(micros(t0, t1));
    out.release.push_back(micros(t1, t2));
    out.pair.push_back(micros(t0, t2));
  }
  out.elapsed_s = std::chrono::duration<double>(steady::now() - start).count();
}

void put_pairs(json::object& o, pair_samples& p) {
  o["samples"] = p.pair.size();
  o["acquire_us"] = to_json(summarize(p.acquire));
  o["release_us"] = to_json(summarize(p.release));
  o["pair_us"] = to_json(summarize(p.pair));
  o["pairs_per_s"] = std::round(p.pairs_per_s());
  o["failures"] = p.failures;
  if (!p.errors.empty()) o["errors"] = counts_json(p.errors);
}

redlock::acquire_options single_attempt(const settings& s) {
  redlock::acquire_options o;
  o.ttl = s.ttl;  // wait 0, max_attempts 0: one attempt, no retries
  return o;
}

}  // namespace

// ---- floor: one master, plain blocking hiredis --------------------------------------

// The same two rounds the library sends for an unfenced mutex (SET NX PX to
// every master, then the compare-and-delete script), hand-written on plain
// non-blocking hiredis contexts with poll(), each round done at quorum: what
// N masters on this machine cost before any library code. Late replies are
// drained outside the timed part.
std::optional<std::vector<double>> quorum_floor(settings& s, std::size_t n) {
  std::vector<hiredis_ptr> ctx;
  for (auto& m : s.masters) {
    if (m.tls) return std::nullopt;
    ctx.push_back(connect_blocking(m, 2000ms));
  }
  const std::string release =
      "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) end return 0";
  std::string sha;
  for (auto& c : ctx) {
    auto* rep = static_cast<redisReply*>(redisCommand(c.get(), "SCRIPT LOAD %s", release.c_str()));
    if (!rep || rep->type != REDIS_REPLY_STRING) throw std::runtime_error("quorum floor: SCRIPT LOAD failed");
    sha.assign(rep->str, rep->len);
    freeReplyObject(rep);
  }
  const std::size_t quorum = ctx.size() / 2 + 1;
  const std::string ttl = std::to_string(s.ttl.count());
  std::vector<std::size_t> owed(ctx.size(), 0);  // replies not read yet, per master
  // Sends argv to every master; returns once `need` replies to it arrived.
  // A master's late reply to the previous round is read first and not
  // counted: counting it let a round finish before a quorum answered it.
  auto round = [&](const std::vector<std::string>& argv, std::size_t need) {
    std::vector<std::size_t> earlier = owed;
    std::vector<const char*> a;
    std::vector<size_t> l;
    for (auto& x : argv) {
      a.push_back(x.data());
      l.push_back(x.size());
    }
    for (std::size_t i = 0; i < ctx.size(); ++i) {
      redisAppendCommandArgv(ctx[i].get(), int(a.size()), a.data(), l.data());
      int done = 0;
      while (!done)
        if (redisBufferWrite(ctx[i].get(), &done) != REDIS_OK) throw std::runtime_error("quorum floor: write failed");
      ++owed[i];
    }
    std::size_t got = 0;
    std::vector<pollfd> fds(ctx.size());
    while (got < need) {
      for (std::size_t i = 0; i < ctx.size(); ++i) fds[i] = {ctx[i]->fd, short(owed[i] ? POLLIN : 0), 0};
      if (::poll(fds.data(), fds.size(), 2000) <= 0) throw std::runtime_error("quorum floor: no reply");
      for (std::size_t i = 0; i < ctx.size(); ++i) {
        if (!(fds[i].revents & POLLIN)) continue;
        if (redisBufferRead(ctx[i].get()) != REDIS_OK) throw std::runtime_error("quorum floor: read failed");
        void* rep = nullptr;
        while (owed[i] && redisGetReplyFromReader(ctx[i].get(), &rep) == REDIS_OK && rep) {
          freeReplyObject(rep);
          --owed[i];
          if (earlier[i] > 0)
            --earlier[i];
          else
            ++got;
          rep = nullptr;
        }
      }
    }
  };
  auto drain = [&] {
    std::size_t left = 0;
    for (auto o : owed) left += o;
    if (left) round({"PING"}, ctx.size());  // a PING queues behind them: all read once every PING is
  };
  std::vector<double> pairs;
  pairs.reserve(n);
  const std::size_t warm = n / 5;
  for (std::size_t i = 0; i < warm + n; ++i) {
    auto key = s.tag + ":floor:q:" + std::to_string(i);
    auto t0 = steady::now();
    round({"SET", key, "bench", "NX", "PX", ttl}, quorum);
    round({"EVALSHA", sha, "1", key, "bench"}, quorum);
    auto t1 = steady::now();
    drain();
    if (i >= warm) pairs.push_back(micros(t0, t1));
  }
  return pairs;
}

outcome run_floor(settings& s) {
  outcome r;
  auto& m = s.masters.front();
  if (m.tls) {
    r.skipped = "the first master uses rediss://; the floor's plain hiredis context speaks TCP only";
    return r;
  }
  auto c = connect_blocking(m, 2000ms);
  const std::string script = "if redis.call('SET',KEYS[1],ARGV[1],'NX','PX',ARGV[2]) then return 1 end return 0";
  std::string sha;
  {
    auto* rep = static_cast<redisReply*>(redisCommand(c.get(), "SCRIPT LOAD %s", script.c_str()));
    if (!rep || rep->type != REDIS_REPLY_STRING) {
      if (rep) freeReplyObject(rep);
      throw std::runtime_error("floor: SCRIPT LOAD failed");
    }
    sha.assign(rep->str, rep->len);
    freeReplyObject(rep);
  }
  const std::size_t warm = s.quick ? 500 : 2000;
  const std::size_t n = s.quick ? 3000 : 20000;
  const std::string ttl = std::to_string(s.ttl.count());
  std::vector<double> evalsha, set;
  evalsha.reserve(n);
  set.reserve(n);
  auto command = [&](const std::vector<std::string>& argv, auto check) {
    const char* args[8];
    size_t lens[8];
    for (std::size_t i = 0; i < argv.size(); ++i) {
      args[i] = argv[i].data();
      lens[i] = argv[i].size();
    }
    auto t0 = steady::now();
    auto* rep = static_cast<redisReply*>(redisCommandArgv(c.get(), int(argv.size()), args, lens));
    auto t1 = steady::now();
    if (!rep) throw std::runtime_error("floor: " + argv[0] + " failed: " + std::string(c->errstr));
    bool ok = check(*rep);
    freeReplyObject(rep);
    if (!ok) throw std::runtime_error("floor: unexpected reply to " + argv[0]);
    return micros(t0, t1);
  };
  // Interleaved, so that drift of the machine's load affects both alike.
  for (std::size_t i = 0; i < warm + n; ++i) {
    std::vector<std::string> e{"EVALSHA", sha, "1", s.tag + ":floor:e:" + std::to_string(i), "bench", ttl};
    double te = command(e, [](const redisReply& rep) { return rep.type == REDIS_REPLY_INTEGER && rep.integer == 1; });
    std::vector<std::string> p{"SET", s.tag + ":floor:s:" + std::to_string(i), "bench", "PX", ttl};
    double ts = command(p, [](const redisReply& rep) { return rep.type == REDIS_REPLY_STATUS; });
    if (i >= warm) {
      evalsha.push_back(te);
      set.push_back(ts);
    }
  }
  r.data["node"] = m.uri;
  r.data["samples"] = n;
  r.data["script"] = script;
  r.data["evalsha_us"] = to_json(summarize(evalsha));
  r.data["set_us"] = to_json(summarize(set));
  if (auto q = quorum_floor(s, s.quick ? 2000 : 10000)) r.data["quorum_pair_us"] = to_json(summarize(*q));
  return r;
}

// ---- uncontended: sequential pairs on distinct names --------------------------------

outcome run_uncontended(settings& s) {
  outcome r;
  const std::size_t warm = s.quick ? 200 : 500;
  const std::size_t n = s.quick ? 1000 : 5000;
  auto o = single_attempt(s);
  pair_samples p;
  {
    async_env env(s);
    pair_samples w;
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":uw:", true, warm, o, w));
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":u:", true, n, o, p));
  }
  r.data["api"] = "async_client, io_context run to completion on the calling thread";
  put_pairs(r.data, p);

  // The sync facade: the same pairs through its I/O thread (a thread handoff
  // each way), for comparison; then the fair lock's (its scripts keep a
  // line: the yardstick for its hand-off under contention).
  const std::size_t sync_n = s.quick ? 250 : 1000;
  struct sync_run {
    std::vector<double> acq, pair;
    std::size_t failures = 0;
    std::map<std::string, std::size_t> errors;
    double elapsed = 0;
  };
  auto sync_pairs = [&](const redlock::acquire_options& opts, const std::string& prefix) {
    sync_run out;
    redlock::client c(s.client_options());
    for (int phase = 0; phase < 2; ++phase) {
      std::size_t count = phase == 0 ? warm / 2 : sync_n;
      auto start = steady::now();
      for (std::size_t i = 0; i < count; ++i) {
        auto name = s.tag + (phase == 0 ? ":" + prefix + "w:" : ":" + prefix + ":") + std::to_string(i);
        auto t0 = steady::now();
        try {
          auto l = c.try_acquire(name, opts);
          auto t1 = steady::now();
          if (!l) {
            ++out.failures;
            ++out.errors["not_acquired"];
            continue;
          }
          c.release(*l);
          auto t2 = steady::now();
          if (phase == 1) {
            out.acq.push_back(micros(t0, t1));
            out.pair.push_back(micros(t0, t2));
          }
        } catch (const redlock::error& e) {
          ++out.failures;
          ++out.errors[error_name(e.code())];
        }
      }
      if (phase == 1) out.elapsed = std::chrono::duration<double>(steady::now() - start).count();
    }
    return out;
  };
  auto put_sync = [&](const std::string& prefix, sync_run run) {
    r.data[prefix + "samples"] = run.pair.size();
    r.data[prefix + "acquire_us"] = to_json(summarize(run.acq));
    r.data[prefix + "pair_us"] = to_json(summarize(run.pair));
    r.data[prefix + "pairs_per_s"] =
        run.elapsed > 0 ? std::round(static_cast<double>(run.pair.size()) / run.elapsed) : 0.0;
    if (run.failures) r.data[prefix + "failures"] = run.failures;
    if (!run.errors.empty()) r.data[prefix + "errors"] = counts_json(run.errors);
  };
  put_sync("sync_", sync_pairs(o, "s"));
  auto fair = o;
  fair.kind = redlock::lock_kind::fair;
  put_sync("fair_sync_", sync_pairs(fair, "f"));
  return r;
}

// ---- throughput: 64 concurrent loops on one async_client, one thread ------------------

outcome run_throughput(settings& s) {
  outcome r;
  const std::size_t in_flight = 64;
  const auto warm = s.quick ? 500ms : 1000ms;
  const auto secs = s.quick ? 3s : 10s;
  auto o = single_attempt(s);
  std::vector<double> lat;
  std::size_t done = 0, failures = 0;
  std::map<std::string, std::size_t> errors;
  {
    async_env env(s);
    auto warm_end = steady::now() + warm;
    auto end = warm_end + secs;
    auto worker = [&](std::size_t w) -> asio::awaitable<void> {
      auto& c = *env.client;
      std::string prefix = s.tag + ":t:" + std::to_string(w) + ":";
      for (std::size_t k = 0; steady::now() < end; ++k) {
        auto t0 = steady::now();
        auto [ec, l] = co_await c.async_acquire(prefix + std::to_string(k), o, as_tuple_awaitable);
        if (ec) {
          if (t0 >= warm_end) {
            ++failures;
            ++errors[error_name(ec)];
          }
          continue;
        }
        auto [rec] = co_await c.async_release(l, as_tuple_awaitable);
        auto t2 = steady::now();
        if (t2 >= warm_end && t2 <= end) {
          if (rec) ++errors["release:" + error_name(rec)];
          ++done;
          lat.push_back(micros(t0, t2));
        }
      }
    };
    std::vector<asio::awaitable<void>> tasks;
    for (std::size_t w = 0; w < in_flight; ++w) tasks.push_back(worker(w));
    run_all(env.io, std::move(tasks));
  }
  double seconds = std::chrono::duration<double>(secs).count();
  r.data["in_flight"] = in_flight;
  r.data["seconds"] = seconds;
  r.data["pairs"] = done;
  r.data["pairs_per_s"] = std::round(static_cast<double>(done) / seconds);
  r.data["pair_us"] = to_json(summarize(lat));
  r.data["failures"] = failures;
  if (!errors.empty()) r.data["errors"] = counts_json(errors);
  return r;
}

// ---- contended: workers (threads, each its own sync client) on one key --------------

namespace {

// s.workers workers (each its own client) on one key; `kind` mutex, fair or
// semaphore (with `permits` > 1). Besides throughput and fairness it measures
// the most holders inside at once (more than `permits` is a violation), for a
// single holder the hand-off (a holder's release call to the next holder's
// acquisition) and, for the fair lock, FIFO violations.
// A read-write lock (kind read): each acquisition is a write with
// probability `write_share`; a writer inside with anyone else, or a reader
// inside with a writer, is a violation.
outcome contended_run(settings& s, redlock::lock_kind kind, const std::string& suffix, unsigned permits = 1,
                      double write_share = 0) {
  outcome r;
  const std::size_t workers = s.workers;
  const bool semaphore = kind == redlock::lock_kind::semaphore;
  const bool rw = kind == redlock::lock_kind::read;
  const int limit = static_cast<int>(permits);
  const int secs = s.quick ? 4 : 10;
  const auto section = 20us;  // time spent "inside", yielding the CPU meanwhile
  const std::string key = s.tag + ":" + suffix;

  struct acquisition {
    steady::time_point asked, got;
  };
  struct worker_result {
    std::size_t successes = 0;
    std::vector<double> wait;  // µs from the acquire call to holding the lock
    std::vector<double> handoff;
    std::vector<double> release;  // µs the holder's release took: one quorum round under this load
    std::vector<double> write_wait;  // rw: the writers' share of `wait`
    std::size_t writes = 0;
    std::vector<acquisition> log;
    std::map<std::string, std::size_t> errors;
  };
  std::atomic<steady::rep> last_release{0};  // when the previous holder called release
  std::vector<worker_result> results(workers);
  std::vector<std::unique_ptr<redlock::client>> clients;
  asio::io_context one_loop(1);  // --one-thread: every worker's client on it
  std::vector<std::unique_ptr<redlock::async_client>> async_clients;
  std::vector<std::shared_ptr<redlock::counters>> counters;  // attempts per section
  for (std::size_t w = 0; w < workers; ++w) {
    auto opts = s.client_options();
    opts.observer = counters.emplace_back(std::make_shared<redlock::counters>());
    if (s.one_thread) {
      auto& c = *async_clients.emplace_back(std::make_unique<redlock::async_client>(one_loop.get_executor(), opts));
      // Warm-up: open the connections (a failure here shows up in the run).
      asio::co_spawn(
          one_loop,
          [&c, name = s.tag + ":cw:" + std::to_string(w), o = single_attempt(s)]() -> asio::awaitable<void> {
            auto [ec, l] = co_await c.async_acquire(name, o, asio::as_tuple(asio::use_awaitable));
            if (!ec) co_await c.async_release(std::move(l), asio::as_tuple(asio::use_awaitable));
          },
          [&one_loop](std::exception_ptr) { one_loop.stop(); });  // the clients keep the loop busy
      one_loop.run();
      one_loop.restart();
      continue;
    }
    clients.push_back(std::make_unique<redlock::client>(opts));
    // Warm-up: open the connections (a failure here shows up in the run).
    for (int i = 0; i < 20; ++i) {
      try {
        auto l = clients.back()->try_acquire(s.tag + ":cw:" + std::to_string(w) + ":" + std::to_string(i),
                                             single_attempt(s));
        if (l) clients.back()->release(*l);
      } catch (const redlock::error&) {
      }
    }
  }

  std::uint64_t attempts_at_start = 0;  // the warm-up's attempts are not the run's
  for (auto& c : counters) attempts_at_start += c->acquire_attempts.load();
  std::atomic<int> inside{0}, max_inside{0}, writers_inside{0};
  std::atomic<std::size_t> violations{0}, expired{0};
  std::vector<std::atomic<std::size_t>> per_permit(semaphore ? permits : 0);  // sections per slot held
  std::vector<std::atomic<std::size_t>> per_second(static_cast<std::size_t>(secs));
  auto start = steady::now() + 100ms;
  auto end = start + std::chrono::seconds(secs);

  // What one section does to the shared counters, whichever way the workers run.
  auto enter = [&](worker_result& out, const redlock::lock& l, bool writes, steady::time_point t0,
                   steady::time_point got) {
    if (l.remaining_validity() <= 0ms) {
      ++expired;
      return false;
    }
    int now_inside = inside.fetch_add(1) + 1;
    if (rw) {
      int writing = writes ? writers_inside.fetch_add(1) + 1 : writers_inside.load();
      if ((writes && now_inside > 1) || (!writes && writing > 0)) ++violations;  // a writer not alone
    } else if (now_inside > limit) {
      ++violations;  // more holders inside than there are permits
    }
    for (int m = max_inside.load(); now_inside > m && !max_inside.compare_exchange_weak(m, now_inside);) {
    }
    if (auto slot = l.permit(); slot && *slot < per_permit.size()) ++per_permit[*slot];
    auto bucket = static_cast<std::size_t>(std::chrono::duration_cast<std::chrono::seconds>(got - start).count());
    ++per_second[std::min(bucket, per_second.size() - 1)];
    if (writes) out.write_wait.push_back(micros(t0, got));
    out.wait.push_back(micros(t0, got));
    out.log.push_back({t0, got});
    if (auto prev = last_release.load(); prev != 0)
      out.handoff.push_back(micros(steady::time_point(steady::duration(prev)), got));
    return true;
  };
  auto leave = [&](worker_result& out, bool writes) {
    if (writes) writers_inside.fetch_sub(1);
    inside.fetch_sub(1);
    ++out.successes;
    if (writes) ++out.writes;
  };
  auto options_for = [&](std::mt19937& rng, std::bernoulli_distribution& writes_now, steady::time_point t0) {
    redlock::acquire_options o;
    o.ttl = s.ttl;
    o.kind = rw && writes_now(rng) ? redlock::lock_kind::write : kind;
    o.wait = std::chrono::ceil<milliseconds>(end - t0);
    o.retry_delay = 10ms;
    o.retry_jitter = 10ms;
    if (semaphore) o.permits = permits;
    return o;
  };

  if (s.one_thread) {
    // The peers' harness model: every worker a loop on one event loop (one
    // thread), each with its own client; "inside" lasts one turn of the loop.
    std::size_t running = workers;
    for (std::size_t w = 0; w < workers; ++w)
      asio::co_spawn(
          one_loop,
          [&, w]() -> asio::awaitable<void> {
            auto& c = *async_clients[w];
            auto& out = results[w];
            std::mt19937 rng(static_cast<unsigned>(w) + 1);
            std::bernoulli_distribution writes_now(write_share);
            asio::steady_timer until_start(one_loop, start);
            co_await until_start.async_wait(asio::use_awaitable);
            for (;;) {
              auto t0 = steady::now();
              if (t0 >= end) break;
              auto o = options_for(rng, writes_now, t0);
              // The sync client names a fair waiter after its thread; here each worker is one.
              if (o.kind == redlock::lock_kind::fair) o.owner = "worker" + std::to_string(w);
              const bool writes = o.kind == redlock::lock_kind::write;
              auto [ec, l] = co_await c.async_acquire(key, o, asio::as_tuple(asio::use_awaitable));
              if (ec == redlock::condition::contended) continue;  // the wait ran out: the run is over
              if (ec) {
                ++out.errors[error_name(ec)];
                continue;
              }
              auto got = steady::now();
              if (got < end && enter(out, l, writes, t0, got)) {
                co_await asio::post(one_loop, asio::use_awaitable);
                leave(out, writes);
              }
              auto released_at = steady::now();
              last_release.store(released_at.time_since_epoch().count());
              auto [rec] = co_await c.async_release(std::move(l), asio::as_tuple(asio::use_awaitable));
              if (rec) ++out.errors["release:" + error_name(rec)];
              else out.release.push_back(micros(released_at, steady::now()));
            }
          },
          [&](std::exception_ptr) {
            if (--running == 0) one_loop.stop();  // the clients keep the loop busy
          });
    one_loop.run();
    one_loop.restart();
  }
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < workers && !s.one_thread; ++w) {
    threads.emplace_back([&, w] {
      auto& c = *clients[w];
      auto& out = results[w];
      std::mt19937 rng(static_cast<unsigned>(w) + 1);
      std::bernoulli_distribution writes_now(write_share);
      std::this_thread::sleep_until(start);
      for (;;) {
        auto t0 = steady::now();
        if (t0 >= end) break;
        auto o = options_for(rng, writes_now, t0);
        const bool writes = o.kind == redlock::lock_kind::write;
        std::optional<redlock::lock> l;
        try {
          l = c.try_acquire(key, o);
        } catch (const redlock::error& e) {
          ++out.errors[error_name(e.code())];
          continue;
        }
        if (!l) continue;  // the wait ran out: the run is over
        auto got = steady::now();
        if (got < end && enter(out, *l, writes, t0, got)) {
          auto until = steady::now() + section;
          while (steady::now() < until) std::this_thread::yield();
          leave(out, writes);
        }
        auto released_at = steady::now();
        last_release.store(released_at.time_since_epoch().count());
        try {
          c.release(*l);
          out.release.push_back(micros(released_at, steady::now()));
        } catch (const redlock::error& e) {
          ++out.errors["release:" + error_name(e.code())];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  clients.clear();
  async_clients.clear();
  one_loop.restart();
  one_loop.run_for(2s);  // the clients' shutdowns close their sockets

  std::size_t total = 0, lo = SIZE_MAX, hi = 0, zero = 0;
  std::vector<double> wait, handoff, write_wait, release;
  std::size_t writes = 0;
  std::vector<acquisition> log;
  std::map<std::string, std::size_t> errors;
  json::array per_worker, seconds_json;
  for (auto& w : results) {
    total += w.successes;
    lo = std::min(lo, w.successes);
    hi = std::max(hi, w.successes);
    per_worker.emplace_back(w.successes);
    wait.insert(wait.end(), w.wait.begin(), w.wait.end());
    handoff.insert(handoff.end(), w.handoff.begin(), w.handoff.end());
    release.insert(release.end(), w.release.begin(), w.release.end());
    write_wait.insert(write_wait.end(), w.write_wait.begin(), w.write_wait.end());
    writes += w.writes;
    log.insert(log.end(), w.log.begin(), w.log.end());
    for (auto& [k, v] : w.errors) errors[k] += v;
  }
  // FIFO: b overtook a if a asked clearly earlier (enqueue scores have 1 ms
  // resolution), was still waiting when b got the lock, and got it after b.
  std::size_t fifo_violations = 0;
  std::sort(log.begin(), log.end(), [](auto& x, auto& y) { return x.got < y.got; });
  for (std::size_t b = 0; b < log.size(); ++b)
    for (std::size_t a = b + 1; a < log.size() && log[a].asked < log[b].got; ++a)
      if (log[a].asked + 2ms < log[b].asked) {
        ++fifo_violations;
        break;
      }
  for (auto& b : per_second) {
    seconds_json.emplace_back(b.load());
    if (b.load() == 0) ++zero;
  }
  r.data["workers"] = workers;
  if (semaphore) r.data["permits"] = permits;
  if (rw) {
    r.data["write_share"] = write_share;
    r.data["writes"] = writes;
    r.data["writer_wait_us"] = to_json(summarize(write_wait));
  }
  r.data["seconds"] = secs;
  r.data["retry_delay_ms"] = 10;
  r.data["retry_jitter_ms"] = 10;
  r.data["section_us"] = s.one_thread ? 0 : section.count();
  r.data["workers_run_as"] = s.one_thread ? "coroutines on one thread, each its own async_client"
                                          : "threads, each its own sync client";
  r.data["sections"] = total;
  r.data["sections_per_s"] = std::round(static_cast<double>(total) / secs);
  r.data["per_worker"] = per_worker;
  r.data["fairness"] = hi > 0 ? round_to(static_cast<double>(lo) / static_cast<double>(hi), 3) : 0.0;
  std::uint64_t attempts = 0;
  for (auto& c : counters) attempts += c->acquire_attempts.load();
  attempts -= attempts_at_start;
  // Attempts (quorum rounds) per critical section: how much of the masters'
  // work contention wastes. The peer reports the same as attempts_per_success.
  r.data["attempts_per_section"] = total > 0 ? round_to(static_cast<double>(attempts) / static_cast<double>(total), 2) : 0.0;
  r.data["per_second"] = seconds_json;
  r.data["zero_seconds"] = zero;
  r.data["max_holders"] = max_inside.load();
  r.data["violations"] = violations.load();
  if (semaphore) {
    json::array slots;
    for (auto& n : per_permit) slots.emplace_back(n.load());
    r.data["per_permit"] = slots;
  }
  if (expired) r.data["expired_before_section"] = expired.load();
  r.data["acquire_wait_us"] = to_json(summarize(wait));
  // With several permits a holder's release need not be what the next one waited for.
  if (!semaphore && !rw) r.data["handoff_us"] = to_json(summarize(handoff));
  r.data["release_us"] = to_json(summarize(release));
  if (kind == redlock::lock_kind::fair) r.data["fifo_violations"] = fifo_violations;
  if (!errors.empty()) r.data["errors"] = counts_json(errors);
  return r;
}

}  // namespace

outcome run_contended(settings& s) { return contended_run(s, redlock::lock_kind::mutex, "contended"); }
outcome run_contended_fair(settings& s) { return contended_run(s, redlock::lock_kind::fair, "contended_fair"); }
outcome run_rwlock(settings& s) {
  return contended_run(s, redlock::lock_kind::read, "rwlock", 1, rwlock_write_share);
}
outcome run_semaphore(settings& s) {
  return contended_run(s, redlock::lock_kind::semaphore, "semaphore", semaphore_permits);
}

// ---- semaphore_skew: per-link latency skew, one attempt each ---------------------------

// redis-semaphore's `semskew` for our semaphore: 5 holders start together,
// one attempt each; holder h reaches the masters of plan[h] at once and the
// other two through a fault proxy that delays its requests by 50 ms. A
// semaphore counted per master (a sorted set of members, as the peer's)
// admits up to floor(N * permits / quorum) = 5 holders so; ours, whose slots
// are quorum mutexes, at most `permits`. Repeated over fresh names, since the
// first slot each holder tries is random. The node timeout is raised above
// the skew, so the slow replies count (as the peer, without one, waits).
outcome run_semaphore_skew(settings& s) {
  outcome r;
  constexpr unsigned permits = semaphore_permits;
  const std::vector<std::vector<std::size_t>> plan{{0, 1, 2}, {0, 1, 2}, {0, 3, 4}, {1, 3, 4}, {2, 3, 4}};
  const auto slow = 50ms;
  if (s.masters.size() != 5 || permits != 3) {
    r.skipped = "needs 5 masters";
    return r;
  }
  for (auto& m : s.masters)
    if ((m.host != "127.0.0.1" && m.host != "localhost") || m.tls || !m.password.empty() || m.db != 0) {
      r.skipped = "needs masters on 127.0.0.1 without TLS, password or db (the proxy forwards there)";
      return r;
    }
  const int trials = s.quick ? 5 : 20;
  const auto node_timeout = std::max<milliseconds>(s.node_timeout, 4 * slow);

  std::vector<std::unique_ptr<redlock::fault::fault_proxy>> proxies;
  asio::io_context io{1};
  std::vector<std::optional<redlock::async_client>> clients(plan.size());
  for (std::size_t h = 0; h < plan.size(); ++h) {
    auto opts = s.client_options();
    opts.node_timeout = node_timeout;
    for (std::size_t i = 0; i < s.masters.size(); ++i) {
      if (std::find(plan[h].begin(), plan[h].end(), i) != plan[h].end()) continue;
      proxies.push_back(std::make_unique<redlock::fault::fault_proxy>(s.masters[i].port, h * 10 + i));
      opts.nodes[i] = proxies.back()->uri();
    }
    clients[h].emplace(io.get_executor(), opts);
  }
  redlock::acquire_options o = single_attempt(s);
  o.kind = redlock::lock_kind::semaphore;
  o.permits = permits;
  {  // warm-up, undelayed: connections open, scripts loaded
    std::vector<asio::awaitable<void>> tasks;
    for (std::size_t h = 0; h < plan.size(); ++h)
      tasks.push_back([](redlock::async_client& c, std::string name, redlock::acquire_options o) -> asio::awaitable<void> {
        auto [ec, l] = co_await c.async_acquire(std::move(name), o, as_tuple_awaitable);
        if (!ec) co_await c.async_release(l, as_tuple_awaitable);
      }(*clients[h], s.tag + ":skw:" + std::to_string(h), o));
    run_all(io, std::move(tasks));
  }
  for (auto& p : proxies) p->set_latency(redlock::fault::direction::client_to_server, slow);

  std::vector<hiredis_ptr> probes;
  for (auto& m : s.masters) probes.push_back(connect_blocking(m, 1000ms));
  std::map<std::size_t, std::size_t> holders_seen;  // holders in a trial: trials
  std::size_t violations = 0, most = 0;
  std::vector<std::size_t> most_per_master(s.masters.size(), 0);
  std::map<std::string, std::size_t> errors;
  for (int t = 0; t < trials; ++t) {
    const auto name = s.tag + ":skew:" + std::to_string(t);
    std::vector<redlock::lock> held(plan.size());
    std::vector<asio::awaitable<void>> tasks;
    for (std::size_t h = 0; h < plan.size(); ++h)
      tasks.push_back([](redlock::async_client& c, std::string name, redlock::acquire_options o, redlock::lock& out,
                         std::map<std::string, std::size_t>& errors) -> asio::awaitable<void> {
        auto [ec, l] = co_await c.async_acquire(std::move(name), o, as_tuple_awaitable);
        if (ec) {
          ++errors[error_name(ec)];
          co_return;
        }
        out = std::move(l);
      }(*clients[h], name, o, held[h], errors));
    run_all(io, std::move(tasks));
    std::size_t holders = 0;
    std::vector<int> slot_holders(permits, 0);
    for (auto& l : held)
      if (l) {
        ++holders;
        if (auto p = l.permit(); p && *p < permits) ++slot_holders[*p];
      }
    ++holders_seen[holders];
    most = std::max(most, holders);
    bool bad = holders > permits;
    for (int n : slot_holders) bad = bad || n > 1;  // two holders of one slot
    if (bad) ++violations;
    // What each master holds for them (the peer's per-node ZCARD): slots whose
    // value is a holder's token.
    for (std::size_t i = 0; i < probes.size(); ++i) {
      std::size_t n = 0;
      for (auto& l : held) {
        if (!l) continue;
        auto* rep = static_cast<redisReply*>(redisCommand(probes[i].get(), "GET %b", l.key().data(), l.key().size()));
        if (rep && rep->type == REDIS_REPLY_STRING && std::string_view(rep->str, rep->len) == l.token()) ++n;
        if (rep) freeReplyObject(rep);
      }
      most_per_master[i] = std::max(most_per_master[i], n);
    }
    std::vector<asio::awaitable<void>> releases;
    for (std::size_t h = 0; h < plan.size(); ++h)
      if (held[h])
        releases.push_back([](redlock::async_client& c, redlock::lock l) -> asio::awaitable<void> {
          co_await c.async_release(std::move(l), as_tuple_awaitable);
        }(*clients[h], std::move(held[h])));
    if (!releases.empty()) run_all(io, std::move(releases));
  }
  for (auto& c : clients) c.reset();
  try {
    io.restart();
    io.run_for(2s);
  } catch (...) {
  }
  proxies.clear();

  json::array plan_json, per_master;
  for (auto& fast : plan) {
    json::array a;
    for (auto i : fast) a.emplace_back(i);
    plan_json.emplace_back(std::move(a));
  }
  for (auto n : most_per_master) per_master.emplace_back(n);
  json::object seen;
  for (auto& [k, v] : holders_seen) seen[std::to_string(k)] = v;
  r.data["permits"] = permits;
  r.data["masters"] = s.masters.size();
  r.data["slow_ms"] = slow.count();
  r.data["node_timeout_ms"] = node_timeout.count();
  r.data["fast_masters_per_holder"] = plan_json;
  r.data["trials"] = trials;
  r.data["holders_per_trial"] = seen;
  r.data["max_holders"] = most;
  r.data["max_held_per_master"] = per_master;
  r.data["violations"] = violations;
  if (!errors.empty()) r.data["errors"] = counts_json(errors);
  return r;
}

// ---- fenced: sequential pairs with a fencing token, on one resource --------------------

outcome run_fenced(settings& s) {
  outcome r;
  const std::size_t warm = s.quick ? 100 : 300;
  const std::size_t n = s.quick ? 500 : 3000;
  auto o = single_attempt(s);
  o.fenced = true;
  const std::string name = s.tag + ":fenced";  // one resource: one fence counter
  pair_samples w, p;
  {
    async_env env(s);
    run_one(env.io, sequential_pairs(*env.client, name, false, warm, o, w));
    run_one(env.io, sequential_pairs(*env.client, name, false, n, o, p));
  }
  std::vector<std::uint64_t> tokens = w.fences;
  tokens.insert(tokens.end(), p.fences.begin(), p.fences.end());
  bool monotonic = !tokens.empty();
  std::size_t missing = (w.pair.size() + p.pair.size()) - tokens.size();
  for (std::size_t i = 1; i < tokens.size(); ++i)
    if (tokens[i] <= tokens[i - 1]) monotonic = false;
  put_pairs(r.data, p);
  r.data["tokens_monotonic"] = monotonic && missing == 0;
  r.data["tokens"] = tokens.size();
  if (missing) r.data["locks_without_token"] = missing;
  if (!tokens.empty()) {
    r.data["first_token"] = tokens.front();
    r.data["last_token"] = tokens.back();
  }
  return r;
}

// ---- one_hung: one master SIGSTOPped -----------------------------------------------------

outcome run_one_hung(settings& s) {
  outcome r;
  std::size_t nodes = s.masters.size(), quorum = nodes / 2 + 1;
  if (!s.can_stop) {
    r.skipped = "needs masters whose pids are known: local masters (no --nodes), or --pidfiles DIR with <port>.pid";
    return r;
  }
  if (nodes - 1 < quorum) {
    r.skipped = "with " + std::to_string(nodes) + " masters, one stopped leaves no quorum";
    return r;
  }
  const std::size_t warm = s.quick ? 100 : 300;
  const std::size_t n = s.quick ? 500 : 3000;
  auto o = single_attempt(s);
  pair_samples w, healthy, hung;
  json::array stopped;
  {
    async_env env(s);
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":hw:", true, warm, o, w));
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":hb:", true, n / 2, o, healthy));
    stopped_masters stop({&s.masters[0]});
    stopped = stop.uris();
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":h:", true, n, o, hung));
  }  // SIGCONT (and the master answers again) before the client goes
  r.data["stopped"] = stopped;
  put_pairs(r.data, hung);
  r.data["healthy_acquire_us"] = to_json(summarize(healthy.acquire));
  r.data["healthy_pair_us"] = to_json(summarize(healthy.pair));
  return r;
}

// ---- no_quorum: a majority SIGSTOPped, single attempts --------------------------------

outcome run_no_quorum(settings& s) {
  outcome r;
  std::size_t nodes = s.masters.size(), quorum = nodes / 2 + 1, k = nodes - quorum + 1;
  if (!s.can_stop) {
    r.skipped = "needs masters whose pids are known: local masters (no --nodes), or --pidfiles DIR with <port>.pid";
    return r;
  }
  const std::size_t tries = s.quick ? 20 : 60;
  auto o = single_attempt(s);
  std::vector<double> fail_ms;
  std::map<std::string, std::size_t> errors;
  std::size_t acquired = 0;
  json::array stopped;
  {
    async_env env(s);
    pair_samples w;
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":qw:", true, 100, o, w));
    std::vector<master*> which;
    for (std::size_t i = 0; i < k; ++i) which.push_back(&s.masters[i]);
    stopped_masters stop(which);
    stopped = stop.uris();
    run_one(env.io, [&]() -> asio::awaitable<void> {
      auto& c = *env.client;
      for (std::size_t i = 0; i < tries; ++i) {
        auto t0 = steady::now();
        auto [ec, l] = co_await c.async_acquire(s.tag + ":q:" + std::to_string(i), o, as_tuple_awaitable);
        auto t1 = steady::now();
        if (!ec) {
          ++acquired;  // should not happen without a quorum
          co_await c.async_release(l, as_tuple_awaitable);
          continue;
        }
        ++errors[error_name(ec)];
        fail_ms.push_back(micros(t0, t1) / 1000.0);
      }
    }());
  }
  r.data["stopped"] = stopped;
  r.data["tries"] = tries;
  r.data["node_timeout_ms"] = s.node_timeout.count();
  r.data["fail_ms"] = to_json(summarize(fail_ms), 3);
  r.data["errors"] = counts_json(errors);
  r.data["acquired"] = acquired;
  return r;
}

}  // namespace bench

namespace bench {

// ---- scale_nodes: how the cost grows with the number of masters ---------------------

// For N = 1, 3, 5, 7, 9 masters: sequential acquire+release (async_client, as
// `uncontended`) and the hand-written quorum pair on the same N (as `floor`).
// Both fan out in parallel, so the ratio should stay flat as N grows. Local
// runs start the masters beyond the 5 they have; with --nodes only the N
// that the given masters allow are measured.
outcome run_scale_nodes(settings& s) {
  outcome r;
  std::vector<std::unique_ptr<redlock::testing::redis_process>> extra;
  std::vector<master> all = s.masters;
  if (s.local) {
    while (all.size() < 9) {
      extra.push_back(std::make_unique<redlock::testing::redis_process>());
      register_child(extra.back()->pid());
      master m = parse_master(extra.back()->uri());
      m.local = extra.back().get();
      m.pid = extra.back()->pid();
      all.push_back(m);
    }
  }
  const std::size_t warm = s.quick ? 100 : 300, n = s.quick ? 500 : 2000;
  json::array rows;
  for (std::size_t count : {1u, 3u, 5u, 7u, 9u}) {
    if (count > all.size()) break;
    settings sub = s;
    sub.masters.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count));
    auto o = single_attempt(sub);
    pair_samples p;
    {
      async_env env(sub);
      pair_samples w;
      auto prefix = s.tag + ":scale" + std::to_string(count);
      run_one(env.io, sequential_pairs(*env.client, prefix + ":w:", true, warm, o, w));
      run_one(env.io, sequential_pairs(*env.client, prefix + ":", true, n, o, p));
    }
    json::object row{{"masters", count}, {"failures", p.failures}};
    auto acquire = summarize(p.acquire), pair = summarize(p.pair);
    row["acquire_us"] = to_json(acquire);
    row["pair_us"] = to_json(pair);
    if (auto q = quorum_floor(sub, n)) {
      auto floor = summarize(*q);
      row["quorum_floor_pair_us"] = to_json(floor);
      if (floor.p50 > 0) row["pair_over_floor"] = round_to(pair.p50 / floor.p50, 3);
    }
    rows.push_back(std::move(row));
  }
  for (auto& e : extra) unregister_child(e->pid());
  r.data["by_masters"] = std::move(rows);
  return r;
}

}  // namespace bench

namespace bench {

// ---- many_names: a master full of held locks ----------------------------------------

namespace {
long long used_memory(const master& m) { return info_number(m, "memory", "used_memory"); }
}  // namespace

// Holds 100,000 distinct locks at once (10,000 with --quick), taken 64 in
// flight: how fast, what each costs a master in memory, and what an
// acquisition costs next to that many keys compared with an empty master.
// Every lock is released at the end.
outcome run_many_names(settings& s) {
  outcome r;
  if (auto why = plain_masters_needed(s, "INFO memory")) {
    r.skipped = *why;
    return r;
  }
  const std::size_t target = s.quick ? 10000 : 100000, in_flight = 64, probe = s.quick ? 300 : 1000;
  auto probe_options = single_attempt(s);
  auto hold_options = single_attempt(s);
  hold_options.ttl = std::max(s.ttl, milliseconds(300000));  // they must outlast the run
  std::vector<redlock::lock> held;
  held.reserve(target);
  std::size_t failures = 0, release_failures = 0;
  pair_samples empty, full;
  long long before = -1, after = -1;
  double fill_s = 0;
  {
    async_env env(s);
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":mw:", true, probe, probe_options, empty));
    empty = {};
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":me:", true, probe, probe_options, empty));
    before = used_memory(s.masters.front());
    std::size_t next = 0;
    auto taker = [&]() -> asio::awaitable<void> {
      while (next < target) {
        auto name = s.tag + ":m:" + std::to_string(next++);
        auto [ec, l] = co_await env.client->async_acquire(std::move(name), hold_options, as_tuple_awaitable);
        if (ec)
          ++failures;
        else
          held.push_back(std::move(l));
      }
    };
    auto t0 = steady::now();
    std::vector<asio::awaitable<void>> tasks;
    for (std::size_t w = 0; w < in_flight; ++w) tasks.push_back(taker());
    run_all(env.io, std::move(tasks));
    fill_s = std::chrono::duration<double>(steady::now() - t0).count();
    after = used_memory(s.masters.front());
    run_one(env.io, sequential_pairs(*env.client, s.tag + ":mf:", true, probe, probe_options, full));
    std::size_t next_release = 0;
    auto releaser = [&]() -> asio::awaitable<void> {
      while (next_release < held.size()) {
        auto& l = held[next_release++];
        auto [ec] = co_await env.client->async_release(l, as_tuple_awaitable);
        if (ec) ++release_failures;
      }
    };
    tasks.clear();
    for (std::size_t w = 0; w < in_flight; ++w) tasks.push_back(releaser());
    run_all(env.io, std::move(tasks));
  }
  r.data["held"] = held.size();
  r.data["failures"] = failures;
  r.data["release_failures"] = release_failures;
  r.data["acquisitions_per_s"] = fill_s > 0 ? std::round(static_cast<double>(held.size()) / fill_s) : 0.0;
  if (before >= 0 && after >= 0 && !held.empty())
    r.data["bytes_per_lock"] = round_to(static_cast<double>(after - before) / static_cast<double>(held.size()), 1);
  r.data["empty_acquire_us"] = to_json(summarize(empty.acquire));
  r.data["full_acquire_us"] = to_json(summarize(full.acquire));
  r.data["full_pair_us"] = to_json(summarize(full.pair));
  auto e = summarize(empty.acquire), f = summarize(full.acquire);
  if (e.p99 > 0) r.data["p99_full_over_empty"] = round_to(f.p99 / e.p99, 3);
  return r;
}

}  // namespace bench
