// SPDX-License-Identifier: Apache-2.0
#include "workload.hpp"

#include <redlock/redlock.hpp>

#include "scripts/keys.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
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
  auto ex = co_await asio::this_coro::executor;
  auto st = std::make_shared<state>(ex);
  st->timer.expires_after(limit);
  // On the caller's executor (its strand), so that the handler and the
  // guard never run at once on a multi-threaded io_context.
  init(asio::bind_executor(ex, [st](Args... args) {
    if (st->done || st->result.value) return;
    st->result.at = steady::now();
    st->result.value.emplace(std::move(args)...);
    st->timer.cancel();
  }));
  if (!st->result.value) {
    co_await st->timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (!st->result.value) st->result.at = steady::now();
  }
  st->done = true;
  co_return st->result;
}

// Records how a guarded operation ended: ok; `refusal` (a definite "no") as
// fail; any other error, or the guard expiring, as unknown.
void complete_guarded(history& h, std::size_t id, const guarded_result<error_code>& g, errc refusal,
                      const char* refusal_text, const char* what) {
  if (!g.value)
    h.complete(id, g.at, outcome::unknown, std::string("guard expired: ") + what + " never completed");
  else if (auto ec = std::get<0>(*g.value); !ec)
    h.complete(id, g.at, outcome::ok);
  else if (ec == refusal)
    h.complete(id, g.at, outcome::fail, refusal_text);
  else
    h.complete(id, g.at, outcome::unknown, ec.message());
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

// Records every watchdog renewal of one client in the history, and every
// round that moved one of its windows (check (l) needs them all).
class renewal_recorder final : public redlock::observer {
 public:
  renewal_recorder(history& h, int client) : history_(h), client_(client) {}
  void on_renewal(std::string_view name, const error_code& ec) override { record(op_kind::renewal, name, ec); }
  void on_span(const redlock::span& s) override {
    if (s.what == redlock::span_kind::extend && !s.error) record(op_kind::window_moved, s.name, s.error);
  }
  void on_lease_repaired(std::string_view name, std::size_t masters) override {
    record(op_kind::lease_repaired, name, {}, std::to_string(masters) + " masters");
  }

 private:
  void record(op_kind kind, std::string_view name, const error_code& ec, std::string detail = {}) {
    op o;
    o.client = client_;
    o.resource = std::string(name);
    o.kind = kind;
    o.invoke = steady::now();
    auto id = history_.invoke(o);
    history_.complete(id, o.invoke, ec ? outcome::fail : outcome::ok, ec ? ec.message() : std::move(detail));
  }

  history& history_;
  int client_;
};

milliseconds scaled(milliseconds d, double f) {
  return milliseconds(static_cast<long long>(static_cast<double>(d.count()) * f));
}

constexpr milliseconds slack{1000};         // scheduling slack on a loaded 2-core machine
constexpr milliseconds guard_margin{2000};  // guard = bound + margin: a hang shows up in (d)

}  // namespace

struct workload::group {
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{io.get_executor()};
  std::thread thread;
  std::vector<std::thread> more;  ///< io_threads > 1: further threads running `io`
};

struct workload::client_slot {
  std::size_t group = 0;
  std::unique_ptr<async_client> client;
  std::unique_ptr<fenced_store> store;
  std::unique_ptr<fenced_storage::session> table;  ///< workload_options::storage
  std::unique_ptr<register_link> reg;  ///< the data sections' storage link
};

workload::workload(workload_options o, std::vector<std::string> uris, std::string storage_uri, history& h)
    : options_(std::move(o)), uris_(std::move(uris)), storage_uri_(std::move(storage_uri)), history_(h) {
  for (std::size_t r = 0; r < options_.resources; ++r) resources_.push_back("res" + std::to_string(r));
  groups_.push_back(std::make_unique<group>());
  if (options_.netns_clients > 0) groups_.push_back(std::make_unique<group>());
  for (std::size_t c = 0; c < options_.clients; ++c) {
    clocks_.push_back(std::make_shared<drift_clock>());
    holder_paused_.push_back(std::make_unique<std::atomic<bool>>(false));
    paused_writes_.push_back(std::make_unique<std::atomic<std::size_t>>(0));
    counts_.push_back(std::make_unique<client_counts>());
    auto slot = std::make_unique<client_slot>();
    bool in_ns = c < options_.netns_clients;
    slot->group = in_ns ? 1 : 0;
    auto ex = groups_[slot->group]->io.get_executor();
    client_options co;
    co.nodes = in_ns ? options_.netns_uris : c < options_.client_uris.size() ? options_.client_uris[c] : uris_;
    co.node_timeout = options_.node_timeout;
    co.connect_timeout = options_.connect_timeout();
    co.drift_factor = options_.drift_factor;
    co.key_prefix = options_.key_prefix;
    // A lock that grants everyone (test only): each client its own lock keys.
    if (options_.grant_everyone) co.key_prefix += "c" + std::to_string(c) + ":";
    co.reconnect_min = milliseconds(10);
    co.reconnect_max = options_.reconnect_max;
    co.stall_timeout = options_.stall_timeout;
    if (options_.injected_clocks) co.clock = clocks_.back();
    if (options_.lease_resources > 0 || options_.election)
      co.observer = std::make_shared<renewal_recorder>(history_, static_cast<int>(c));
    slot->client = std::make_unique<async_client>(ex, co);
    slot->store = std::make_unique<fenced_store>(ex, in_ns ? options_.netns_storage_uri : storage_uri_,
                                                 options_.store_timeout);
    if (options_.storage) slot->table = options_.storage->open(c);
    // The register link's thread lives outside any network namespace.
    if (options_.data) {
      auto [host, port] = host_port(storage_uri_);
      slot->reg = std::make_unique<register_link>(host, port);
    }
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

std::vector<std::string> workload::fence_keys(const std::string& r) const {
  namespace keys = redlock::detail::keys;
  if (options_.kind != lock_kind::semaphore) return {keys::fence(key(r))};
  std::vector<std::string> out;
  for (unsigned i = 0; i < options_.permits; ++i) out.push_back(keys::fence(keys::permit(key(r), i)));
  return out;
}

time_point workload::to_steady(int clock, time_point reading) const {
  if (clock < 0) return reading;
  return clocks_.at(static_cast<std::size_t>(clock))->to_steady(reading);
}

time_point workload::believed_until(std::size_t c, const lock& l, time_point acquired) const {
  auto until = to_steady(options_.injected_clocks ? static_cast<int>(c) : -1, l.valid_until());
  if (options_.overclaim > 0 && until > acquired)
    until += std::chrono::duration_cast<steady::duration>((until - acquired) * options_.overclaim);
  return until;
}

asio::awaitable<storage_reply> workload::storage_call(std::size_t c, std::vector<std::string> argv) {
  auto ex = co_await asio::this_coro::executor;
  auto* link = slots_.at(c)->reg.get();
  if (!link) co_return storage_reply{};
  auto got = co_await guarded<storage_reply>(
      [&](auto h) {
        link->submit(std::move(argv), [ex, h](storage_reply v) mutable {
          asio::post(ex, [h, v = std::move(v)]() mutable { h(std::move(v)); });
        });
      },
      options_.store_timeout + slack);
  if (!got.value) co_return storage_reply{};
  co_return std::get<0>(std::move(*got.value));
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
    if (g == 0)
      for (std::size_t k = 1; k < options_.io_threads; ++k) grp->more.emplace_back([grp] { grp->io.run(); });
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
    auto b = bounds();
    while (!stop_.load() && slot.client) {
      acquire_options ao;
      ao.ttl = uniform_ms(rng, options_.ttl_min, options_.ttl_max);
      ao.wait = options_.wait;
      ao.retry_delay = options_.retry_delay;
      ao.retry_jitter = options_.retry_jitter;
      ao.fenced = options_.fenced;
      ao.kind = options_.kind;
      // Read-write locks: a read or a write by read_p. No owner: an owner
      // would make the client count re-entries, which a worker never makes.
      bool rw = ao.kind == lock_kind::read || ao.kind == lock_kind::write;
      if (rw) ao.kind = std::bernoulli_distribution(options_.read_p)(rng) ? lock_kind::read : lock_kind::write;
      ao.permits = options_.permits;
      if (ao.kind != lock_kind::mutex && !rw) ao.owner = "worker-" + std::to_string(r);
      // Several names together: this resource and 1 .. together_max - 1 others.
      if (options_.together_max >= 2 && resources_.size() >= 2) {
        std::vector<std::size_t> others;
        for (std::size_t i = 0; i < resources_.size(); ++i)
          if (i != r) others.push_back(i);
        std::shuffle(others.begin(), others.end(), rng);
        auto most = std::min(options_.together_max - 1, others.size());
        auto extra = std::uniform_int_distribution<std::size_t>(1, most)(rng);
        for (std::size_t i = 0; i < extra; ++i) ao.other_names.push_back(resources_[others[i]]);
      }
      ao.queue_timeout = c % 2 == 1 && options_.odd_clients_queue_timeout ? *options_.odd_clients_queue_timeout
                                                                           : options_.queue_timeout;
      // Half the acquisitions describe their holder: a mutex then takes the
      // script path instead of SET NX, and every kind writes, lengthens and
      // deletes its description next to the lock, all under the faults.
      if (std::bernoulli_distribution(0.5)(rng)) ao.description = "worker-" + std::to_string(r) + " nemesis";
      // A lease cycle (see workload_options::lease_p): renewed or extended.
      bool lease = options_.election || r + options_.lease_resources >= resources_.size();
      auto lost_at = std::make_shared<std::atomic<long long>>(0);
      if (lease) {
        ao.ttl = uniform_ms(rng, options_.lease_ttl_min, options_.lease_ttl_max);
        ao.renew = options_.election || std::bernoulli_distribution(0.6)(rng);  // a campaign always renews
        // Some renewed leases are capped (max_hold), often before the
        // planned hold ends: renewal stops there and the lock is lost early.
        if (ao.renew && std::bernoulli_distribution(0.3)(rng)) ao.max_hold = uniform_ms(rng, ao.ttl / 2, ao.ttl * 3);
        ao.on_lost = [lost_at](lost_reason) { lost_at->store(steady::now().time_since_epoch().count()); };
      }
      op a;
      a.client = static_cast<int>(c);
      a.resource = res;
      a.kind = op_kind::acquire;
      a.detail = "ttl " + std::to_string(ao.ttl.count());
      a.ttl = ao.ttl;
      a.fair = ao.kind == lock_kind::fair;
      if (ao.max_hold.count() > 0) a.detail += " max_hold " + std::to_string(ao.max_hold.count());
      if (!ao.description.empty()) a.detail += " described";
      if (rw) a.detail += ao.kind == lock_kind::read ? " read" : " write";
      if (options_.election) a.detail += " campaign";
      a.invoke = steady::now();
      auto aid = history_.invoke(a);
      auto ga = co_await guarded<error_code, lock>(
          [&](auto h) {
            if (options_.election)
              slot.client->async_campaign(res, ao, std::move(h));
            else
              slot.client->async_acquire(res, ao, std::move(h));
          },
          b.acquire + guard_margin);
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
        o.permits = options_.permits;
        o.permit = l.permit();
        o.shared = ao.kind == lock_kind::read;
        o.leader = options_.election;
        if (!ao.other_names.empty()) {
          // Judged on the names asked for: each must be among the lock's
          // names, with its token when fenced.
          auto granted = l.names();
          auto fences = l.fences();
          o.names.push_back(res);
          o.names.insert(o.names.end(), ao.other_names.begin(), ao.other_names.end());
          if (!options_.phantom_name.empty()) o.names.push_back(options_.phantom_name);
          for (auto& n : o.names) {
            auto at = static_cast<std::size_t>(std::find(granted.begin(), granted.end(), n) - granted.begin());
            if (at == granted.size())
              o.names_unheld.push_back(n);
            else if (at < fences.size())
              o.fences.push_back(fences[at]);
            else if (ao.fenced)
              o.names_unheld.push_back(n + " (no token)");
          }
          if (o.fences.size() != o.names.size()) o.fences.clear();  // tokens only when every name has one
        }
        o.detail += " token " + l.token();
        // Per master, what the winning round saw: L locked, R refused, F failed,
        // U unknown, . pending. A two-holder report then names the masters both counted.
        o.detail += " masters ";
        for (auto& n : l.nodes()) o.detail += "LRFU."[static_cast<int>(n.state)];
        if (lease) {
          o.renewed = ao.renew;
          o.detail += ao.renew ? " lease renewed" : " lease extended";
          o.beliefs.emplace_back(ga.at, l.valid_until());
        }
      });
      history_.complete(aid, ga.at, outcome::ok);
      ++acquired_;
      ++counts_[c]->acquired;
      ++counts_[c]->holding;
      struct holding_until_released {
        std::atomic<std::size_t>& n;
        ~holding_until_released() { --n; }
      } held{counts_[c]->holding};

      // A re-entry of this hold (reentrant and fair sections that are not
      // leases or sets): one more level by the same owner, judged as the
      // hold it re-entered (op::reentry_of).
      std::optional<lock> again;
      std::optional<std::size_t> again_op;
      if ((ao.kind == lock_kind::reentrant || ao.kind == lock_kind::fair) && !lease && ao.other_names.empty() &&
          std::bernoulli_distribution(options_.reentry_p)(rng)) {
        op x;
        x.client = static_cast<int>(c);
        x.resource = res;
        x.kind = op_kind::acquire;
        x.reentry_of = aid;
        x.fair = ao.kind == lock_kind::fair;
        x.ttl = ao.ttl;
        x.detail = "re-entry of #" + std::to_string(aid) + " ttl " + std::to_string(ao.ttl.count());
        x.invoke = steady::now();
        auto xid = history_.invoke(x);
        auto gx = co_await guarded<error_code, lock>(
            [&](auto h) { slot.client->async_acquire(res, ao, std::move(h)); }, b.acquire + guard_margin);
        if (!gx.value) {
          history_.complete(xid, gx.at, outcome::unknown, "guard expired: re-entry never completed");
        } else if (auto& [xec, xl] = *gx.value; xec) {
          history_.complete(xid, gx.at, outcome::fail, xec.message());
        } else {
          history_.update(xid, [&](op& o) {
            o.valid_until_client = xl.valid_until();
            o.clock = options_.injected_clocks ? static_cast<int>(c) : -1;
            o.fence = xl.fence();
            o.detail += " token " + xl.token() + " levels " + std::to_string(xl.hold_count());
          });
          history_.complete(xid, gx.at, outcome::ok);
          ++counts_[c]->reentries;
          again.emplace(std::move(xl));
          again_op = xid;
        }
      }

      // ---- critical section ----
      bool paused = holder_paused_[c]->load();
      // The data section (storage_register.hpp): the registers of what this
      // holder holds exclusively (a reader: shares), begun only with more
      // than twice the margin left of the window it believes in. A paused
      // holder (a fault of its own, judged by fencing) does none.
      const auto margin = std::max(options_.data_margin, ao.ttl / 10);
      const bool reader = ao.kind == lock_kind::read;
      std::vector<register_target> regs;
      if (options_.data && !paused) {
        if (!ao.other_names.empty()) {
          regs.push_back({register_name(res), register_name(res), 1});
          for (auto& n : ao.other_names) regs.push_back({register_name(n), register_name(n), 1});
        } else if (l.permit()) {
          regs.push_back({register_name(slot_name(res, *l.permit())), register_name(res), options_.permits});
        } else {
          regs.push_back({register_name(res), register_name(res), 1});
        }
      }
      const std::string sid = section_id(static_cast<int>(c), aid);
      std::optional<std::vector<long long>> counters;  // read at the begin: the section is open
      std::optional<std::size_t> section_op;
      if (!regs.empty() && believed_until(c, l, ga.at) - steady::now() > 2 * margin) {
        op s;
        s.client = static_cast<int>(c);
        s.resource = res;
        s.kind = op_kind::section;
        s.acquire_op = aid;
        s.shared = reader;
        for (auto& t : regs) s.names.push_back(t.name);
        s.detail = sid;
        s.invoke = steady::now();
        section_op = history_.invoke(s);
        auto got = co_await storage_call(c, register_begin_argv(regs, reader, sid, wall_us(believed_until(c, l, ga.at))));
        if (got.is == storage_reply::type::array) {
          counters.emplace();
          for (auto& v : got.elements) counters->push_back(v.is == storage_reply::type::string ? std::stoll(v.text) : 0);
        } else {
          history_.complete(*section_op, steady::now(), outcome::fail,
                            got.is == storage_reply::type::nil ? "not begun: past the deadline" : "not begun: " + got.text);
        }
      }
      if (paused) {
        // A paused holder: it wakes up after its validity and writes anyway.
        auto until = to_steady(options_.injected_clocks ? static_cast<int>(c) : -1, l.valid_until());
        co_await sleep_for(until - steady::now() + uniform_ms(rng, milliseconds(20), milliseconds(150)));
      }
      if (!slot.client) co_return;  // stopped the hard way (see stop())
      // What the holder writes, with which token: its resource (a semaphore:
      // its slot, whose tokens are its own), or each name held together with
      // that name's token; a reader writes nothing.
      std::vector<std::pair<std::string, std::uint64_t>> targets;
      if (!ao.other_names.empty()) {
        auto names = l.names();
        auto fences = l.fences();
        for (std::size_t i = 0; i < names.size() && i < fences.size(); ++i) targets.emplace_back(names[i], fences[i]);
      } else if (l.fence() && ao.kind != lock_kind::read) {
        targets.emplace_back(l.permit() ? slot_name(res, *l.permit()) : res, *l.fence());
      }
      if (options_.fenced && !targets.empty() && (paused || l.remaining_validity() > milliseconds(5))) {
        for (auto& t : targets) {
          if (!slot.client) co_return;
          const std::string& target = t.first;
          const std::uint64_t token = t.second;
          op w;
          w.client = static_cast<int>(c);
          w.resource = target;
          w.kind = op_kind::write;
          w.token = token;
          w.acquire_op = aid;
          if (paused) {
            // A renewed lease may still be valid after the sleep: only a
            // write after the window ended is the stale write this fault is for.
            bool stale = l.lost() || l.remaining_validity() <= milliseconds(0);
            w.detail = stale ? "paused holder, window over" : "paused holder, still valid";
            if (stale) ++*paused_writes_[c];
          }
          w.invoke = steady::now();
          auto wid = history_.invoke(w);
          auto value = "c" + std::to_string(c) + "-t" + std::to_string(token);
          auto gw = co_await guarded<error_code>(
              [&](auto h) {
                if (slot.table)
                  slot.table->async_increment(w.resource, token, sid, std::move(h));
                else
                  slot.store->async_write(w.resource, token, "data:" + key(w.resource), value, std::move(h));
              },
              b.write + guard_margin);
          complete_guarded(history_, wid, gw, errc::stale_token, "stale", "write");
        }
      }
      if (lease && !paused) {
        co_await hold_lease(slot, c, l, aid, ao.renew, lost_at, rng);
      } else if (!paused) {
        // Mostly short critical sections (throughput), sometimes long ones, so
        // that a second holder, if the lock ever allows one, meets the first.
        steady::duration hold = uniform_ms(rng, milliseconds(0), options_.hold_max);
        if (std::bernoulli_distribution(options_.long_hold_p)(rng)) {
          auto left = believed_until(c, l, ga.at) - steady::now() - margin;
          if (left > steady::duration::zero())
            hold = std::chrono::duration_cast<steady::duration>(left * std::uniform_real_distribution<double>(0.0, 1.0)(rng));
        }
        co_await sleep_for(hold);
      }
      if (counters) {
        // Write back (a reader: end) inside the window the holder believes
        // in now, or abandon: a lock lost, or too little left to finish.
        auto until = believed_until(c, l, ga.at);
        char kind = reader ? 'Q' : 'E';
        if (l.lost() || until - steady::now() <= margin) kind = 'A';
        std::vector<long long> values;
        for (auto v : *counters) values.push_back(v + 1);
        auto got = co_await storage_call(c, register_end_argv(regs, kind, sid, wall_us(until), values));
        auto said = got.is == storage_reply::type::status || got.is == storage_reply::type::string ? got.text : "";
        history_.complete(*section_op, steady::now(),
                          said == "E" || said == "Q" ? outcome::ok : said == "L" ? outcome::fail : outcome::unknown,
                          said == "L"   ? "past the deadline: nothing written"
                          : said == "A" ? "abandoned"
                          : said.empty() ? "no answer"
                                         : "");
      }

      if (!slot.client) co_return;
      // A re-entry's level and the first, in either order (each release
      // drops one level; the hold ends with the last).
      if (again && std::bernoulli_distribution(0.3)(rng)) {
        co_await release(slot, c, res, l, aid);
        if (!slot.client) co_return;
        co_await release(slot, c, res, *again, *again_op);
      } else {
        if (again) co_await release(slot, c, res, *again, *again_op);
        if (!slot.client) co_return;
        co_await release(slot, c, res, l, aid);
      }
      // Think time: gives the other contenders a chance at this resource.
      co_await sleep_for(uniform_ms(rng, milliseconds(0), milliseconds(8)));
    }
  };
  // Each worker on a strand of its own: with io_threads > 1 the workers run
  // on several threads, each one's handlers one at a time (guarded() binds
  // the library's completions to it).
  asio::co_spawn(asio::make_strand(groups_[slot.group]->io), body, [this, c, r](std::exception_ptr e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        std::cerr << "fault workload: worker c" << c << "/res" << r << " died: " << ex.what() << std::endl;
      } catch (...) {
        std::cerr << "fault workload: worker c" << c << "/res" << r << " died" << std::endl;
      }
      ++died_;
    }
    --running_;
  });
}

asio::awaitable<void> workload::release(client_slot& slot, std::size_t c, const std::string& res, const lock& l,
                                        std::size_t aid) {
  op rel;
  rel.client = static_cast<int>(c);
  rel.resource = res;
  rel.kind = op_kind::release;
  rel.acquire_op = aid;
  rel.invoke = steady::now();
  auto rid = history_.invoke(rel);
  auto gr = co_await guarded<error_code>(
      [&](auto h) {
        if (options_.election)
          slot.client->async_resign(l, std::move(h));
        else
          slot.client->async_release(l, std::move(h));
      },
      bounds().release + guard_margin);
  complete_guarded(history_, rid, gr, errc::not_held, "not held", "release");
}

// Reads the masters for lease `l` (lease_probe) and records what they hold
// against the deadline the holder believes in now; waits for the answer.
asio::awaitable<void> workload::probe_masters(std::size_t c, const lock& l, std::size_t aid) {
  if (!probe_) co_return;
  auto names = l.names();
  if (names.size() > 1) {  // a set: each name's key holds the set's token
    for (auto& n : names) co_await probe_key(c, l, aid, n, key(n), false);
    co_return;
  }
  // Reentrant, fair, read-write: the hold is a field of a hash (the token
  // itself); the key's PTTL covers its latest deadline.
  bool hash = l.kind() == lock_kind::reentrant || l.kind() == lock_kind::fair || l.kind() == lock_kind::read ||
              l.kind() == lock_kind::write;
  co_await probe_key(c, l, aid, l.name(), l.key(), hash);
}

asio::awaitable<void> workload::probe_key(std::size_t c, const lock& l, std::size_t aid, std::string name,
                                          std::string key, bool hash) {
  op p;
  p.client = static_cast<int>(c);
  p.resource = name;
  p.kind = op_kind::probe;
  p.acquire_op = aid;
  p.valid_until_client = l.valid_until();
  p.clock = options_.injected_clocks ? static_cast<int>(c) : -1;
  p.quorum = uris_.size() / 2 + 1;
  p.invoke = steady::now();
  auto pid = history_.invoke(p);
  auto ex = co_await asio::this_coro::executor;
  // A reading after the holder's deadline judges nothing: wait no longer
  // (the holder's plan goes on), and let the probe skip it if still queued.
  auto until = to_steady(p.clock, l.valid_until());
  auto limit = std::clamp(std::chrono::duration_cast<milliseconds>(until - steady::now()), milliseconds(5),
                          milliseconds(3000));
  auto got = co_await guarded<std::vector<master_view>>(
      [&](auto h) {
        probe_->submit(
            key, l.token(), hash,
            [ex, h](std::vector<master_view> v) mutable { asio::post(ex, [h, v]() mutable { h(std::move(v)); }); },
            until);
      },
      limit);
  if (!got.value) {
    history_.complete(pid, got.at, outcome::unknown, "no answer before the holder's deadline");
    co_return;
  }
  history_.update(pid, [&](op& o) { o.masters = std::get<0>(std::move(*got.value)); });
  history_.complete(pid, got.at, outcome::ok);
}

// g++ 12 reports -Wmismatched-new-delete at the end of this coroutine: a
// false positive (Asio's awaitable frames are allocated and freed by the same
// recycling allocator, thread_info_base); the lambda coroutines above, whose
// frames are the same kind, do not trigger it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
// A lease: hold past the TTL with renewal, or extend explicitly to shorter
// and longer TTLs; look at the lock every lease_look (each changed deadline
// is a "belief" in the history), read the masters after each extend that
// succeeded and before the release (renewed: also every half TTL), and end
// when the plan is done or the lock says it is over. The release follows in
// run_worker.
asio::awaitable<void> workload::hold_lease(client_slot& slot, std::size_t c, lock l, std::size_t aid, bool renewed,
                                           std::shared_ptr<std::atomic<long long>> lost_at, std::mt19937_64& rng) {
  const auto ttl = l.ttl();
  // Records a look when the deadline changed (with the look before it, so
  // the history shows when the holder last saw the old one) or when asked.
  std::optional<std::pair<time_point, time_point>> unrecorded;
  auto look = [&](bool always) {
    auto v = l.valid_until();
    auto at = steady::now();
    history_.update(aid, [&](op& o) {
      if (always || o.beliefs.empty() || o.beliefs.back().second != v) {
        if (unrecorded && !o.beliefs.empty() && o.beliefs.back() != *unrecorded) o.beliefs.push_back(*unrecorded);
        o.beliefs.emplace_back(at, v);
        unrecorded.reset();
      } else {
        unrecorded.emplace(at, v);
      }
    });
  };
  auto b = bounds();
  // Extended leases: 2 to 5 extends. A leader also extends its renewed
  // term now and then (0 to 2 times), so election extends meet the faults.
  int extends_left = !renewed           ? std::uniform_int_distribution<int>(2, 5)(rng)
                     : options_.election ? std::uniform_int_distribution<int>(0, 2)(rng)
                                         : 0;
  auto now = steady::now();
  auto plan_end = renewed ? now + scaled(ttl, std::uniform_real_distribution<double>(options_.lease_hold_min,
                                                                                     options_.lease_hold_max)(rng))
                          : time_point::max();
  auto remaining_share = [&](double lo, double hi) {
    auto left = std::max(l.remaining_validity(), milliseconds(0));
    return scaled(left, std::uniform_real_distribution<double>(lo, hi)(rng));
  };
  auto next_extend = now + remaining_share(0.2, 0.6);
  auto next_probe = now + ttl / 2;
  bool ran_out = false;
  std::optional<time_point> lost_seen;  // the look that found lost() set (on_lost is posted later)
  for (;;) {
    if (!slot.client) co_return;  // stopped the hard way (see stop())
    bool lost = l.lost(), over = l.remaining_validity() <= milliseconds(0);
    look(lost || over);
    if (lost) lost_seen = steady::now();
    if (lost || over) {
      ran_out = over && !lost;
      break;
    }
    now = steady::now();
    if (extends_left > 0 && now >= next_extend) {
      auto to = std::max(milliseconds(20), scaled(ttl, std::uniform_real_distribution<double>(0.25, 2.0)(rng)));
      op e;
      e.client = static_cast<int>(c);
      e.resource = l.name();
      e.kind = op_kind::extend;
      e.acquire_op = aid;
      e.detail = "ttl " + std::to_string(to.count());
      e.invoke = steady::now();
      auto eid = history_.invoke(e);
      auto ge = co_await guarded<error_code>([&](auto h) { slot.client->async_extend(l, to, std::move(h)); },
                                             b.release + guard_margin);
      look(true);
      complete_guarded(history_, eid, ge, errc::not_held, "not held", "extend");
      if (ge.value && !std::get<0>(*ge.value) && l.remaining_validity() > milliseconds(0)) co_await probe_masters(c, l, aid);
      next_extend = steady::now() + remaining_share(0.2, 0.6);
      if (--extends_left == 0 && !renewed) plan_end = steady::now() + remaining_share(0.0, 0.8);
      continue;
    }
    if (now >= plan_end) break;
    if (renewed && now >= next_probe) {
      co_await probe_masters(c, l, aid);
      next_probe = steady::now() + ttl / 2;
    }
    co_await sleep_for(options_.lease_look);
  }
  // A renewed lock that ran out must say so: wait (bounded) for the signal.
  auto wait_until = steady::now() + options_.lost_slack;
  while (renewed && ran_out && lost_at->load() == 0 && !l.lost() && steady::now() < wait_until)
    co_await sleep_for(milliseconds(5));
  if (!lost_seen && l.lost()) lost_seen = steady::now();
  // The signal came by the earlier of: on_lost ran, the holder saw lost().
  std::optional<time_point> signalled;
  if (auto at = lost_at->load()) signalled = time_point(steady::duration(at));
  if (lost_seen && (!signalled || *lost_seen < *signalled)) signalled = lost_seen;
  if (signalled) {
    op x;
    x.client = static_cast<int>(c);
    x.resource = l.name();
    x.kind = op_kind::lost;
    x.acquire_op = aid;
    x.invoke = *signalled;
    x.detail = l.why_lost() == lost_reason::expired        ? "expired"
               : l.why_lost() == lost_reason::taken_over   ? "taken over"
               : l.why_lost() == lost_reason::quorum_lost  ? "quorum lost"
                                                           : "?";
    auto xid = history_.invoke(x);
    history_.complete(xid, x.invoke, outcome::ok);
  }
  if (!l.lost() && l.remaining_validity() > milliseconds(0)) co_await probe_masters(c, l, aid);
}

#pragma GCC diagnostic pop

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
          s->table.reset();
        }
      done.set_value();
    });
    done.get_future().wait_for(std::chrono::seconds(10));
    groups_[g]->work.reset();
    groups_[g]->io.stop();
    if (groups_[g]->thread.joinable()) groups_[g]->thread.join();
    for (auto& t : groups_[g]->more) t.join();
  }
  return at;
}

}  // namespace redlock::fault
