// SPDX-License-Identifier: Apache-2.0
// The randomised interactions (issue #33): seeded sequences of operations
// by five actors (three clients; two owners sharing one client, and one
// owner twice) on two names, every kind mixed on one name, checked after
// each step against a small model of what each lock allows and against the
// masters (the same invariants as the table, interactions.hpp):
//  - the library's answer is the model's where the model is certain: a try
//    on a free name is granted, against a hold that excludes it refused,
//    against another layout wrong_type, an owner's second ask a re-entry
//    (or upgrade_refused); release, extend, adopt-then-release and
//    adopt-then-extend of a hold succeed;
//  - every hold with validity left (adopted and extended ones too) is
//    backed on a quorum, kinds that exclude each other never both hold,
//    and a hold released or expired leaves no trace;
//  - one waiter at a time: once the model says it may enter, it is in
//    within 1.5 s (its retry delay is 3 s).
// Holds live 30 s but for the "crash" operation's, whose holder dies
// holding it for 700 ms: the model counts such a hold until its TTL and
// waits out the moments around its end (no step runs across them). A
// waiter let in by an expiry alone is only promised its next retry.
// A failure prints the seed and the steps before it; the run then starts
// afresh (new clients, flushed masters) and goes on, so one run can show
// several defects. REDLOCK_INTERACTIONS_SEED=<seed> replays a run (or
// `random` for a fresh seed: soak runs), REDLOCK_INTERACTIONS_STEPS=<n>
// sets its length. The default, what scripts/test runs, is seed 1 for 600
// steps: the same operations every run (their timing still varies), so a
// red CI is reproducible, within a minute or two under the sanitizers.
#include <boost/test/unit_test.hpp>

#include "interactions.hpp"

#include <cstdlib>
#include <deque>
#include <random>
#include <set>

using namespace redlock::testing::interactions;
using redlock::acquire_options;
using redlock::errc;
using redlock::lock;
using redlock::testing::eventually;
using redlock::testing::masters;
using steady = std::chrono::steady_clock;

namespace {

/// Who asks: a client object and an owner in it (reentrant, fair and
/// read-write holds belong to that pair). Actors 0 and 4 are the same pair.
struct actor {
  int client;
  const char* owner;
};
constexpr std::array<actor, 5> actors{{{0, "a"}, {0, "b"}, {1, "a"}, {2, "a"}, {0, "a"}}};
constexpr int client_count = 3;
constexpr int nobody = -1;  // an actor of its own (a crashing one)

bool same_owner(int x, int y) {
  return x != nobody && y != nobody && actors[x].client == actors[y].client &&
         std::string_view(actors[x].owner) == actors[y].owner;
}

constexpr unsigned permits = 2;
constexpr milliseconds hold_ttl = 30000ms;
constexpr milliseconds crash_ttl = 700ms;  // (a campaign renews: ttl / 3 must exceed the node timeout)
constexpr milliseconds expiry_margin = 250ms;  // no step runs this close to a dying hold's end
constexpr milliseconds wake_bound = 1500ms;
constexpr milliseconds waiter_retry = 3000ms;
constexpr int max_failures = 200;

const std::string stem = "rnd";
const std::array<std::string, 2> name_at{"rnd.0", "rnd.1"};

/// A hold in the model.
struct hold {
  int who;
  kind k;
  int name;  // a set holds name 0 with name 1
  lock l;
  int levels = 1;             // the owner's re-entries (reentrant, fair, read-write)
  std::vector<lock> adopted;  // handles of it another client adopted and extended
  std::optional<steady::time_point> dies_at;  // its holder died: it ends at its TTL
  bool on(int n) const { return name == n || k == kind::set; }
};

bool reenters(kind k) { return k == kind::reentrant || k == kind::fair || layout_of(k) == layout::rw; }
bool adoptable(kind k) {
#ifdef REDLOCK_HAS_ADOPT_OPTIONS
  return true;
#else
  return k != kind::semaphore && k != kind::set;  // needs adopt_options
#endif
}

/// What the model says an acquisition must be answered.
enum class answer { granted, reentered, refused, wrong_type, upgrade_refused };

const char* name_of(answer a) {
  switch (a) {
    case answer::granted: return "granted";
    case answer::reentered: return "re-entered";
    case answer::refused: return "refused";
    case answer::wrong_type: return "wrong_type";
    case answer::upgrade_refused: return "upgrade_refused";
  }
  return "?";
}

std::string said(const outcome& got) { return got.granted() ? "granted" : got.ec.message(); }

class random_run {
 public:
  random_run(std::uint64_t seed, int steps) : seed_(seed), steps_(steps), rng_(seed), m_(shared_masters()) {
    start_afresh();
  }

  void run() {
    for (step_ = 1; step_ <= steps_ && failures_ < max_failures; ++step_) {
      auto what = act();
      note(what);
      verify(what);
    }
    // Everything given back (a waiter gets in, and gives back too): nothing left behind.
    while (!holds_.empty()) {
      for (auto& h : holds_)
        for (int i = 0; !h.dies_at && i < h.levels; ++i) release_now(client_of(h.who), h.l, h.k);
      std::erase_if(holds_, [](const hold& h) { return !h.dies_at; });
      settle_waiter();
      expire_dying();
      if (!holds_.empty()) std::this_thread::sleep_for(50ms);
    }
    verify("the end");
    findings f;
    eventually([&] {
      f.clear();
      auto views = snapshot(m_, stem);
      for (int n = 0; n < 2; ++n) {
        check_nothing_held(views, names_of(n), f);
        check_layouts(views, names_of(n), f);
      }
      return f.empty();
    }, 3000ms);
    if (!f.empty()) fail("after every release", f);
    BOOST_TEST_MESSAGE("seed " << seed_ << ": " << steps_ << " steps (" << tally() << "), " << failures_
                               << " failure(s)" << classes());
  }

  int failures() const { return failures_; }
  /// Each class of failure and how often it was seen.
  std::string classes() const {
    std::string out;
    for (auto& [cls, n] : classes_) out += "\n  " + std::to_string(n) + "x [" + cls + "]";
    return out;
  }

 private:
  // ---- the world ----

  void start_afresh() {
    waiter_.reset();
    holds_.clear();
    parties_.clear();  // their clients end what they still run (shutting_down)
    m_.on_all({"FLUSHALL"});
    for (int i = 0; i <= client_count; ++i) parties_.push_back(std::make_unique<party>(m_));
  }
  redlock::client& client_of(int who) { return *parties_[static_cast<std::size_t>(actors[who].client)]->c; }
  party& party_of(int who) { return *parties_[static_cast<std::size_t>(actors[who].client)]; }
  redlock::client& other_client() { return *parties_[client_count]->c; }  // adopts, reads status

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  kind pick_kind() { return all_kinds[static_cast<std::size_t>(pick(static_cast<int>(all_kinds.size())))]; }
  int pick_name(kind k) { return k == kind::set ? 0 : pick(2); }

  names names_of(int n) const { return names(stem, name_at[n], name_at[1 - n]); }
  acquire_options options(int who, kind k, int n, milliseconds ttl = hold_ttl) const {
    return options_for({k, who == nobody ? "crash" : actors[who].owner, ttl, permits}, names_of(n));
  }

  // ---- the model ----

  /// What an ask by `who` for `k` on name `n` must be answered now.
  /// `waiter_asks`: the waiter itself asking (its own mark holds it back not).
  answer predict(int who, kind k, int n, bool waiter_asks = false) const {
    for (auto& h : holds_) {
      if (!h.on(n) || !same_owner(h.who, who) || !reenters(k) || !reenters(h.k)) continue;
      if (layout_of(k) != layout_of(h.k)) continue;
      return k == kind::write && h.k == kind::read ? answer::upgrade_refused : answer::reentered;
    }
    answer a = answer::granted;
    int permits_held = 0;
    for (auto& h : holds_) {
      if (!(h.on(n) || (k == kind::set && h.on(1)))) continue;
      if (k == kind::semaphore && h.k == kind::semaphore) {
        permits_held += h.on(n) ? 1 : 0;
        continue;
      }
      auto m = between(h.k, k, permits);
      if (m == meets::wrong_type) return answer::wrong_type;
      if (m == meets::excludes) a = answer::refused;
    }
    if (k == kind::semaphore && permits_held >= static_cast<int>(permits)) a = answer::refused;
    // A waiting writer's mark holds new readers back (docs/algorithm.md, section 15).
    if (waiter_ && !waiter_asks && waiter_->name == n && waiter_->k == kind::write && k == kind::read)
      a = answer::refused;
    return a;
  }

  void add_hold(int who, kind k, int n, lock l) { holds_.push_back({who, k, n, std::move(l), 1, {}, std::nullopt}); }

  /// The model's hold on name `n` that `l` is a handle of (one owner's
  /// field is the same on both names).
  hold* hold_with(const lock& l, int n) {
    for (auto& h : holds_)
      if (h.on(n) && h.l.token() == l.token()) return &h;
    return nullptr;
  }

  /// A dying hold on what an ask for `k` on `n` meets is about to end (or
  /// ended while the ask ran, on a slow machine): the model cannot say.
  bool dying_hold_ending(kind k, int n) const {
    return std::any_of(holds_.begin(), holds_.end(), [&](auto& h) {
      return h.dies_at && (h.on(n) || (k == kind::set && h.on(1))) && steady::now() >= *h.dies_at - expiry_margin;
    });
  }

  /// `got` against `expected`; a grant joins the model either way (so that
  /// it is released later). Returns a line for the log.
  std::string absorb(int who, kind k, int n, const outcome& got, answer expected, const std::string& what) {
    bool as_expected = dying_hold_ending(k, n);
    switch (expected) {
      case answer::granted: as_expected |= got.granted(); break;
      case answer::reentered: as_expected |= got.granted() && hold_with(got.l, n) != nullptr; break;
      case answer::refused: as_expected |= got.refused(); break;
      // (Or refused: a hold of another layout may be on only a quorum, and
      // the masters without it refuse for the holds that are there.)
      case answer::wrong_type: as_expected |= got.ec == errc::wrong_type || got.refused(); break;
      case answer::upgrade_refused: as_expected |= got.ec == errc::upgrade_refused; break;
    }
    if (got.granted()) {
      if (auto* h = expected == answer::reentered ? hold_with(got.l, n) : nullptr)
        ++h->levels;
      else
        add_hold(who, k, n, got.l);
    }
    auto line = what + " -> " + said(got);
    if (!as_expected) problems_.push_back(what + " answered " + said(got) + ", the model says " + name_of(expected));
    return line;
  }

  // ---- the operations ----

  std::string describe_ask(int who, kind k, int n) const {
    std::ostringstream s;
    s << "actor " << who << " (client " << actors[who].client << ", owner " << actors[who].owner << ") asks "
      << ::name_of(k) << " on " << name_at[n];
    return s.str();
  }
  std::string describe(const hold& h) const {
    std::ostringstream s;
    s << (h.who == nobody ? std::string("a dead holder") : "actor " + std::to_string(h.who)) << "'s "
      << ::name_of(h.k) << " on " << name_at[h.name] << " (" << h.l.token()
      << ", levels " << h.levels << ")";
    return s.str();
  }

  /// An operation begins: counted, and named for the failures it may show.
  void begin(const char* op, std::optional<kind> k = std::nullopt) {
    ++counts_[op];
    op_ = std::string(op) + (k ? std::string(" ") + ::name_of(*k) : "");
  }

  /// Dying holds past their end leave the model (after the margin; a step
  /// about to begin within it waits it out), checked as a step of their
  /// own. A waiter they let in is promised only its next retry.
  void expire_dying() {
    std::optional<kind> expired;
    auto due = [&] {
      return std::find_if(holds_.begin(), holds_.end(),
                          [](auto& h) { return h.dies_at && steady::now() >= *h.dies_at - expiry_margin; });
    };
    for (auto h = due(); h != holds_.end(); h = due()) {  // (from the start again: a wait brings others due)
      std::this_thread::sleep_until(*h->dies_at + expiry_margin);
      note(describe(*h) + " ended at its TTL");
      expired = h->k;
      end(*h);
    }
    if (!expired) return;
    begin("expiry", *expired);
    if (waiter_ && !waiter_->free_since && predict(waiter_->who, waiter_->k, waiter_->name, true) == answer::granted) {
      waiter_->free_since = steady::now();
      waiter_->by_expiry = true;
    }
    verify("a dead holder's hold ended at its TTL");
  }

  std::string act() {
    expire_dying();
    // Weights: asks and releases most; the rest now and then.
    int roll = pick(100);
    if (roll < 34 || holds_.empty()) return ask();
    if (roll < 58) return release();
    if (roll < 66) return extend();
    if (roll < 71) return adopt_and_release();
    if (roll < 76) return adopt_and_extend();
    if (roll < 86) return start_waiter();
    if (roll < 90) return two_first_acquisitions();
    if (roll < 93) return crash();
    return status();
  }

  std::string ask() {
    int who = pick(static_cast<int>(actors.size()));
    kind k = pick_kind();
    int n = pick_name(k);
    begin("ask", k);
    if (waiter_ && same_owner(who, waiter_->who) && reenters(waiter_->k) && waiter_->name == n)
      waiter_->owner_asked = true;
    auto expected = predict(who, k, n);
    auto got = acquire_now(client_of(who), name_at[n], k, options(who, k, n));
    return absorb(who, k, n, got, expected, describe_ask(who, k, n));
  }

  hold& pick_hold() { return holds_[static_cast<std::size_t>(pick(static_cast<int>(holds_.size())))]; }
  /// A hold someone alive has (not a dying one), or null.
  hold* pick_live_hold() {
    auto& h = pick_hold();
    return h.dies_at ? nullptr : &h;
  }

  std::string release() {
    auto* live = pick_live_hold();
    if (!live) return ask();
    auto& h = *live;
    begin("release", h.k);
    auto what = "release " + describe(h);
    if (auto ec = release_now(client_of(h.who), h.l, h.k)) problems_.push_back(what + " failed: " + ec.message());
    if (--h.levels == 0) end(h);
    return what;
  }

  /// `h` is over: it leaves the model and must leave no trace (unless
  /// another hold of the model has its token there: one owner's two holds).
  void end(const hold& h) {
    ended gone{{describe(h), h.k, h.l}, h.name};
    holds_.erase(holds_.begin() + (&h - holds_.data()));
    if (!hold_with(gone.what.l, gone.name)) ended_.push_back(std::move(gone));
  }

  std::string extend() {
    auto* live = pick_live_hold();
    if (!live) return ask();
    auto& h = *live;
    auto ttl = pick(2) ? 60000ms : 10000ms;  // longer, or shorter than the hold's 30 s
    begin("extend", h.k);
    auto what = "extend " + describe(h) + " to " + std::to_string(ttl.count()) + " ms";
    if (auto ec = extend_now(client_of(h.who), h.l, ttl)) problems_.push_back(what + " failed: " + ec.message());
    return what;
  }

  hold* pick_adoptable() {
    auto* h = pick_live_hold();
    return h && adoptable(h->k) ? h : nullptr;
  }

  lock adopt(const hold& h, milliseconds ttl) {
#ifdef REDLOCK_HAS_ADOPT_OPTIONS
    if (h.k == kind::semaphore || h.k == kind::set) {
      redlock::adopt_options how;
      if (h.k == kind::semaphore) {
        how.kind = redlock::lock_kind::semaphore;
        how.permit = h.l.permit();
        how.permits = permits;
      } else {
        how.other_names = {name_at[1]};
      }
      return other_client().adopt(name_at[h.name], h.l.token(), ttl, how);
    }
#endif
    return other_client().adopt(name_at[h.name], h.l.token(), ttl);
  }

  // Another client (a shell script's `redlock release --token`) releases
  // the hold by its token; the owner's client, which still counts it,
  // finds it gone. The token names the hold on the masters, with every
  // re-entry of it the owner's client counts (a read or write of the owner
  // that holds the write shares its token, docs/algorithm.md section 15):
  // all of them end, and of the owner's releases the last, which goes to
  // the masters, answers not_held (the others only count down).
  std::string adopt_and_release() {
    auto* h = pick_adoptable();
    if (!h) return ask();
    begin("adopt_release", h->k);
    auto what = "adopt and release " + describe(*h);
    if (auto ec = release_now(other_client(), adopt(*h, hold_ttl), kind::mutex))
      problems_.push_back(what + " failed: " + ec.message());
    auto token = h->l.token();
    auto name = h->name;
    std::vector<hold> same_hold;
    for (std::size_t i = 0; i < holds_.size();) {
      if (holds_[i].name == name && holds_[i].l.token() == token) {
        same_hold.push_back(holds_[i]);
        end(holds_[i]);
      } else {
        ++i;
      }
    }
    int left = 0;
    for (auto& x : same_hold) left += x.levels;
    for (auto& x : same_hold)
      for (int i = 1; i <= x.levels; ++i) {
        auto ec = release_now(client_of(x.who), x.l, x.k);
        // not_held; or wrong_type when a waiter of another kind took the
        // freed name at once (nothing of it is touched then).
        if (--left == 0 && ec != errc::not_held && ec != errc::wrong_type)
          problems_.push_back("the owner's own last release after " + what + " answered " + ec.message() +
                              ", not not_held");
      }
    return what;
  }

  std::string adopt_and_extend() {
    auto* h = pick_adoptable();
    if (!h) return ask();
    begin("adopt_extend", h->k);
    auto what = "adopt and extend to 60000 ms " + describe(*h);
    auto adopted = adopt(*h, 60000ms);
    if (auto ec = extend_now(other_client(), adopted, 60000ms)) problems_.push_back(what + " failed: " + ec.message());
    h->adopted.push_back(adopted);
    return what;
  }

  struct waiting {
    int who;
    kind k;
    int name;
    std::unique_ptr<contender> c;
    std::optional<steady::time_point> free_since;  // the model said it may enter from then
    bool by_expiry = false;                        // let in by a hold's end, not by a release
    bool owner_asked = false;  // its owner asked for the name again meanwhile (two acquisitions of one owner)
  };

  // One waiter at a time: an actor asks for a name that holds excluding it,
  // and waits; it must be in once the model says it may enter.
  std::string start_waiter() {
    if (waiter_) return ask();
    int who = pick(static_cast<int>(actors.size()));
    kind k = pick_kind();
    int n = pick_name(k);
    // Half the time the kind a hold on the name keeps out with the same
    // layout (a writer behind readers, ...): the waits wake-ups are for.
    auto& h = pick_hold();
    if (pick(2) && h.k != kind::set) {
      static constexpr std::array<kind, 8> kept_out{kind::mutex, kind::fair,  kind::reentrant, kind::semaphore,
                                                    kind::write, kind::write, kind::election,  kind::mutex};
      k = kept_out[static_cast<std::size_t>(h.k)];
      n = h.name;
    }
    if (predict(who, k, n) != answer::refused) return ask();
    begin("wait", k);
    // Woken by releases only among kinds of one layout (and never a set's
    // waiter, docs/algorithm.md, section 13): otherwise it polls.
    bool woken = k != kind::set;
    for (auto& h : holds_)
      if (h.on(n) && between(h.k, k, permits) != meets::independent && layout_of(h.k) != layout_of(k)) woken = false;
    auto o = options(who, k, n);
    o.wait = 20000ms;
    o.retry_delay = woken ? waiter_retry : 150ms;
    o.retry_jitter = 0ms;
    o.queue_timeout = 4 * o.retry_delay + 1000ms;
    auto& log = *party_of(who).log;
    auto mark = log.attempts.load();
    auto listening = release_listeners(m_, name_at[n]);
    waiter_ = waiting{who, k, n, std::make_unique<contender>(client_of(who), name_at[n], k, o), std::nullopt, false};
    // Waiting: its first round answered, and (woken) subscribed. Its client
    // may listen on the channel already (within the listener's linger):
    // then no new subscription shows.
    bool answered = eventually([&] { return log.first_round_answered_since(mark, m_.size()); }, 5000ms);
    if (woken) {
      eventually([&] {
        auto now = release_listeners(m_, name_at[n]);
        for (std::size_t i = 0; i < now.size(); ++i)
          if (now[i] <= listening[i]) return false;
        return true;
      }, 150ms);
    }
    auto what = describe_ask(who, k, n) + " and waits";
    if (!answered) problems_.push_back(what + ": its first round never ended");
    return what;
  }

  // The same client and owner (actors 0 and 4) ask at once for a name they
  // do not hold; if both are granted as holds of their own, releasing the
  // second must leave the first (defect 2).
  std::string two_first_acquisitions() {
    static constexpr std::array<kind, 4> kinds{kind::reentrant, kind::fair, kind::read, kind::write};
    kind k = kinds[static_cast<std::size_t>(pick(4))];
    int n = pick(2);
    if (predict(0, k, n) != answer::granted || (waiter_ && waiter_->name == n)) return ask();
    begin("second_first", k);
    auto o = options(0, k, n);
    auto [x, y] = start_two(client_of(0), name_at[n], k, o);  // (actor 4's client is actor 0's)
    auto gx = x->result(10000ms), gy = y->result(10000ms);
    auto what = "actors 0 and 4 (one owner) ask " + std::string(::name_of(k)) + " on " + name_at[n] + " at once";
    if (!gx || !gy) {
      problems_.push_back(what + ": no answer");
      return what;
    }
    what += " -> " + said(*gx) + ", " + said(*gy);
    if (!gx->granted() && !gy->granted()) problems_.push_back(what + ": neither granted on a free name");
    if (gx->granted()) add_hold(0, k, n, gx->l);
    if (gy->granted()) {
      if (gx->granted() && gy->l.hold_count() == 2)  // the second re-entered the first
        ++holds_.back().levels;
      else
        add_hold(4, k, n, gy->l);
    }
    // Two holds of one owner: which one its next ask re-enters is the
    // client's guess, so both go at once, the second first.
    if (gx->granted() && gy->granted() && gy->l.hold_count() == 1) {
      auto failed_before = failures_;
      note(what);
      verify(what);
      if (failures_ > failed_before) return what;  // started afresh
      release_last();
      what = "release actor 4's, then actor 0's";
      note("release actor 4's");
      verify("release actor 4's");
      if (failures_ > failed_before) return what;
      release_last();
    }
    return what;
  }

  void release_last() {
    auto& h = holds_.back();
    if (auto ec = release_now(client_of(h.who), h.l, h.k))
      problems_.push_back("release " + describe(h) + " failed: " + ec.message());
    if (--h.levels == 0) end(h);
  }

  // A holder that dies: its hold lasts its TTL (700 ms) in the model. A
  // lapsed reader's field stays in the hash until a script drops it.
  std::string crash() {
    // Half of them readers: a lapsed reader among live ones is the case
    // that matters beyond the expiry itself. (No fair lock: the dead
    // holder's place in the queue would outlive it, for its queue timeout.)
    static constexpr std::array<kind, 7> kinds{kind::mutex, kind::reentrant, kind::semaphore, kind::write,
                                               kind::set,   kind::election,  kind::read};
    kind k = pick(2) ? kind::read : kinds[static_cast<std::size_t>(pick(7))];
    int n = pick_name(k);
    if (predict(nobody, k, n) != answer::granted) return ask();
    begin("crash", k);
    auto what = "a " + std::string(::name_of(k)) + " on " + name_at[n] + " whose holder dies";
    party dying(m_);
    auto asked_at = steady::now();
    auto got = acquire_now(*dying.c, name_at[n], k, options(nobody, k, n, crash_ttl));
    if (!got.granted()) {
      problems_.push_back(what + ": not granted (" + said(got) + ")");
      return what;
    }
    add_hold(nobody, k, n, got.l);
    // The masters' TTLs end between these two; the margin covers both.
    holds_.back().dies_at = asked_at + crash_ttl + (steady::now() - asked_at) / 2;
    return what + " (" + got.l.token() + ")";
  }

  std::string status() {
    int n = pick(2);
    begin("status");
    auto views = other_client().status(name_at[n]);
    // A semaphore shows only while the name's own key is free (status.lua).
    bool name_key_free =
        std::none_of(holds_.begin(), holds_.end(), [&](auto& h) { return h.on(n) && h.k != kind::semaphore; });
    for (auto& h : holds_) {
      if (!h.on(n) || (h.k == kind::semaphore && !name_key_free)) continue;
      if (h.dies_at && steady::now() >= *h.dies_at - expiry_margin) continue;  // may have ended meanwhile
      std::size_t shown = 0;
      for (auto& v : views) shown += shows(v, h.k, h.l) ? 1 : 0;
      if (shown < m_.size() / 2 + 1)
        problems_.push_back("status of " + name_at[n] + " shows " + describe(h) + " on " + std::to_string(shown) +
                            " master(s)");
    }
    return "status of " + name_at[n];
  }

  // ---- checks ----

  /// The waiter: in within the bound once the model lets it in; never in before.
  void settle_waiter() {
    if (!waiter_) return;
    auto& w = *waiter_;
    auto what = describe_ask(w.who, w.k, w.name) + " (waiting)";
    if (predict(w.who, w.k, w.name, true) != answer::granted) {
      if (auto got = w.c->result(0ms)) {
        if (got->granted()) {
          if (!dying_hold_ending(w.k, w.name)) problems_.push_back(what + " got in while the model's holds exclude it");
          add_hold(w.who, w.k, w.name, got->l);
        }
        waiter_.reset();  // (or its wait ran out: nobody let it in for 20 s)
      }
      return;
    }
    if (!w.free_since) w.free_since = steady::now();
    auto bound = w.by_expiry ? waiter_retry + wake_bound : wake_bound;
    auto waited = std::chrono::duration_cast<milliseconds>(steady::now() - *w.free_since);
    auto got = w.c->result(std::max(0ms, bound - waited));
    if (!got) {
      problems_.push_back(what + " was not in within " + std::to_string(bound.count()) +
                          " ms of the model letting it in" + (w.by_expiry ? " (by an expiry)" : ": a lost wake-up") +
                          (w.owner_asked ? " (its owner asked for it again while it waited)" : ""));
      got = w.c->result(25000ms);
    }
    if (got && got->granted())
      add_hold(w.who, w.k, w.name, got->l);
    else if (got)
      problems_.push_back(what + " ended without the lock: " + said(*got));
    waiter_.reset();
  }

  void verify(const std::string& what) {
    settle_waiter();
    // A release returns once a quorum answered: the other masters' share
    // may still be on its way.
    eventually([&] {
      auto views = snapshot(m_, stem);
      for (auto& g : ended_)
        for (auto& v : views)
          if (leaves_trace(v, g.what, names_of(g.name))) return false;
      return true;
    }, 2000ms);
    // Each hold's handles (its own, and adopted ones), windows read first.
    std::vector<std::vector<claim>> claims;
    for (auto& h : holds_) {
      claims.push_back({{describe(h), h.k, h.l}});
      for (auto& a : h.adopted) claims.back().push_back({describe(h) + " (adopted)", h.k, a});
      read_windows(claims.back());
    }
    auto views = snapshot(m_, stem);
    findings f = std::move(problems_);
    problems_.clear();
    for (int n = 0; n < 2; ++n) check_layouts(views, names_of(n), f);
    std::array<std::vector<claim>, 2> on_name;
    for (std::size_t i = 0; i < holds_.size(); ++i) {
      check_backed(views, claims[i], names_of(holds_[i].name), m_.size() / 2 + 1, f);
      for (int n = 0; n < 2; ++n)
        if (holds_[i].on(n)) on_name[static_cast<std::size_t>(n)].push_back(claims[i].front());
    }
    for (auto& on : on_name) check_who_holds(on, permits, f);
    for (auto& g : ended_)
      for (std::size_t i = 0; i < views.size(); ++i)
        if (leaves_trace(views[i], g.what, names_of(g.name)))
          f.push_back(g.what.who + " is over but still held on master " + std::to_string(i));
    ended_.clear();
    if (!f.empty()) fail(what, f);
  }

  /// What went wrong, in a few words: with the operation, a failure's class.
  static std::string failure_type(const std::string& finding) {
    for (auto [needle, type] : {std::pair{"back it", "a hold not backed by a quorum"},
                                {"owner asked", "a lost wake-up of a waiter whose owner asked again"},
                                {"lost wake-up", "a lost wake-up"},
                                {"the model says", "an answer the model rules out"},
                                {"two holders", "two holders at once"},
                                {"no live hold left", "a read-write hash outliving its holds"},
                                {"got in while", "a waiter in while excluded"},
                                {"still held", "a hold over but still on the masters"},
                                {"failed", "an operation failed"}})
      if (finding.find(needle) != std::string::npos) return type;
    return "something else";
  }

  // The first failures of each class in full, then one line each: one
  // defect tends to show many times in a run.
  void fail(const std::string& what, const findings& f) {
    ++failures_;
    std::set<std::string> types;
    for (auto& finding : f) types.insert(failure_type(finding));
    std::string cls = op_ + ":";
    for (auto& t : types) cls += " " + t + ";";
    if (++classes_[cls] <= 2) {
      std::string steps, model;
      for (auto& s : recent_) steps += "\n    " + s;
      for (auto& h : holds_) model += "\n    " + describe(h);
      if (waiter_) model += "\n    " + describe_ask(waiter_->who, waiter_->k, waiter_->name) + " (waiting)";
      BOOST_ERROR("seed " << seed_ << ", step " << step_ << ": [" << cls << "] " << what << ":" << joined(f)
                          << "\n  the steps before:" << steps
                          << "\n  the model's holds:" << (model.empty() ? " none" : model)
                          << "\n  the masters now:" << to_string(snapshot(m_, stem))
                          << "\n  replay: REDLOCK_INTERACTIONS_SEED=" << seed_
                          << " REDLOCK_INTERACTIONS_STEPS=" << step_ << " --run_test=random_sequences");
    } else {
      BOOST_ERROR("seed " << seed_ << ", step " << step_ << ": [" << cls << "] again");
    }
    recent_.clear();
    start_afresh();
  }

  void note(const std::string& what) {
    recent_.push_back(std::to_string(step_) + ": " + what);
    if (recent_.size() > 25) recent_.pop_front();
  }

  std::string tally() const {
    std::string out;
    for (auto& [op, n] : counts_) out += op + " " + std::to_string(n) + ", ";
    return out;
  }

  std::uint64_t seed_;
  int steps_;
  int step_ = 0;
  int failures_ = 0;
  std::mt19937_64 rng_;
  masters& m_;
  std::vector<std::unique_ptr<party>> parties_;  // the actors' clients, then the other client
  std::vector<hold> holds_;
  std::optional<waiting> waiter_;
  findings problems_;        // wrong answers seen in this step
  struct ended {
    claim what;
    int name;
  };
  std::vector<ended> ended_;  // holds over in this step
  std::deque<std::string> recent_;
  std::map<std::string, int> counts_;   // operations run
  std::string op_;                      // the operation under way, with its kind
  std::map<std::string, int> classes_;  // failures by class
};

std::uint64_t seed_from_environment() {
  const char* s = std::getenv("REDLOCK_INTERACTIONS_SEED");
  if (!s) return 1;
  if (std::string_view(s) == "random") return std::random_device{}();
  return std::stoull(s);
}

int steps_from_environment() {
  if (const char* s = std::getenv("REDLOCK_INTERACTIONS_STEPS")) return std::stoi(s);
  return 600;
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_sequences) {
  auto seed = seed_from_environment();
  auto steps = steps_from_environment();
  BOOST_TEST_MESSAGE("random_sequences: seed " << seed << ", " << steps << " steps");
  random_run run(seed, steps);
  run.run();
  BOOST_TEST(run.failures() == 0, "seed " << seed << ": " << run.failures() << " failure(s), printed above:"
                                          << run.classes());
}
