// SPDX-License-Identifier: Apache-2.0
// Shared by the interaction tests (test_interactions*.cpp): every lock kind
// as one enum, how to take, release and extend each, what two kinds on one
// name may do, and the invariants read straight from the masters (a
// snapshot of every key of a test's names, then checks on it).
#pragma once

#include "masters.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace redlock::testing::interactions {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using boost::system::error_code;

/// The masters every interaction test shares (3: a quorum of 2), started
/// once: each test works on names of its own and flushes them first.
inline masters& shared_masters() {
  static masters m(3);
  return m;
}

// ---- kinds ----------------------------------------------------------------

/// Every kind of lock a user can take on a name, the set of names and the
/// election included (both are mutexes underneath, with their own scripts).
enum class kind { mutex, reentrant, fair, semaphore, read, write, set, election };
inline constexpr std::array<kind, 8> all_kinds{kind::mutex, kind::reentrant, kind::fair, kind::semaphore,
                                               kind::read,  kind::write,     kind::set,  kind::election};

inline const char* name_of(kind k) {
  switch (k) {
    case kind::mutex: return "mutex";
    case kind::reentrant: return "reentrant";
    case kind::fair: return "fair";
    case kind::semaphore: return "semaphore";
    case kind::read: return "read";
    case kind::write: return "write";
    case kind::set: return "set";
    case kind::election: return "election";
  }
  return "?";
}

/// What a kind stores under the name R (docs/algorithm.md, section 1).
enum class layout {
  token,   ///< R is a string holding the token (mutex, set, election)
  owners,  ///< R is a hash of '<client id>:<owner>' = count, plus ':hold-id' (reentrant, fair)
  rw,      ///< R is a hash of 'r:<hex>' / 'w:<hex>' = deadline (read, write)
  slots,   ///< R itself untouched: '{R}:permit:<i>' strings and '{R}:permits' (semaphore)
};

inline layout layout_of(kind k) {
  switch (k) {
    case kind::mutex:
    case kind::set:
    case kind::election: return layout::token;
    case kind::reentrant:
    case kind::fair: return layout::owners;
    case kind::read:
    case kind::write: return layout::rw;
    case kind::semaphore: return layout::slots;
  }
  return layout::token;
}

/// What an acquisition of `asker` meets while `holder` holds the same name
/// (one permit of `permits` in use, for two semaphores).
enum class meets {
  shares,       ///< both hold (two readers; two permits of a semaphore with room)
  excludes,     ///< refused (not_acquired) while the holder holds; a waiter gets in after
  wrong_type,   ///< refused with wrong_type at once: the key holds another layout (section 1, "Wrong type")
  independent,  ///< different keys altogether: a semaphore's slots never meet R
};

inline meets between(kind holder, kind asker, unsigned permits) {
  auto h = layout_of(holder), a = layout_of(asker);
  if (h == layout::slots || a == layout::slots)
    return h != a ? meets::independent : permits > 1 ? meets::shares : meets::excludes;
  if (h == a) return holder == kind::read && asker == kind::read ? meets::shares : meets::excludes;
  // A reentrant or fair acquisition reads a read-write hash as another
  // owner's fields: "no", not a type error (section 7).
  if (a == layout::owners && h == layout::rw) return meets::excludes;
  return meets::wrong_type;
}

inline const char* name_of(meets m) {
  switch (m) {
    case meets::shares: return "shares";
    case meets::excludes: return "excludes";
    case meets::wrong_type: return "wrong_type";
    case meets::independent: return "independent";
  }
  return "?";
}

/// The names a test works on: R, and the second name a set holds with it.
/// Both contain `stem`, which no other test's keys contain.
struct names {
  std::string stem, r, partner;
  explicit names(std::string s) : stem(std::move(s)), r(stem), partner(stem + ".b") {}
  names(std::string s, std::string name, std::string other)
      : stem(std::move(s)), r(std::move(name)), partner(std::move(other)) {}
};

/// A holder or contender: which kind it takes, as which owner (reentrant,
/// fair and read-write re-entry are per client and owner), with which TTL.
struct spec {
  kind k = kind::mutex;
  std::string owner = "o";
  milliseconds ttl = 30000ms;
  unsigned permits = 1;  ///< semaphores: every holder of one name gives the same number
};

inline acquire_options options_for(const spec& s, const names& n) {
  acquire_options o;
  o.ttl = s.ttl;
  o.owner = s.owner;
  o.queue_timeout = 2000ms;  // a fair waiter's leftovers lapse soon
  switch (s.k) {
    case kind::mutex:
    case kind::election: o.kind = lock_kind::mutex; o.owner.clear(); break;
    case kind::set: o.kind = lock_kind::mutex; o.owner.clear(); o.other_names = {n.partner}; break;
    case kind::reentrant: o.kind = lock_kind::reentrant; break;
    case kind::fair: o.kind = lock_kind::fair; break;
    case kind::semaphore: o.kind = lock_kind::semaphore; o.owner.clear(); o.permits = s.permits; break;
    case kind::read: o.kind = lock_kind::read; break;
    case kind::write: o.kind = lock_kind::write; break;
  }
  return o;
}

// ---- operations, through the async API (one call shape for every kind) ----

struct outcome {
  error_code ec;
  lock l;
  bool granted() const { return !ec && static_cast<bool>(l); }
  /// An ordinary refusal: someone else holds it (or the quorum came too late).
  bool refused() const { return ec == errc::not_acquired || ec == errc::validity_expired; }
};

/// Starts an acquisition (a campaign for the election kind); `done` gets its outcome.
template <typename Handler>
void start_acquire(client& c, const std::string& name, kind k, const acquire_options& o, Handler&& done) {
  if (k == kind::election)
    c.async().async_campaign(name, o, std::forward<Handler>(done));
  else
    c.async().async_acquire(name, o, std::forward<Handler>(done));
}

inline outcome acquire_now(client& c, const std::string& name, kind k, const acquire_options& o) {
  std::promise<outcome> p;
  auto f = p.get_future();
  start_acquire(c, name, k, o, [&p](error_code ec, lock l) { p.set_value({ec, std::move(l)}); });
  return f.get();
}

inline error_code release_now(client& c, const lock& l, kind k) {
  std::promise<error_code> p;
  auto f = p.get_future();
  auto done = [&p](error_code ec) { p.set_value(ec); };
  if (k == kind::election)
    c.async().async_resign(l, done);
  else
    c.async().async_release(l, done);
  return f.get();
}

inline error_code extend_now(client& c, const lock& l, milliseconds ttl) {
  std::promise<error_code> p;
  auto f = p.get_future();
  c.async().async_extend(l, ttl, [&p](error_code ec) { p.set_value(ec); });
  return f.get();
}

/// Counts a client's acquisition rounds and its masters' replies: a
/// contender is waiting once its first round has every answer.
struct attempt_log : observer {
  std::atomic<unsigned> attempts{0}, replies{0}, replies_at_first_attempt{0};
  void on_acquire_attempt(std::string_view, unsigned attempt) override {
    if (attempt == 1) replies_at_first_attempt = replies.load();
    ++attempts;
  }
  void on_node_reply(std::size_t, std::string_view, std::chrono::microseconds, const error_code&) override {
    ++replies;
  }
  bool first_round_answered(std::size_t masters) const { return first_round_answered_since(0, masters); }
  /// The same for an acquisition started after attempts() was `mark` (a
  /// client whose earlier acquisitions were counted too).
  bool first_round_answered_since(unsigned mark, std::size_t masters) const {
    return attempts > mark && replies - replies_at_first_attempt >= masters;
  }
};

/// The masters' deadline per request: these tests make hundreds of fresh
/// clients on a sanitized build that shares its cores, and 100 ms was
/// missed now and then by two masters at once (about one cell in 400 per
/// run). Every TTL here is longer; a renewed one at least three times.
inline constexpr milliseconds node_timeout = 200ms;

/// A client with its attempt_log.
struct party {
  std::shared_ptr<attempt_log> log = std::make_shared<attempt_log>();
  std::unique_ptr<client> c;
  party(masters& m) {
    auto o = m.options(node_timeout);
    o.observer = log;
    c = std::make_unique<client>(o);
  }
};

/// An acquisition running on its client's thread while the test goes on;
/// `cancel` (optional) is emitted to stop it.
class contender {
 public:
  contender(client& c, const std::string& name, kind k, const acquire_options& o, bool cancellable = false)
      : state_(std::make_shared<state>()), executor_(c.async().get_executor()) {
    auto done = [s = state_](error_code ec, lock l) {
      s->finished_at = std::chrono::steady_clock::now();
      s->result.set_value({ec, std::move(l)});
    };
    if (cancellable)
      start_acquire(c, name, k, o, boost::asio::bind_cancellation_slot(state_->cancel.slot(), done));
    else
      start_acquire(c, name, k, o, done);
    future_ = state_->result.get_future().share();
  }
  bool done() const { return future_.wait_for(0ms) == std::future_status::ready; }
  /// The outcome, waiting for it at most `limit`; nullopt if still waiting.
  std::optional<outcome> result(milliseconds limit) const {
    if (future_.wait_for(limit) != std::future_status::ready) return std::nullopt;
    return future_.get();
  }
  /// When it completed (once done()).
  std::chrono::steady_clock::time_point finished_at() const { return state_->finished_at; }
  /// Cancels it, on its client's thread (where the operation runs).
  void cancel() {
    boost::asio::post(executor_, [s = state_] { s->cancel.emit(boost::asio::cancellation_type::terminal); });
  }

 private:
  struct state {
    std::promise<outcome> result;
    std::chrono::steady_clock::time_point finished_at{};
    boost::asio::cancellation_signal cancel;
  };
  std::shared_ptr<state> state_;  // shared with the handler, which may outlive this
  boost::asio::any_io_executor executor_;
  std::shared_future<outcome> future_;
};

/// Two acquisitions by one client started in one go on its own thread, so
/// that neither can have heard of the other's answer: two first
/// acquisitions by one owner at once.
inline std::pair<std::unique_ptr<contender>, std::unique_ptr<contender>> start_two(client& c, const std::string& name,
                                                                                  kind k, const acquire_options& o) {
  std::pair<std::unique_ptr<contender>, std::unique_ptr<contender>> both;
  std::promise<void> started;
  boost::asio::post(c.async().get_executor(), [&] {
    both.first = std::make_unique<contender>(c, name, k, o);
    both.second = std::make_unique<contender>(c, name, k, o);
    started.set_value();
  });
  started.get_future().wait();
  return both;
}

// ---- the masters' view -----------------------------------------------------

/// One key as a master holds it.
struct key_view {
  std::string type;
  long long pttl = -2;
  std::string value;                          ///< string
  std::map<std::string, std::string> fields;  ///< hash: field -> value; zset: member -> score
};

/// One master: its clock (TIME, ms) and every key of the test's names.
struct master_view {
  long long now_ms = 0;
  steady_time read_at{};  ///< (test clock) when its answer was in: it shows an instant before
  std::map<std::string, key_view> keys;
  const key_view* find(const std::string& k) const {
    auto it = keys.find(k);
    return it == keys.end() ? nullptr : &it->second;
  }
};

// One script call per master, so that each master's view is one instant.
// Records are separated by ASCII 30, their parts by ASCII 31 (Lua's
// decimal escapes '\30', '\31'), which no key or value here contains.
inline const char* snapshot_script = R"lua(
local t = redis.call('TIME')
local out = { tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) }
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
  local ty = redis.call('TYPE', k)['ok']
  local rec = { k, ty, tostring(redis.call('PTTL', k)) }
  if ty == 'string' then
    rec[#rec + 1] = redis.call('GET', k)
  elseif ty == 'hash' then
    local kv = redis.call('HGETALL', k)
    for i = 1, #kv, 2 do rec[#rec + 1] = kv[i] .. '=' .. kv[i + 1] end
  elseif ty == 'zset' then
    local kv = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
    for i = 1, #kv, 2 do rec[#rec + 1] = kv[i] .. '=' .. kv[i + 1] end
  end
  out[#out + 1] = table.concat(rec, '\31')
end
return table.concat(out, '\30')
)lua";

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string::size_type at = 0;
  while (true) {
    auto next = s.find(sep, at);
    out.push_back(s.substr(at, next - at));
    if (next == std::string::npos) return out;
    at = next + 1;
  }
}

/// Every master's keys whose name contains `stem`.
inline std::vector<master_view> snapshot(masters& m, const std::string& stem) {
  std::vector<master_view> views;
  for (std::size_t i = 0; i < m.size(); ++i) {
    auto records = split(m[i].command({"EVAL", snapshot_script, "0", "*" + stem + "*"}), '\x1e');
    master_view v;
    v.read_at = std::chrono::steady_clock::now();
    v.now_ms = std::stoll(records.at(0));
    for (std::size_t r = 1; r < records.size(); ++r) {
      auto parts = split(records[r], '\x1f');
      key_view k;
      k.type = parts.at(1);
      k.pttl = std::stoll(parts.at(2));
      if (k.type == "string") k.value = parts.size() > 3 ? parts[3] : "";
      for (std::size_t p = 3; k.type != "string" && p < parts.size(); ++p) {
        auto eq = parts[p].find('=');
        k.fields[parts[p].substr(0, eq)] = parts[p].substr(eq + 1);
      }
      v.keys.emplace(parts[0], std::move(k));
    }
    views.push_back(std::move(v));
  }
  return views;
}

/// Per master, how many subscriptions listen for releases of `name` (its
/// release channel and its clients' wake channels).
inline std::vector<long> release_listeners(masters& m, const std::string& name) {
  std::vector<long> out;
  for (std::size_t i = 0; i < m.size(); ++i) {
    auto channels = split(m[i].command({"PUBSUB", "CHANNELS", detail::keys::released_channel(name) + "*"}), ' ');
    long listening = 0;
    if (!channels.front().empty()) {
      std::vector<std::string> numsub{"PUBSUB", "NUMSUB"};
      numsub.insert(numsub.end(), channels.begin(), channels.end());
      auto counts = split(m[i].command(numsub), ' ');  // channel, count, channel, count, ...
      for (std::size_t c = 1; c < counts.size(); c += 2) listening += std::stol(counts[c]);
    }
    out.push_back(listening);
  }
  return out;
}

/// The views as text, a line per key, for failure messages.
inline std::string to_string(const std::vector<master_view>& views) {
  std::ostringstream out;
  for (std::size_t i = 0; i < views.size(); ++i) {
    out << "\n    master " << i << " (TIME " << views[i].now_ms << "):";
    for (auto& [key, k] : views[i].keys) {
      out << "\n      " << key << " " << k.type << " pttl " << k.pttl << (k.value.empty() ? "" : " ") << k.value;
      for (auto& [f, v] : k.fields) out << " " << f << "=" << v;
    }
  }
  return out.str();
}

/// The keys that are a hold themselves (gone once released), as opposed to
/// companions (fence counters, wake lists, queues, marks, descriptions).
inline bool is_lock_key(const std::string& key, const names& n) {
  return key == n.r || key == n.partner || key.rfind(detail::keys::tagged(n.r, detail::keys::suffix::permit_slot), 0) == 0;
}
inline bool is_fence(const std::string& key) { return key.ends_with(":fence"); }

/// A hold the library says someone has now, to check against the masters.
struct claim {
  std::string who;  ///< for messages: "A", "B", "A (adopted)"
  kind k;
  lock l;
  /// Its window's end, read before the snapshot it is checked against
  /// (read_windows): a window and the keys behind it only ever move later
  /// (renewals run meanwhile), so what a master showed must last that long.
  steady_time until{};
};

inline void read_windows(std::vector<claim>& claims) {
  for (auto& c : claims)
    if (c.l) c.until = c.l.valid_until();
}

inline std::string describe(const claim& c) {
  std::ostringstream s;
  s << c.who << " (" << name_of(c.k) << ", token " << (c.l ? c.l.token() : "-") << ")";
  return s.str();
}

/// Does master `v` back `c` for at least `left` more: its key or field
/// there, with a TTL (or a read-write field's deadline) no earlier than the
/// end of the holder's validity window.
inline bool backs(const master_view& v, const claim& c, const names& n, long long left) {
  auto lasts = [&](const key_view& k) { return k.pttl == -1 || k.pttl + 2 >= left; };
  const auto& token = c.l.token();
  switch (layout_of(c.k)) {
    case layout::token: {
      for (const auto& key : c.k == kind::set ? std::vector{n.r, n.partner} : std::vector{n.r}) {
        auto* k = v.find(key);
        if (!k || k->type != "string" || k->value != token || !lasts(*k)) return false;
      }
      if (c.k == kind::election) {
        // The proclamation lives as long as the leadership (section 14).
        auto* h = v.find(detail::keys::holder(n.r));
        if (!h || h->value.rfind(token + " epoch ", 0) != 0 || !lasts(*h)) return false;
      }
      return true;
    }
    case layout::owners: {
      auto* k = v.find(n.r);
      if (!k || k->type != "hash" || !lasts(*k)) return false;
      auto f = k->fields.find(token);
      return f != k->fields.end() && std::stoll(f->second) >= 1;
    }
    case layout::rw: {
      auto* k = v.find(n.r);
      if (!k || k->type != "hash" || !lasts(*k)) return false;
      auto f = k->fields.find(token);
      return f != k->fields.end() && std::stoll(f->second) - v.now_ms + 2 >= left;
    }
    case layout::slots: {
      auto* k = v.find(c.l.key());
      return k && k->type == "string" && k->value == token && lasts(*k);
    }
  }
  return false;
}

/// Is `c`'s hold still on master `v` (its token in one of its keys, a live
/// field)? Only its own keys: one owner's field may hold the other name.
inline bool leaves_trace(const master_view& v, const claim& c, const names& n) {
  const auto& token = c.l.token();
  for (auto& [key, k] : v.keys) {
    bool its_key = key == n.r || (c.k == kind::set && key == n.partner) ||
                   (c.k == kind::semaphore && key.rfind(detail::keys::tagged(n.r, detail::keys::suffix::permit_slot), 0) == 0);
    if (!its_key) continue;
    if (k.type == "string" && k.value == token) return true;
    auto f = k.fields.find(token);
    if (k.type == "hash" && f != k.fields.end()) {
      if (layout_of(c.k) != layout::rw || std::stoll(f->second) > v.now_ms) return true;
    }
  }
  return false;
}

/// Does one master's status (async_client::async_status) show `l`, a hold of kind `k`?
inline bool shows(const node_lock_view& v, kind k, const lock& l) {
  auto has_owner = [&] {
    return std::any_of(v.owners.begin(), v.owners.end(), [&](auto& o) { return o.owner == l.token(); });
  };
  switch (layout_of(k)) {
    case layout::token: return v.content == key_content::mutex && v.token == l.token();
    case layout::owners: return v.content == key_content::reentrant && has_owner();
    case layout::rw: return v.content == key_content::rwlock && has_owner();
    case layout::slots:
      return v.content == key_content::semaphore &&
             std::any_of(v.permit_holds.begin(), v.permit_holds.end(),
                         [&](auto& p) { return p.permit == l.permit() && p.token == l.token(); });
  }
  return false;
}

/// Violations, as messages: empty when every check held.
using findings = std::vector<std::string>;

inline std::string joined(const findings& f) {
  std::string out;
  for (auto& s : f) out += "\n  " + s;
  return out;
}

/// Every claim with validity left (its window read before the snapshot,
/// read_windows) is backed on a quorum, for that validity.
inline void check_backed(const std::vector<master_view>& views, const std::vector<claim>& claims, const names& n,
                         std::size_t quorum, findings& out) {
  for (auto& c : claims) {
    if (!c.l || views.empty() || c.until <= views.back().read_at) continue;
    std::size_t backing = 0;
    for (auto& v : views)
      backing += backs(v, c, n, std::chrono::duration_cast<milliseconds>(c.until - v.read_at).count()) ? 1 : 0;
    if (backing < quorum)
      out.push_back(describe(c) + " has " +
                    std::to_string(std::chrono::duration_cast<milliseconds>(c.until - views.back().read_at).count()) +
                    " ms of validity but only " + std::to_string(backing) + " master(s) back it for that long");
  }
}

/// Two claims with validity left on one name are kinds that may hold together.
inline void check_who_holds(const std::vector<claim>& claims, unsigned permits, findings& out) {
  for (std::size_t i = 0; i < claims.size(); ++i)
    for (std::size_t j = i + 1; j < claims.size(); ++j) {
      auto &a = claims[i], &b = claims[j];
      if (!a.l || !b.l || a.l.remaining_validity() <= 0ms || b.l.remaining_validity() <= 0ms) continue;
      if (a.l.token() == b.l.token()) continue;  // one owner's hold, counted twice (re-entry)
      auto m = between(a.k, b.k, permits);
      if (m != meets::shares && m != meets::independent)
        out.push_back("two holders at once: " + describe(a) + " and " + describe(b));
    }
}

/// Per master, what a lock's layout allows: one owner field; no writer with
/// a reader, one writer; no more permit slots than permits.
inline void check_layouts(const std::vector<master_view>& views, const names& n, findings& out) {
  for (std::size_t i = 0; i < views.size(); ++i) {
    auto at = " on master " + std::to_string(i);
    auto* r = views[i].find(n.r);
    if (r && r->type == "hash") {
      int owners = 0, readers = 0, writers = 0;
      for (auto& [f, value] : r->fields) {
        if (f.starts_with(":")) continue;
        if (f.starts_with("r:") || f.starts_with("w:")) {
          if (std::stoll(value) <= views[i].now_ms) continue;  // lapsed
          (f[0] == 'r' ? readers : writers)++;
        } else {
          ++owners;
        }
      }
      if (owners > 1) out.push_back(std::to_string(owners) + " owner fields in " + n.r + at);
      if (owners > 0 && readers + writers > 0) out.push_back("owner and read-write fields mixed in " + n.r + at);
      if (writers > 1 || (writers > 0 && readers > 0))
        out.push_back(std::to_string(writers) + " writer(s) with " + std::to_string(readers) + " reader(s) live" + at);
      // Each hold lapses on its own "like a key at its TTL" (section 15):
      // once none is live, the key is nothing but a leftover. (50 ms: the
      // key's expiry and the last deadline are set apart by a little.)
      bool rw = std::any_of(r->fields.begin(), r->fields.end(),
                            [](auto& f) { return f.first.starts_with("r:") || f.first.starts_with("w:"); });
      if (rw && readers + writers == 0 && (r->pttl == -1 || r->pttl > 50))
        out.push_back("a read-write hash with no live hold left, kept " + std::to_string(r->pttl) + " ms more: " + n.r +
                      at);
    }
    auto* in_use = views[i].find(detail::keys::permits(n.r));
    std::size_t slots = 0;
    for (auto& [key, k] : views[i].keys) slots += key.rfind(detail::keys::tagged(n.r, detail::keys::suffix::permit_slot), 0) == 0 ? 1 : 0;
    if (in_use && slots > std::stoul(in_use->value))
      out.push_back(std::to_string(slots) + " permit slots held of " + in_use->value + at);
  }
}

/// Nothing held is left behind: no lock key (with a live field), and every
/// other key of the names (but the permanent fence counters) has a TTL.
inline void check_nothing_held(const std::vector<master_view>& views, const names& n, findings& out) {
  for (std::size_t i = 0; i < views.size(); ++i)
    for (auto& [key, k] : views[i].keys) {
      auto at = " on master " + std::to_string(i);
      if (is_lock_key(key, n)) {
        // A hash is held by an owner field or a live read-write field; a
        // lapsed read-write field holds nothing (the scripts drop it).
        bool held = k.type != "hash";
        for (auto& [f, value] : k.fields) {
          if (f.starts_with("r:") || f.starts_with("w:"))
            held |= std::stoll(value) > views[i].now_ms;
          else
            held |= !f.starts_with(":");
        }
        if (held) out.push_back("held after every release: " + key + " (" + k.type + ")" + at);
      } else if (!is_fence(key) && k.pttl == -1) {
        out.push_back("left behind for ever: " + key + " (" + k.type + ")" + at);
      }
    }
}

}  // namespace redlock::testing::interactions
