// SPDX-License-Identifier: Apache-2.0
#include "workload.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <iostream>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <tuple>

namespace redlock::fault {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

template <typename... Args>
struct guarded_result {
  std::optional<std::tuple<Args...>> value;  ///< empty: the guard expired first
  time_point at{};                           ///< when the handler ran (or the guard expired)
};

// Starts an asynchronous operation through `init(handler)` and waits for its
// handler or for `limit`, whichever comes first. The handler may run later
// than the guard: its result is then dropped.
template <typename... Args, typename Init>
asio::awaitable<guarded_result<Args...>> guarded(Init init, milliseconds limit) {
  struct state {
    explicit state(asio::any_io_executor ex) : timer(std::move(ex)) {}
    asio::steady_timer timer;
    guarded_result<Args...> result;
    bool done = false;
  };
  auto st = std::make_shared<state>(co_await asio::this_coro::executor);
  st->timer.expires_after(limit);
  init([st](Args... args) {
    if (st->done || st->result.value) return;
    st->result.at = steady::now();
    st->result.value.emplace(std::move(args)...);
    st->timer.cancel();
  });
  if (!st->result.value) {
    co_await st->timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (!st->result.value) st->result.at = steady::now();
  }
  st->done = true;
  co_return st->result;
}

asio::awaitable<void> sleep_for(steady::duration d) {
  asio::steady_timer t(co_await asio::this_coro::executor);
  t.expires_after(d);
  co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
}

milliseconds uniform_ms(std::mt19937_64& rng, milliseconds lo, milliseconds hi) {
  if (hi <= lo) return lo;
  return milliseconds(std::uniform_int_distribution<long long>(lo.count(), hi.count())(rng));
}

constexpr milliseconds slack{1000};         // scheduling slack on a loaded 2-core machine
constexpr milliseconds guard_margin{2000};  // guard = bound + margin: a hang shows up in (d)

}  // namespace

struct workload::group {
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{io.get_executor()};
  std::thread thread;
};

struct workload::client_slot {
  std::size_t group = 0;
  std::unique_ptr<async_client> client;
  std::unique_ptr<fenced_store> store;
};

workload::workload(workload_options o, std::vector<std::string> uris, std::string storage_uri, history& h)
    : options_(std::move(o)), uris_(std::move(uris)), storage_uri_(std::move(storage_uri)), history_(h) {
  for (std::size_t r = 0; r < options_.resources; ++r) resources_.push_back("res" + std::to_string(r));
  groups_.push_back(std::make_unique<group>());
  if (options_.netns_clients > 0) groups_.push_back(std::make_unique<group>());
  for (std::size_t c = 0; c < options_.clients; ++c) {
    clocks_.push_back(std::make_shared<drift_clock>());
    holder_paused_.push_back(std::make_unique<std::atomic<bool>>(false));
    auto slot = std::make_unique<client_slot>();
    bool in_ns = c < options_.netns_clients;
    slot->group = in_ns ? 1 : 0;
    auto ex = groups_[slot->group]->io.get_executor();
    client_options co;
    co.nodes = in_ns ? options_.netns_uris : uris_;
    co.node_timeout = options_.node_timeout;
    co.connect_timeout = std::max(options_.node_timeout * 4, milliseconds(200));
    co.drift_factor = options_.drift_factor;
    co.key_prefix = options_.key_prefix;
    co.reconnect_min = milliseconds(10);
    co.reconnect_max = options_.reconnect_max;
    co.stall_timeout = options_.stall_timeout;
    if (options_.injected_clocks) co.clock = clocks_.back();
    slot->client = std::make_unique<async_client>(ex, co);
    slot->store = std::make_unique<fenced_store>(ex, in_ns ? options_.netns_storage_uri : storage_uri_,
                                                 options_.store_timeout);
    slots_.push_back(std::move(slot));
  }
}

workload::~workload() {
  try {
    stop();
  } catch (...) {
  }
}

op_bounds workload::bounds() const {
  op_bounds b;
  b.acquire = options_.wait + 2 * options_.node_timeout + slack;
  b.release = options_.node_timeout + slack;
  b.write = options_.store_timeout + slack;
  return b;
}

time_point workload::to_steady(int clock, time_point reading) const {
  if (clock < 0) return reading;
  return clocks_.at(static_cast<std::size_t>(clock))->to_steady(reading);
}

void workload::start() {
  if (started_) return;
  started_ = true;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    auto* grp = groups_[g].get();
    std::string ns = g == 1 ? options_.netns_path : std::string();
    std::promise<std::string> entered;
    auto entered_f = entered.get_future();
    grp->thread = std::thread([grp, ns, &entered] {
      if (!ns.empty()) {
        // setns(CLONE_NEWNET) moves only this thread: the sockets it opens
        // live in the namespace, the rest of the process stays outside.
        int fd = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
          entered.set_value(std::string("cannot enter ") + ns + ": " + std::strerror(errno));
          if (fd >= 0) ::close(fd);
          return;
        }
        ::close(fd);
      }
      entered.set_value({});
      grp->io.run();
    });
    if (auto err = entered_f.get(); !err.empty()) {
      grp->thread.join();
      throw std::runtime_error(err);
    }
  }
  for (std::size_t c = 0; c < options_.clients; ++c)
    for (std::size_t r = 0; r < resources_.size(); ++r) run_worker(c, r);
}

void workload::run_worker(std::size_t c, std::size_t r) {
  auto& slot = *slots_[c];
  ++running_;
  auto body = [this, c, r, &slot]() -> asio::awaitable<void> {
    std::mt19937_64 rng(options_.seed * 1000003ULL + c * 7919ULL + r * 104729ULL + 17);
    const std::string& res = resources_[r];
    const std::string data_key = "data:" + key(res);
    auto b = bounds();
    while (!stop_.load() && slot.client) {
      acquire_options ao;
      ao.ttl = uniform_ms(rng, options_.ttl_min, options_.ttl_max);
      ao.wait = options_.wait;
      ao.retry_delay = options_.retry_delay;
      ao.retry_jitter = options_.retry_jitter;
      ao.fenced = options_.fenced;
      ao.kind = options_.kind;
      if (ao.kind != lock_kind::mutex) ao.owner = "worker-" + std::to_string(r);
      ao.queue_timeout = options_.queue_timeout;
      op a;
      a.client = static_cast<int>(c);
      a.resource = res;
      a.kind = op_kind::acquire;
      a.detail = "ttl " + std::to_string(ao.ttl.count());
      a.invoke = steady::now();
      auto aid = history_.invoke(a);
      auto ga = co_await guarded<error_code, lock>(
          [&](auto h) { slot.client->async_acquire(res, ao, std::move(h)); }, b.acquire + guard_margin);
      if (!ga.value) {
        history_.complete(aid, ga.at, outcome::unknown, "guard expired: acquire never completed");
        continue;
      }
      auto [ec, l] = std::move(*ga.value);
      if (ec) {
        history_.complete(aid, ga.at, outcome::fail, ec.message());
        co_await sleep_for(uniform_ms(rng, milliseconds(0), milliseconds(5)));
        continue;
      }
      history_.update(aid, [&](op& o) {
        o.valid_until_client = l.valid_until();
        o.clock = options_.injected_clocks ? static_cast<int>(c) : -1;
        o.fence = l.fence();
        o.detail += " token " + l.token();
        // Per master, what the winning round saw: L locked, R refused, F failed,
        // U unknown, . pending. A two-holder report then names the masters both counted.
        o.detail += " masters ";
        for (auto& n : l.nodes()) o.detail += "LRFU."[static_cast<int>(n.state)];
      });
      history_.complete(aid, ga.at, outcome::ok);
      ++acquired_;

      // ---- critical section ----
      bool paused = holder_paused_[c]->load();
      if (paused) {
        // A paused holder: it wakes up after its validity and writes anyway.
        auto until = to_steady(options_.injected_clocks ? static_cast<int>(c) : -1, l.valid_until());
        co_await sleep_for(until - steady::now() + uniform_ms(rng, milliseconds(20), milliseconds(150)));
      }
      if (!slot.client) co_return;  // stopped the hard way (see stop())
      if (options_.fenced && l.fence() && (paused || l.remaining_validity() > milliseconds(5))) {
        op w;
        w.client = static_cast<int>(c);
        w.resource = res;
        w.kind = op_kind::write;
        w.token = *l.fence();
        w.acquire_op = aid;
        if (paused) w.detail = "paused holder";
        w.invoke = steady::now();
        auto wid = history_.invoke(w);
        auto value = "c" + std::to_string(c) + "-t" + std::to_string(*l.fence());
        auto gw = co_await guarded<error_code>(
            [&](auto h) { slot.store->async_write(res, *l.fence(), data_key, value, std::move(h)); },
            b.write + guard_margin);
        if (!gw.value)
          history_.complete(wid, gw.at, outcome::unknown, "guard expired: write never completed");
        else if (auto wec = std::get<0>(*gw.value); !wec)
          history_.complete(wid, gw.at, outcome::ok);
        else if (wec == errc::stale_token)
          history_.complete(wid, gw.at, outcome::fail, "stale");
        else
          history_.complete(wid, gw.at, outcome::unknown, wec.message());
      }
      if (!paused) {
        // Mostly short critical sections (throughput), sometimes long ones, so
        // that a second holder, if the lock ever allows one, meets the first.
        auto hold = uniform_ms(rng, milliseconds(0), options_.hold_max);
        if (std::bernoulli_distribution(options_.long_hold_p)(rng)) {
          auto left = std::chrono::duration_cast<milliseconds>(l.remaining_validity());
          if (left > milliseconds(0))
            hold = uniform_ms(rng, milliseconds(0), milliseconds(static_cast<long long>(
                                                        static_cast<double>(left.count()) * options_.long_hold_fraction)));
        }
        co_await sleep_for(hold);
      }

      if (!slot.client) co_return;
      op rel;
      rel.client = static_cast<int>(c);
      rel.resource = res;
      rel.kind = op_kind::release;
      rel.acquire_op = aid;
      rel.invoke = steady::now();
      auto rid = history_.invoke(rel);
      auto gr = co_await guarded<error_code>([&](auto h) { slot.client->async_release(l, std::move(h)); },
                                             b.release + guard_margin);
      if (!gr.value)
        history_.complete(rid, gr.at, outcome::unknown, "guard expired: release never completed");
      else if (auto rec = std::get<0>(*gr.value); !rec)
        history_.complete(rid, gr.at, outcome::ok);
      else if (rec == errc::not_held)
        history_.complete(rid, gr.at, outcome::fail, "not held");
      else
        history_.complete(rid, gr.at, outcome::unknown, rec.message());
      // Think time: gives the other contenders a chance at this resource.
      co_await sleep_for(uniform_ms(rng, milliseconds(0), milliseconds(8)));
    }
  };
  asio::co_spawn(groups_[slot.group]->io, body, [this, c, r](std::exception_ptr e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        std::cerr << "fault workload: worker c" << c << "/res" << r << " died: " << ex.what() << std::endl;
      }
    }
    --running_;
  });
}

time_point workload::stop() {
  auto at = steady::now();
  if (!started_ || stopped_) return at;
  stopped_ = true;
  stop_ = true;
  // Every operation is guarded, so a cycle ends within a few guard periods.
  auto b = bounds();
  auto limit = steady::now() + 3 * (b.acquire + b.write + b.release + 3 * guard_margin);
  while (running_.load() > 0 && steady::now() < limit) std::this_thread::sleep_for(milliseconds(5));
  if (running_.load() > 0)
    std::cerr << "fault workload: " << running_.load() << " workers still running at stop" << std::endl;
  // Destroy clients and stores on their own threads, then stop the threads.
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    std::promise<void> done;
    asio::post(groups_[g]->io, [&] {
      for (auto& s : slots_)
        if (s->group == g) {
          s->client.reset();
          s->store.reset();
        }
      done.set_value();
    });
    done.get_future().wait_for(std::chrono::seconds(10));
    groups_[g]->work.reset();
    groups_[g]->io.stop();
    if (groups_[g]->thread.joinable()) groups_[g]->thread.join();
  }
  return at;
}

}  // namespace redlock::fault
