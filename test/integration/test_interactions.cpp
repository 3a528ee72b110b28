// SPDX-License-Identifier: Apache-2.0
// Every lock kind x every operation x a second actor on the same name
// (issue #33). The other tests check each primitive on its own; these check
// where one meets another: A, of one kind, does one operation on a name
// while B, of any kind, holds it or waits for it. After the operation and
// at the end, straight from the masters (interactions.hpp):
//  - who may hold: two holders the library reports at once are kinds that
//    may share (two readers, two permits), and per master no two owner
//    fields, no writer with a reader, no more permit slots than permits;
//  - validity is backed: every hold with validity left is on a quorum of
//    masters for at least that long (a key's TTL, a read-write field's
//    deadline, an election's proclamation);
//  - a hold released (or adopted and released, or expired) is gone, and
//    after every release no lock key is left (a read-write hash whose
//    holds all ended included), nor any key without a TTL but the fence
//    counters;
//  - no lost wake-up: a waiter gets the lock within 1.5 s of it being free
//    (its retry delay is 3 s: only a wake-up brings it in sooner).
// Each cell is a test case named <A's kind>_x_<operation>_x_<B's kind>_<role>
// (or _x_alone), so one replays with --run_test=table/<name>.
//
// The table is every kind x operation x kind x role, less the cells that
// say nothing new (cell_makes_sense below):
//  - kinds of different layouts (a hash kind against a string kind, a
//    semaphore's slots against R) only meet in `try` (B holds, A asks) and
//    `release` (A holds, B asks): the documented wrong_type refusal or
//    independence, and nothing of the other touched. Other operations run
//    on A's own hold exactly as alone.
//  - "B holds" for an operation on A's hold needs kinds that share; "B
//    waits" for an acquisition is covered by the other operations' ends.
//  - renew and expiry (the slow ones) meet B of A's own kind only.
#define BOOST_TEST_MODULE integration_interactions
#include <boost/test/unit_test.hpp>

#include "interactions.hpp"

#include <boost/asio/error.hpp>

using namespace redlock::testing::interactions;
using redlock::acquire_options;
using redlock::errc;
using redlock::lock;
using redlock::testing::eventually;
using redlock::testing::masters;
namespace keys = redlock::detail::keys;
using steady = std::chrono::steady_clock;

namespace {

enum class op {
  acquire,                ///< waits up to 200 ms
  try_once,               ///< one attempt
  extend_shorter,         ///< held for 20 s, extended to 2 s: nothing gets shorter
  extend_longer,          ///< held for 2 s, extended to 20 s
  release,
  adopt_release,          ///< another client adopts A's token and releases it (redlock release --token)
  adopt_extend,           ///< another client adopts A's token and extends it to 20 s
  status,                 ///< read-only, shows A's hold
  renew,                  ///< held for 700 ms with renewal, for 800 ms
  cancel,                 ///< A's waiting acquisition is cancelled
  reentry,                ///< A's client and owner ask again while A holds, then release the inner hold
  second_first,           ///< two first acquisitions by one client and owner at once
  expiry,                 ///< A's client dies holding it (300 ms TTL; a campaign, which renews, 700 ms)
  release_beside_lapsed,  ///< a reader releases after another reader's hold lapsed
};

const char* name_of(op o) {
  switch (o) {
    case op::acquire: return "acquire";
    case op::try_once: return "try";
    case op::extend_shorter: return "extend_shorter";
    case op::extend_longer: return "extend_longer";
    case op::release: return "release";
    case op::adopt_release: return "adopt_release";
    case op::adopt_extend: return "adopt_extend";
    case op::status: return "status";
    case op::renew: return "renew";
    case op::cancel: return "cancel";
    case op::reentry: return "reentry";
    case op::second_first: return "second_first";
    case op::expiry: return "expiry";
    case op::release_beside_lapsed: return "release_beside_lapsed";
  }
  return "?";
}

constexpr std::array all_ops{op::acquire,      op::try_once,      op::extend_shorter, op::extend_longer,
                             op::release,      op::adopt_release, op::adopt_extend,   op::status,
                             op::renew,        op::cancel,        op::reentry,        op::second_first,
                             op::expiry,       op::release_beside_lapsed};

/// Operations that are A's acquisition itself; the others act on A's hold.
bool acquires(op o) { return o == op::acquire || o == op::try_once || o == op::cancel || o == op::second_first; }

enum class role {
  alone,  ///< no B
  holds,  ///< B holds the name before A's operation (and A's acquisition) begins
  waits,  ///< B asks once A holds (cancel: once both wait on a third holder), and waits if A excludes it
};

struct cell {
  kind a;
  op o;
  kind b;
  role r;
  std::string name() const {
    std::string s = std::string(::name_of(a)) + "_x_" + name_of(o) + "_x_";
    if (r == role::alone) return s + "alone";
    return s + ::name_of(b) + (r == role::holds ? "_holds" : "_waits");
  }
};

/// A semaphore gives two permits when A and B are to hold one each, else one.
unsigned permits_for(kind a, kind b, role r) {
  return a == kind::semaphore && b == kind::semaphore && r == role::holds ? 2 : 1;
}

/// Adopting a semaphore's permit or a set needs adopt_options (below).
bool adoptable_by_token(kind k) { return k != kind::semaphore && k != kind::set; }

bool cell_makes_sense(const cell& c) {
  if (c.o == op::release_beside_lapsed && c.a != kind::read) return false;  // only readers hold beside others
  if (c.r == role::alone) return c.o != op::cancel;  // a cancel needs someone to wait for
  auto permits = permits_for(c.a, c.b, c.r);
  bool same_layout = layout_of(c.a) == layout_of(c.b);
  if (!same_layout) return (c.o == op::try_once && c.r == role::holds) || (c.o == op::release && c.r == role::waits);
  if (c.o == op::second_first) return false;
  if ((c.o == op::renew || c.o == op::expiry) && c.a != c.b) return false;
  auto a_meets = between(c.b, c.a, permits);  // A asking while B holds
  if (c.o == op::cancel)
    return c.r == role::holds ? a_meets == meets::excludes
                              // B and A both wait on a holder of B's kind
                              : a_meets == meets::excludes && between(c.b, c.b, permits) == meets::excludes;
  if (acquires(c.o)) return c.r == role::holds;
  return c.r == role::waits || a_meets == meets::shares;
}

/// The cells of the table, or (adopt_options_group) those that adopt a
/// semaphore's permit or a set, which need adopt_options.
std::vector<cell> table_cells(bool adopt_options_group) {
  std::vector<cell> cells;
  for (auto a : all_kinds)
    for (auto o : all_ops) {
      bool needs_options = (o == op::adopt_release || o == op::adopt_extend) && !adoptable_by_token(a);
      if (needs_options != adopt_options_group) continue;
      if (cell_makes_sense({a, o, a, role::alone})) cells.push_back({a, o, a, role::alone});
      for (auto b : all_kinds)
        for (auto r : {role::holds, role::waits})
          if (cell_makes_sense({a, o, b, r})) cells.push_back({a, o, b, r});
    }
  return cells;
}

// Waiters: a retry delay long enough that only a wake-up brings one in
// within the bound. Where no wake-up is promised, a short one: a set's
// waiter has none (docs/algorithm.md, section 13), nor a waiter on a hold
// of another layout (a reentrant or fair waiter on a read-write lock: two
// kinds on one name, which section 1 says not to do).
constexpr milliseconds wake_bound = 1500ms;
constexpr milliseconds waiter_retry = 3000ms;
constexpr milliseconds unwoken_retry = 150ms;
constexpr milliseconds short_ttl = 300ms;
constexpr milliseconds renewed_ttl = 700ms;  // renewed every ttl / 3, which must exceed the node timeout

acquire_options waiting(acquire_options o, kind waiter, kind holder, milliseconds retry) {
  bool woken = waiter != kind::set && layout_of(waiter) == layout_of(holder);
  o.wait = 8000ms;
  o.retry_delay = woken ? retry : std::min(retry, unwoken_retry);
  o.retry_jitter = 0ms;
  // A fair waiter stays in line across its polls (and back-off).
  o.queue_timeout = 4 * o.retry_delay + 1000ms;
  return o;
}

class cell_run {
 public:
  explicit cell_run(const cell& c)
      : c_(c),
        m_(shared_masters()),
        n_("i" + std::to_string(++runs) + "x"),
        permits_(permits_for(c.a, c.b, c.r)),
        b_meets_(between(c.a, c.b, permits_)),
        a_meets_(c.r == role::holds ? between(c.b, c.a, permits_) : meets::independent) {
    m_.on_all({"FLUSHALL"});
  }

  void run() {
    if (c_.r == role::holds) b_takes_first();
    switch (c_.o) {
      case op::acquire:
      case op::try_once: a_asks_once(); break;
      case op::cancel: c_.r == role::holds ? cancel_while_b_holds() : cancel_beside_b(); break;
      case op::second_first: two_first_acquisitions(); break;
      case op::expiry: a_expires(); break;
      case op::release_beside_lapsed: release_beside_a_lapsed_reader(); break;
      default: operate_on_a_hold();
    }
    finale();
  }

 private:
  spec a_spec(milliseconds ttl = 30000ms) const { return {c_.a, "A", ttl, permits_}; }
  spec b_spec() const { return {c_.b, "B", 30000ms, permits_}; }
  acquire_options a_options(milliseconds ttl = 30000ms) const { return options_for(a_spec(ttl), n_); }
  acquire_options b_options() const { return options_for(b_spec(), n_); }
  std::size_t quorum() const { return m_.size() / 2 + 1; }

  // ---- set-up ----

  void b_takes_first() {
    auto got = acquire_now(*b_.c, n_.r, c_.b, b_options());
    BOOST_REQUIRE_MESSAGE(got.granted(), "B could not take the free name: " << got.ec.message());
    claims_.push_back({"B", c_.b, got.l});
  }

  lock a_takes(milliseconds ttl, acquire_options o) {
    o.ttl = ttl;
    auto got = acquire_now(*a_.c, n_.r, c_.a, o);
    BOOST_REQUIRE_MESSAGE(got.granted(), "A could not take the name: " << got.ec.message());
    claims_.push_back({"A", c_.a, got.l});
    return got.l;
  }

  /// B asks for the name (A holds it): it waits when A excludes it (and the
  /// test waits until its first round was refused and it listens for
  /// releases), else it is answered at once.
  void b_asks(milliseconds retry = waiter_retry, long waiters = 1) {
    b_wait_.emplace(*b_.c, n_.r, c_.b, waiting(b_options(), c_.b, c_.o == op::cancel ? c_.b : c_.a, retry));
    if (b_meets_ == meets::excludes) {
      BOOST_REQUIRE_MESSAGE(
          eventually([&] { return b_.log->first_round_answered(m_.size()) && listen(c_.b, waiters); }),
          "B never started waiting");
      if (auto early = b_wait_->result(0ms))
        BOOST_ERROR("B did not wait for A: " << (early->granted() ? "granted" : early->ec.message()));
      return;
    }
    auto got = b_wait_->result(5000ms);
    BOOST_REQUIRE_MESSAGE(got.has_value(), "B waited, though A's hold " << name_of(b_meets_) << " B's");
    expect_answer("B", c_.b, *got, b_meets_);
    b_wait_.reset();
  }

  /// `waiters` of kind `k` listen for releases on every master (a set's
  /// waiter has no wake-ups: it retries on its timer).
  bool listen(kind k, long waiters) {
    if (k == kind::set) return true;
    auto listening = release_listeners(m_, n_.r);
    return std::all_of(listening.begin(), listening.end(), [&](long n) { return n >= waiters; });
  }

  static void expect_done(const error_code& ec, const std::string& what) {
    BOOST_TEST(!ec, what << " failed: " << ec.message());
  }

  /// An acquisition's answer is what `m` says it must be; a grant becomes a claim.
  void expect_answer(const std::string& who, kind k, const outcome& got, meets m) {
    switch (m) {
      case meets::shares:
      case meets::independent:
        BOOST_TEST(got.granted(), who << " refused though the hold it met " << name_of(m) << ": " << got.ec.message());
        break;
      case meets::excludes:
        BOOST_TEST(got.refused(), who << " answered " << (got.granted() ? "granted" : got.ec.message())
                                      << " where the hold it met excludes it");
        break;
      case meets::wrong_type:
        BOOST_TEST((got.ec == errc::wrong_type),
                   who << " answered " << (got.granted() ? "granted" : got.ec.message()) << ", not wrong_type");
        break;
    }
    if (got.granted()) claims_.push_back({who, k, got.l});
  }

  // ---- the operations ----

  void a_asks_once() {
    auto o = a_options();
    if (c_.o == op::acquire) {
      o.wait = 200ms;
      o.retry_delay = 50ms;
    }
    expect_answer("A", c_.a, acquire_now(*a_.c, n_.r, c_.a, o), a_meets_);
    checkpoint("after A's acquisition");
  }

  void cancel_while_b_holds() {
    contender a(*a_.c, n_.r, c_.a, waiting(a_options(), c_.a, c_.b, waiter_retry), true);
    BOOST_REQUIRE(eventually([&] { return a_.log->first_round_answered(m_.size()); }));
    cancel_and_check(a);
    checkpoint("after A's cancellation");
  }

  // A and B both wait on H (of B's kind); A gives up; H's release must
  // reach B, not be spent on A.
  void cancel_beside_b() {
    party h(m_);
    auto held = acquire_now(*h.c, n_.r, c_.b, options_for({c_.b, "H", 30000ms, permits_}, n_));
    BOOST_REQUIRE(held.granted());
    contender a(*a_.c, n_.r, c_.a, waiting(a_options(), c_.a, c_.b, waiter_retry), true);
    BOOST_REQUIRE(eventually([&] { return a_.log->first_round_answered(m_.size()); }));
    b_meets_ = meets::excludes;
    b_asks(waiter_retry, c_.a == kind::set ? 1 : 2);
    cancel_and_check(a);
    expect_done(release_now(*h.c, held.l, c_.b), "H's release");
    freed_at_ = steady::now();
  }

  void cancel_and_check(contender& a) {
    a.cancel();
    auto got = a.result(2000ms);
    BOOST_REQUIRE_MESSAGE(got.has_value(), "the cancelled acquisition did not end");
    BOOST_TEST((got->ec == boost::asio::error::operation_aborted), "cancelled, it answered " << got->ec.message());
    if (got->granted()) claims_.push_back({"A", c_.a, got->l});
  }

  void two_first_acquisitions() {
    auto [first, second] = start_two(*a_.c, n_.r, c_.a, a_options());
    auto x = first->result(10000ms), y = second->result(10000ms);
    BOOST_REQUIRE(x.has_value() && y.has_value());
    BOOST_TEST_MESSAGE("two first acquisitions answered " << (x->granted() ? "granted" : x->ec.message()) << ", "
                                                          << (y->granted() ? "granted" : y->ec.message()));
    BOOST_TEST((x->granted() || y->granted()), "neither of two acquisitions of a free name was granted");
    if (x->granted()) claims_.push_back({"A", c_.a, x->l});
    if (y->granted()) claims_.push_back({"A twice", c_.a, y->l});
    checkpoint("after both answered");
    if (claims_.size() == 2) {
      // Each is a hold of its own to its caller: releasing one leaves the other.
      expect_done(release_now(*a_.c, claims_.back().l, c_.a), "the release of the second hold");
      claims_.pop_back();
      checkpoint("after the second of two holds was released");
    }
  }

  void a_expires() {
    auto dying = std::make_unique<party>(m_);
    auto ttl = c_.a == kind::election ? renewed_ttl : short_ttl;  // a campaign renews
    auto got = acquire_now(*dying->c, n_.r, c_.a, a_options(ttl));
    auto taken_at = steady::now();
    BOOST_REQUIRE_MESSAGE(got.granted(), got.ec.message());
    claims_.push_back({"A", c_.a, got.l});
    if (c_.r == role::waits) b_asks(100ms);  // no release will wake it: it polls
    dying.reset();  // gone without a release: its hold ends at its TTL
    forget_a(got.l, false);
    freed_at_ = taken_at + ttl;
    std::this_thread::sleep_until(*freed_at_ + 50ms);
    checkpoint("after A's TTL");
  }

  // A reads; another reader joins it and dies; once that one lapsed (no
  // script ran on the key since), A's is the last live hold to go.
  void release_beside_a_lapsed_reader() {
    auto l = a_takes(30000ms, a_options());
    {
      party dead(m_);
      auto got = acquire_now(*dead.c, n_.r, kind::read, options_for({kind::read, "D", short_ttl}, n_));
      BOOST_REQUIRE(got.granted());
    }  // its client gone without a release
    auto deadline = steady::now() + short_ttl;
    if (c_.r == role::waits) b_asks();
    std::this_thread::sleep_until(deadline + 50ms);
    checkpoint("after the other reader lapsed");
    a_releases(l);
  }

  void a_releases(const lock& l) {
    expect_done(release_now(*a_.c, l, c_.a), "A's release");
    forget_a(l, true);
  }

  /// A's hold `l` is over: its claims go, and it must leave no trace.
  void forget_a(const lock& l, bool freed) {
    std::erase_if(claims_, [&](const claim& c) { return c.who.starts_with("A") && c.l.token() == l.token(); });
    gone_.push_back({"A", c_.a, l});
    if (freed && !freed_at_) freed_at_ = steady::now();
  }

  void operate_on_a_hold() {
    milliseconds ttl = c_.o == op::extend_longer || c_.o == op::adopt_extend ? 2000ms
                       : c_.o == op::extend_shorter                         ? 20000ms
                       : c_.o == op::renew                                  ? renewed_ttl
                                                                            : 30000ms;
    auto o = a_options();
    o.renew = c_.o == op::renew;
    auto l = a_takes(ttl, o);
    if (c_.r == role::waits) b_asks();
    switch (c_.o) {
      case op::extend_shorter:
      case op::extend_longer: {
        auto to = c_.o == op::extend_shorter ? 2000ms : 20000ms;
        expect_done(extend_now(*a_.c, l, to), "A's extend");
        BOOST_TEST(l.remaining_validity() > 15000ms, "A's window ends in " << l.remaining_validity().count() << " ms");
        break;
      }
      case op::release: a_releases(l); break;
      case op::adopt_release: {
        auto adopted = adopt(l, 30000ms);
        expect_done(release_now(*adopter().c, adopted, kind::mutex), "the adopted hold's release");
        forget_a(l, true);
        break;
      }
      case op::adopt_extend: {
        auto adopted = adopt(l, 20000ms);
        expect_done(extend_now(*adopter().c, adopted, 20000ms), "the adopted hold's extend");
        claims_.push_back({"A (adopted)", c_.a, adopted});
        break;
      }
      case op::status: status_shows_a(l); break;
      case op::renew:
        std::this_thread::sleep_for(renewed_ttl + 100ms);  // longer than the TTL: renewed meanwhile
        BOOST_TEST(!l.lost(), "A's renewed lease was lost: " << redlock::to_string(l.why_lost()));
        break;
      case op::reentry: reenter(l); break;
      default: BOOST_FAIL("not an operation on a hold");
    }
    checkpoint("after the operation");
  }

  party& adopter() {
    if (!adopter_) adopter_.emplace(m_);
    return *adopter_;
  }

  /// A's hold, adopted by another client from its name and token.
  lock adopt(const lock& l, milliseconds ttl) {
#ifdef REDLOCK_HAS_ADOPT_OPTIONS
    if (!adoptable_by_token(c_.a)) {
      redlock::adopt_options how;
      if (c_.a == kind::semaphore) {
        how.kind = redlock::lock_kind::semaphore;
        how.permit = l.permit();
        how.permits = permits_;
      } else {
        how.other_names = {n_.partner};
      }
      return adopter().c->adopt(n_.r, l.token(), ttl, how);
    }
#endif
    return adopter().c->adopt(n_.r, l.token(), ttl);
  }

  /// The holds on the masters, as text per master (what status must not change).
  std::vector<std::string> holds_text(const std::vector<master_view>& views) const {
    std::vector<std::string> out;
    for (auto& v : views) {
      std::string text;
      for (auto& [k, kv] : v.keys)
        if (is_lock_key(k, n_)) {
          text += k + " " + kv.type + " " + kv.value;
          for (auto& [f, value] : kv.fields) text += " " + f + "=" + value;
          text += "\n";
        }
      out.push_back(std::move(text));
    }
    return out;
  }

  void status_shows_a(const lock& l) {
    // Once the acquisitions settled (a master's late grant, its clean-up),
    // status alone must change nothing.
    auto before = holds_text(snapshot(m_, n_.stem));
    eventually([&] {
      std::this_thread::sleep_for(20ms);
      auto again = holds_text(snapshot(m_, n_.stem));
      return std::exchange(before, again) == again;
    }, 2000ms);
    auto views = a_.c->status(n_.r);
    std::size_t shown = 0;
    for (auto& v : views) shown += shows(v, c_.a, l) ? 1 : 0;
    BOOST_TEST(shown >= quorum(), "status shows A's hold on " << shown << " master(s)");
    auto after = holds_text(snapshot(m_, n_.stem));
    for (std::size_t i = 0; i < m_.size(); ++i)
      BOOST_TEST(before[i] == after[i], "status changed the holds on master " << i << ":\n" << before[i] << "to\n"
                                                                             << after[i]);
  }

  // Kinds with owners re-enter (one hold, counted twice); the others are
  // a second contender and are refused.
  void reenter(const lock& outer) {
    bool reenters = c_.a == kind::reentrant || c_.a == kind::fair || layout_of(c_.a) == layout::rw;
    auto got = acquire_now(*a_.c, n_.r, c_.a, a_options());
    expect_answer("A again", c_.a, got, reenters ? meets::shares : meets::excludes);
    if (!got.granted()) return;
    BOOST_TEST(got.l.token() == outer.token());
    checkpoint("after the re-entry");
    expect_done(release_now(*a_.c, got.l, c_.a), "the inner release");
    std::erase_if(claims_, [](const claim& c) { return c.who == "A again"; });
    BOOST_TEST(outer.hold_count() == 1);
  }

  // ---- checks ----

  /// B's waiting acquisition, when it has ended, is a claim (or its refusal is checked).
  void absorb_b() {
    if (!b_wait_ || !b_wait_->done()) return;
    auto got = *b_wait_->result(0ms);
    b_wait_.reset();
    BOOST_TEST(got.granted(), "B's wait ended without the lock: " << got.ec.message());
    if (got.granted()) claims_.push_back({"B", c_.b, got.l});
  }

  void checkpoint(const char* when) {
    absorb_b();
    // A release returns once a quorum answered: the other masters' share
    // may still be on its way.
    eventually([&] {
      auto views = snapshot(m_, n_.stem);
      for (auto& g : gone_)
        for (auto& v : views)
          if (leaves_trace(v, g, n_)) return false;
      return true;
    }, 2000ms);
    read_windows(claims_);
    auto views = snapshot(m_, n_.stem);
    findings f;
    check_layouts(views, n_, f);
    check_backed(views, claims_, n_, quorum(), f);
    check_who_holds(claims_, permits_, f);
    for (auto& g : gone_)
      for (std::size_t i = 0; i < views.size(); ++i)
        if (leaves_trace(views[i], g, n_))
          f.push_back(describe(g) + " is over but still held on master " + std::to_string(i));
    BOOST_TEST(f.empty(), when << ":" << joined(f));
  }

  void finale() {
    // A gives back what it still holds, the latest first; an adopted
    // handle is A's hold too.
    std::erase_if(claims_, [](const claim& c) { return c.who == "A (adopted)"; });
    for (auto it = claims_.rbegin(); it != claims_.rend(); ++it)
      if (it->who.starts_with("A")) expect_done(release_now(*a_.c, it->l, it->k), describe(*it) + "'s release");
    std::vector<lock> released;
    for (auto& c : claims_)
      if (c.who.starts_with("A")) released.push_back(c.l);
    for (auto& l : released) forget_a(l, true);
    if (!freed_at_) freed_at_ = steady::now();
    if (b_wait_) {
      auto waited = steady::now() - *freed_at_;
      auto got = b_wait_->result(std::max(0ms, wake_bound - std::chrono::duration_cast<milliseconds>(waited)));
      BOOST_TEST(got.has_value(), "B was not in within " << wake_bound.count()
                                                          << " ms of the lock being free: a lost wake-up");
      b_wait_->result(10000ms);  // it gets in on its timer
      checkpoint("once B's wait ended");
    }
    for (auto& c : claims_) expect_done(release_now(*b_.c, c.l, c.k), describe(c) + "'s release");
    claims_.clear();
    findings f;
    eventually([&] {
      f.clear();
      auto views = snapshot(m_, n_.stem);
      check_nothing_held(views, n_, f);
      check_layouts(views, n_, f);
      return f.empty();
    }, 3000ms);
    BOOST_TEST(f.empty(), "after every release:" << joined(f));
  }

  static inline int runs = 0;
  const cell c_;
  masters& m_;
  names n_;
  unsigned permits_;
  meets b_meets_;  // what B meets, asking while A holds
  meets a_meets_;  // what A meets, asking while B holds (role holds)
  party a_{m_}, b_{m_};
  std::optional<party> adopter_;
  std::vector<claim> claims_;  // holds the library reports now, by A and B
  std::vector<claim> gone_;    // holds that ended and must have left no trace
  std::optional<contender> b_wait_;
  std::optional<steady::time_point> freed_at_;  // from when B may get in
};

struct register_cells {
  register_cells() {
    auto add = [](const char* suite_name, const std::vector<cell>& cells) {
      auto* suite = BOOST_TEST_SUITE(suite_name);
      for (auto& c : cells)
        suite->add(boost::unit_test::make_test_case([c] { cell_run(c).run(); }, c.name(), __FILE__, __LINE__));
      boost::unit_test::framework::master_test_suite().add(suite);
    };
    add("table", table_cells(false));
#ifdef REDLOCK_HAS_ADOPT_OPTIONS
    // A semaphore's permit and a set adopted with adopt_options (their
    // tokens alone do not say which slot, or which other names).
    add("adopt_options", table_cells(true));
#endif
  }
} const registered;

}  // namespace
