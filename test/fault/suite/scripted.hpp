// SPDX-License-Identifier: Apache-2.0
// Hand-driven scenarios for the fault suite: sync redlock::client calls
// recorded in a history exactly like the workload records them, so the same
// checkers judge a scripted scenario.
#pragma once

#include "drift_clock.hpp"
#include "history.hpp"

#include <redlock/redlock.hpp>

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
      });
      history_.complete(aid, at, outcome::ok);
      out.lock = std::move(l);
    } catch (const redlock::error& e) {
      history_.complete(aid, steady::now(), outcome::fail, e.what());
    }
    return out;
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
