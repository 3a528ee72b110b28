// SPDX-License-Identifier: Apache-2.0
#include "history.hpp"

#include <algorithm>
#include <ostream>
#include <sstream>

namespace redlock::fault {

std::size_t history::invoke(op o) {
  std::lock_guard g(mutex_);
  o.id = ops_.size();
  ops_.push_back(std::move(o));
  return ops_.back().id;
}

void history::complete(std::size_t id, time_point at, outcome r, std::string detail) {
  std::lock_guard g(mutex_);
  auto& o = ops_.at(id);
  o.completion = at;
  o.result = r;
  if (!detail.empty()) o.detail = std::move(detail);
}

std::vector<op> history::snapshot() const {
  std::lock_guard g(mutex_);
  return ops_;
}

std::size_t history::size() const {
  std::lock_guard g(mutex_);
  return ops_.size();
}

time_point belief_end(const std::vector<std::pair<time_point, time_point>>& looks) {
  time_point end{};
  for (std::size_t i = 0; i < looks.size(); ++i) {
    auto [at, deadline] = looks[i];
    if (i > 0 && at > end) break;  // the previous deadline passed before this look
    end = std::max(end, i + 1 < looks.size() ? std::min(deadline, looks[i + 1].first) : deadline);
    if (deadline <= at) break;  // this look saw the lease over
  }
  return end;
}

std::string slot_name(const std::string& resource, unsigned permit) {
  return resource + ":permit:" + std::to_string(permit);
}

std::string held_lock(const op& a) { return a.permit ? slot_name(a.resource, *a.permit) : a.resource; }

std::vector<std::string> held_locks(const op& a) {
  if (!a.names.empty()) return a.names;
  return {held_lock(a)};
}

const char* to_string(op_kind k) {
  switch (k) {
    case op_kind::acquire: return "acquire";
    case op_kind::release: return "release";
    case op_kind::write: return "write";
    case op_kind::fault: return "fault";
    case op_kind::extend: return "extend";
    case op_kind::lost: return "lost";
    case op_kind::probe: return "probe";
    case op_kind::renewal: return "renewal";
    case op_kind::section: return "section";
    case op_kind::window_moved: return "window-moved";
    case op_kind::lease_repaired: return "lease-repaired";
  }
  return "?";
}

const char* to_string(outcome r) {
  switch (r) {
    case outcome::ok: return "ok";
    case outcome::fail: return "fail";
    case outcome::unknown: return "unknown";
  }
  return "?";
}

double ms_since(time_point origin, time_point t) {
  return std::chrono::duration<double, std::milli>(t - origin).count();
}

std::string describe(const op& o, time_point print_origin) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << "#" << o.id << " ";
  if (o.client < 0)
    os << "nemesis";
  else
    os << "c" << o.client;
  os << " " << to_string(o.kind) << " " << o.resource << " [" << ms_since(print_origin, o.invoke) << " .. ";
  if (o.completion)
    os << ms_since(print_origin, *o.completion);
  else
    os << "never";
  os << "] " << to_string(o.result);
  if (o.valid_until) os << " valid_until=" << ms_since(print_origin, *o.valid_until);
  if (o.permits > 0) {
    os << " permit=";
    if (o.permit)
      os << *o.permit;
    else
      os << "-";
    os << "/" << o.permits;
  }
  if (o.shared) os << " read";
  if (o.leader) os << " leader";
  if (o.fence) os << (o.leader ? " epoch=" : " fence=") << *o.fence;
  if (!o.names.empty()) {
    os << " names";
    for (std::size_t i = 0; i < o.names.size(); ++i) {
      os << (i == 0 ? " " : ",") << o.names[i];
      if (i < o.fences.size()) os << "/" << o.fences[i];
    }
  }
  if (o.token) os << " token=" << *o.token;
  if (o.acquire_op) os << " of #" << *o.acquire_op;
  if (o.kind == op_kind::fault) os << (o.acted ? " acted" : " not seen to act");
  if (!o.beliefs.empty()) {
    os << " (" << (o.renewed ? "renewed" : "extended") << "; looks at/deadline:";
    for (auto& [at, deadline] : o.beliefs) os << " " << ms_since(print_origin, at) << "/" << ms_since(print_origin, deadline);
    os << ")";
  }
  if (!o.masters.empty()) {
    os << " masters";
    for (auto& m : o.masters) {
      os << " ";
      if (m.is == master_view::state::ours)
        os << "ours until " << ms_since(print_origin, m.expires);
      else
        os << (m.is == master_view::state::not_ours ? "not-ours" : "unreadable");
    }
  }
  if (!o.detail.empty()) os << " (" << o.detail << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const op& o) { return os << describe(o, time_point{}); }

time_point origin_of(const std::vector<op>& ops) {
  time_point t = time_point::max();
  for (auto& o : ops) t = std::min(t, o.invoke);
  return ops.empty() ? time_point{} : t;
}

void dump(std::ostream& os, const std::vector<op>& ops) {
  auto origin = origin_of(ops);
  for (auto& o : ops) os << describe(o, origin) << "\n";
}

}  // namespace redlock::fault
