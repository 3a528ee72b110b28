// SPDX-License-Identifier: Apache-2.0
// Hand-driven scenarios for the fault suite: sync redlock::client calls
// recorded in a history exactly like the workload records them, so the same
// checkers judge a scripted scenario.
#pragma once

#include "drift_clock.hpp"
#include "history.hpp"
#include "lease_probe.hpp"

#include <redlock/redlock.hpp>

#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace redlock::fault {

class scripted {
 public:
  struct held {
    std::optional<redlock::lock> lock;
    std::size_t op = 0;
    explicit operator bool() const { return lock.has_value(); }
  };

  explicit scripted(history& h) : history_(h) {}

  /// Registers the injected clock of client `id` (for valid_until conversion).
  void clock(int id, std::shared_ptr<drift_clock> c) { clocks_[id] = std::move(c); }

  /// One acquisition by client `id`; an ordinary refusal is a failed op.
  held acquire(redlock::client& c, int id, const std::string& name, const acquire_options& o) {
    op a;
    a.client = id;
    a.resource = name;
    a.kind = op_kind::acquire;
    a.invoke = steady::now();
    auto aid = history_.invoke(a);
    held out;
    out.op = aid;
    try {
      auto l = c.try_acquire(name, o);
      auto at = steady::now();
      if (!l) {
        history_.complete(aid, at, outcome::fail, "not acquired");
        return out;
      }
      bool injected = clocks_.count(id) > 0;
      history_.update(aid, [&](op& x) {
        x.valid_until_client = l->valid_until();
        x.clock = injected ? id : -1;
        x.fence = l->fence();
        x.renewed = o.renew;
        x.ttl = o.ttl;
        x.permits = o.permits;
        x.permit = l->permit();
      });
      history_.complete(aid, at, outcome::ok);
      out.lock = std::move(l);
    } catch (const redlock::error& e) {
      history_.complete(aid, steady::now(), outcome::fail, e.what());
    }
    return out;
  }

  /// The holder looks at its lock now: what it believes is recorded (see
  /// op::beliefs), so the window checked is the belief, not the first deadline.
  void look(held& h) {
    if (!h.lock) return;
    auto v = h.lock->valid_until();
    auto at = steady::now();
    history_.update(h.op, [&](op& o) {
      if (o.beliefs.empty()) o.beliefs.emplace_back(*o.completion, *o.valid_until_client);
      o.beliefs.emplace_back(at, v);
    });
  }

  /// An explicit extend of what `h` holds, then a look.
  bool extend(redlock::client& c, int id, held& h, std::chrono::milliseconds ttl) {
    op e;
    e.client = id;
    e.resource = h.lock->name();
    e.kind = op_kind::extend;
    e.acquire_op = h.op;
    e.detail = "ttl " + std::to_string(ttl.count());
    e.invoke = steady::now();
    auto eid = history_.invoke(e);
    bool ok = true;
    try {
      c.extend(*h.lock, ttl);
      history_.complete(eid, steady::now(), outcome::ok);
    } catch (const redlock::error& x) {
      history_.complete(eid, steady::now(), outcome::fail, x.what());
      ok = false;
    }
    look(h);
    return ok;
  }

  /// Reads the masters for what `h` holds, against what its holder believes now.
  void probe(lease_probe& p, int id, held& h, std::size_t quorum) {
    op x;
    x.client = id;
    x.resource = h.lock->name();
    x.kind = op_kind::probe;
    x.acquire_op = h.op;
    x.valid_until_client = h.lock->valid_until();
    x.clock = clocks_.count(id) ? id : -1;
    x.quorum = quorum;
    x.invoke = steady::now();
    auto pid = history_.invoke(x);
    std::promise<std::vector<master_view>> read;
    bool hash = h.lock->kind() == lock_kind::reentrant || h.lock->kind() == lock_kind::fair;
    p.submit(h.lock->key(), h.lock->token(), hash,
             [&read](std::vector<master_view> v) { read.set_value(std::move(v)); });
    auto masters = read.get_future().get();
    history_.update(pid, [&](op& o) { o.masters = std::move(masters); });
    history_.complete(pid, steady::now(), outcome::ok);
  }

  /// Releases what `h` holds (if anything); a lock already lost is a failed op.
  void release(redlock::client& c, int id, held& h) {
    if (!h.lock) return;
    op r;
    r.client = id;
    r.resource = h.lock->name();
    r.kind = op_kind::release;
    r.acquire_op = h.op;
    r.invoke = steady::now();
    auto rid = history_.invoke(r);
    try {
      c.release(*h.lock);
      history_.complete(rid, steady::now(), outcome::ok);
    } catch (const redlock::error& e) {
      history_.complete(rid, steady::now(), outcome::fail, e.what());
    }
    h.lock.reset();
  }

  /// The history with every deadline converted to the steady clock.
  std::vector<op> ops() const {
    auto out = history_.snapshot();
    resolve_deadlines(out, [this](int id, time_point t) { return clocks_.at(id)->to_steady(t); });
    return out;
  }

 private:
  history& history_;
  std::map<int, std::shared_ptr<drift_clock>> clocks_;
};

}  // namespace redlock::fault
