// SPDX-License-Identifier: Apache-2.0
#include "register_check.hpp"

#include <algorithm>
#include <sstream>

namespace redlock::fault {

std::optional<register_entry> parse_register_entry(const std::string& text) {
  std::istringstream in(text);
  std::string kind;
  register_entry e;
  std::int64_t sec = 0, usec = 0;
  if (!(in >> kind >> e.sid >> e.name >> e.cap >> sec >> usec) || kind.size() != 1) return std::nullopt;
  e.kind = kind[0];
  if (std::string("BREQLA").find(e.kind) == std::string::npos) return std::nullopt;
  e.at_us = sec * 1000000 + usec;
  return e;
}

std::string section_id(int client, std::size_t acquire_op) {
  return "c" + std::to_string(client) + "#" + std::to_string(acquire_op);
}

std::optional<std::size_t> section_acquire_op(const std::string& sid) {
  auto hash = sid.find('#');
  if (hash == std::string::npos || hash + 1 >= sid.size()) return std::nullopt;
  try {
    return static_cast<std::size_t>(std::stoull(sid.substr(hash + 1)));
  } catch (...) {
    return std::nullopt;
  }
}

void data_figures::add(const data_figures& o) {
  sections += o.sections;
  writes += o.writes;
  reads += o.reads;
  late += o.late;
  abandoned += o.abandoned;
  unfinished += o.unfinished;
  lost_updates += o.lost_updates;
  overlaps += o.overlaps;
  exposure_ms += o.exposure_ms;
  unjudged_overlaps += o.unjudged_overlaps;
  reads_shared += o.reads_shared;
  full += o.full;
  refused += o.refused;
}

namespace {

bool is_begin(char k) { return k == 'B' || k == 'R'; }

// One section on one name: its begin, and how (and when) it ended.
struct section {
  register_entry begin;
  char end = 0;  // 0: never ended
  std::int64_t end_us = 0;
  bool judged() const { return end == 'E' || end == 'Q'; }
  std::int64_t until() const { return end ? end_us : begin.at_us; }
};

std::string ms(std::int64_t us) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << static_cast<double>(us) / 1000.0 << " ms";
  return os.str();
}

std::vector<std::size_t> ops_of(std::initializer_list<const std::string*> sids) {
  std::vector<std::size_t> out;
  for (auto* s : sids)
    if (auto id = section_acquire_op(*s)) out.push_back(*id);
  return out;
}

}  // namespace

void judge_counters(const std::map<std::string, long long>& counters, const std::map<std::string, std::size_t>& writes,
                    data_figures& f, std::vector<violation>& out) {
  std::map<std::string, long long> all = counters;
  for (auto& [name, n] : writes) all.emplace(name, 0);
  for (auto& [name, value] : all) {
    auto n = static_cast<long long>(writes.count(name) ? writes.at(name) : 0);
    if (value < n) {
      f.lost_updates += static_cast<std::size_t>(n - value);
      std::ostringstream m;
      m << "register " << name << ": " << n << " sections wrote back, the counter says " << value << " ("
        << n - value << " update(s) lost)";
      out.push_back({"data-lost-update", m.str(), {}});
    } else if (value > n) {
      std::ostringstream m;
      m << "register " << name << ": counter " << value << " above the " << n << " write-backs logged";
      out.push_back({"data-corrupt", m.str(), {}});
    }
  }
}

std::vector<violation> check_data(const std::map<std::string, std::vector<std::string>>& logs,
                                  const std::map<std::string, long long>& counters, data_figures* figures) {
  std::vector<violation> out;
  data_figures f;
  std::map<std::string, std::size_t> writes_of;  // register name -> write-backs
  for (auto& [log, texts] : logs) {
    // Pass 1: every section of this log (keyed by sid and name), with its end.
    std::vector<section> sections;
    std::map<std::pair<std::string, std::string>, std::size_t> index;
    std::vector<std::size_t> order;  // entry i -> section index
    std::vector<bool> begins;
    for (auto& text : texts) {
      auto e = parse_register_entry(text);
      if (!e) {
        out.push_back({"data-corrupt", "log " + log + ": entry '" + text + "' does not parse", {}});
        order.push_back(SIZE_MAX);
        begins.push_back(false);
        continue;
      }
      auto key = std::make_pair(e->sid, e->name);
      if (is_begin(e->kind)) {
        index[key] = sections.size();
        order.push_back(sections.size());
        begins.push_back(true);
        sections.push_back({*e});
        continue;
      }
      auto it = index.find(key);
      begins.push_back(false);
      if (it == index.end() || sections[it->second].end) {
        out.push_back({"data-corrupt", "log " + log + ": '" + text + "' ends a section that is not open", {}});
        order.push_back(SIZE_MAX);
        continue;
      }
      auto& s = sections[it->second];
      s.end = e->kind;
      s.end_us = e->at_us;
      order.push_back(it->second);
      switch (e->kind) {
        case 'E':
          ++f.writes;
          ++writes_of[e->name];
          break;
        case 'Q': ++f.reads; break;
        case 'L': ++f.late; break;
        case 'A': ++f.abandoned; break;
      }
    }
    // Pass 2: in storage order, each begin against the sections open then.
    std::vector<std::size_t> open;
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (order[i] == SIZE_MAX) continue;
      auto& y = sections[order[i]];
      if (!begins[i]) {
        std::erase(open, order[i]);
        continue;
      }
      bool reader = y.begin.kind == 'R';
      std::size_t writers_open = 0, writers_judged = 0;
      std::vector<std::size_t> judged_writers;
      for (auto xi : open) {
        auto& x = sections[xi];
        bool x_reader = x.begin.kind == 'R';
        if (!x_reader) {
          ++writers_open;
          if (x.judged()) {
            ++writers_judged;
            judged_writers.push_back(xi);
          }
        }
        if (x.begin.name == y.begin.name && reader && x_reader) ++f.reads_shared;
        if (x.begin.name != y.begin.name || (reader && x_reader)) continue;
        if (!x.judged()) {
          ++f.unjudged_overlaps;
          continue;
        }
        auto shared = std::min(x.until(), y.until()) - y.begin.at_us;
        ++f.overlaps;
        f.exposure_ms += static_cast<double>(shared) / 1000.0;
        std::ostringstream m;
        m << "register " << y.begin.name << ": section " << y.begin.sid << (reader ? " (read)" : "")
          << " began while " << x.begin.sid << (x_reader ? " (read)" : "") << " was inside it, "
          << ms(y.begin.at_us - x.begin.at_us) << " after that one began and " << ms(x.end_us - y.begin.at_us)
          << " before it " << (x.end == 'E' ? "wrote back" : "ended") << "; they shared " << ms(shared)
          << " (storage time)";
        out.push_back({"data-interleave", m.str(), ops_of({&x.begin.sid, &y.begin.sid})});
      }
      if (!reader && y.begin.cap > 1) {
        if (writers_open + 1 == y.begin.cap) ++f.full;
        if (writers_open >= y.begin.cap) {
          if (writers_judged >= y.begin.cap) {
            std::ostringstream m;
            m << "log " << log << " (" << y.begin.cap << " permits): section " << y.begin.sid << " began while";
            std::vector<std::size_t> ids;
            for (auto xi : judged_writers) {
              m << " " << sections[xi].begin.sid;
              if (auto id = section_acquire_op(sections[xi].begin.sid)) ids.push_back(*id);
            }
            m << " were inside: " << writers_judged + 1 << " holders at once";
            if (auto id = section_acquire_op(y.begin.sid)) ids.push_back(*id);
            out.push_back({"data-permits", m.str(), ids});
          } else {
            ++f.unjudged_overlaps;
          }
        }
      }
      open.push_back(order[i]);
    }
    for (auto& s : sections)
      if (!s.end) ++f.unfinished;
  }
  // Every write-back read the counter at its begin: without overlaps each
  // adds exactly one.
  std::map<std::string, long long> by_name;
  for (auto& [k, value] : counters) by_name[k.substr(4)] = value;  // "reg:N" -> N
  judge_counters(by_name, writes_of, f, out);
  f.sections = f.writes + f.reads;
  if (figures) *figures = f;
  return out;
}

std::vector<violation> check_fenced_data(const fenced_table& table, const std::vector<fenced_outcome>& told,
                                         data_figures* figures) {
  std::vector<violation> out;
  data_figures f;
  std::map<std::string, std::size_t> committed_of;                 // name -> committed writes
  std::map<std::pair<std::string, std::string>, std::size_t> seen;  // (name, sid) -> times committed
  for (auto& [name, writes] : table.writes) {
    const fenced_write* highest = nullptr;  // the highest token committed so far
    for (auto& w : writes) {
      ++committed_of[name];
      if (++seen[{name, w.sid}] == 2)
        out.push_back({"data-corrupt", "register " + name + ": section " + w.sid + " committed twice", ops_of({&w.sid})});
      if (highest && w.token < highest->token) {
        std::ostringstream m;
        m << "register " << name << ": section " << w.sid << " committed token " << w.token << " after section "
          << highest->sid << " had committed token " << highest->token << " (a stale write the fence let through)";
        out.push_back({"data-stale-write", m.str(), ops_of({&highest->sid, &w.sid})});
      }
      if (!highest || w.token > highest->token) highest = &w;
    }
  }
  for (auto& t : told) {
    bool there = seen.count({t.name, t.sid}) > 0;
    if (t.result == outcome::fail) {
      if (there)
        out.push_back({"data-refused-kept",
                       "register " + t.name + ": section " + t.sid + " (token " + std::to_string(t.token) +
                           ") was told its write was refused as stale, and the storage has it",
                       ops_of({&t.sid})});
      else
        ++f.refused;
    } else if (t.result == outcome::ok && !there) {
      out.push_back({"data-lost-commit",
                     "register " + t.name + ": section " + t.sid + " (token " + std::to_string(t.token) +
                         ") was told its write committed, and the storage does not have it",
                     ops_of({&t.sid})});
    } else if (t.result == outcome::unknown) {
      ++f.unfinished;
    }
  }
  // Each committed write read the counter after the one before it committed
  // (the fence row serializes them): each adds exactly one.
  judge_counters(table.counters, committed_of, f, out);
  for (auto& [name, n] : committed_of) f.writes += n;
  f.sections = f.writes;
  if (figures) *figures = f;
  return out;
}

}  // namespace redlock::fault
