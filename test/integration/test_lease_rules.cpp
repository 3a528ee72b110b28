// SPDX-License-Identifier: Apache-2.0
// The lease rules (docs/algorithm.md, "Lease rules"), for every lock kind:
// no request of ours leaves a master expiring before the window the client
// still believes in; only refusals that make a quorum impossible end a lease
// (timeouts are transient); a released lock has no validity left; a hold
// whose window ended is not re-entered; an adopted lock can be released.
#define BOOST_TEST_MODULE integration_lease_rules
#include <boost/test/unit_test.hpp>
#include <boost/test/data/test_case.hpp>

#include "masters.hpp"

#include <redlock/redlock.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <thread>

using namespace std::chrono_literals;
namespace bdata = boost::unit_test::data;
using redlock::errc;
using redlock::lock_kind;
using redlock::lost_reason;
using redlock::testing::code_of;
using redlock::testing::eventually;
using redlock::testing::masters;
using steady = std::chrono::steady_clock;

namespace redlock {
// For the data-driven test names in Boost.Test's log.
std::ostream& operator<<(std::ostream& os, lock_kind k) {
  return os << (k == lock_kind::mutex ? "mutex" : k == lock_kind::reentrant ? "reentrant" : "fair");
}
}  // namespace redlock

namespace {

const lock_kind every_kind[] = {lock_kind::mutex, lock_kind::reentrant, lock_kind::fair};
const lock_kind hash_kinds[] = {lock_kind::reentrant, lock_kind::fair};

redlock::acquire_options options_for(lock_kind kind, std::chrono::milliseconds ttl) {
  redlock::acquire_options o;
  o.kind = kind;
  o.ttl = ttl;
  o.owner = kind == lock_kind::mutex ? "" : "worker";
  return o;
}

/// Someone else's live hold of `key` on master `s`, in the layout of `kind`,
/// written in one step: an acquisition that won its quorum elsewhere may
/// still be on its way to `s` (its request can reach `s` after the caller
/// has returned), and landing between a DEL and an HSET it would leave a
/// hash with two owners, one of them ours.
void plant_intruder(redlock::testing::redis_process& s, const std::string& key, lock_kind kind) {
  if (kind == lock_kind::mutex) {
    s.command({"SET", key, "intruder", "PX", "60000"});
  } else {
    s.command({"EVAL",
               "redis.call('DEL', KEYS[1]) redis.call('HSET', KEYS[1], 'someone:else', 1) "
               "return redis.call('PEXPIRE', KEYS[1], 60000)",
               "1", key});
  }
}

long long pttl(redlock::testing::redis_process& s, const std::string& key) { return std::stoll(s.command({"PTTL", key})); }

}  // namespace

// Issue 13, item 1. A 30 s lock held on m1 and m2 (m3 has another holder);
// m2 is stopped while the holder asks for 1 s. m1 answered at once, m2 only
// after the round had failed. With PEXPIRE moving expiry earlier, both keys
// were gone a second later while the holder still believed in 29 s, and a
// second client took the lock. `shorter` is the round that fails: an extend,
// or a re-entry (undone only where it applied).
void failed_shorter_round_never_shortens_a_key(
    lock_kind kind, const std::string& key,
    const std::function<void(redlock::client&, redlock::lock&)>& shorter) {
  masters m(3);
  auto copts = m.options(100ms);
  redlock::client a(copts), b(copts);
  plant_intruder(m[2], key, kind);
  auto held = a.acquire(key, options_for(kind, 30s));
  m[1].pause();
  BOOST_TEST(code_of([&] { shorter(a, held); }) != errc{});  // no quorum: m2 silent, m3 someone else's
  m[1].resume();
  m[2].command({"DEL", key});  // the other holder goes away
  std::this_thread::sleep_for(1300ms);
  BOOST_TEST(held.remaining_validity() > 25s);
  BOOST_TEST(pttl(m[0], key) > 25000);
  BOOST_TEST(eventually([&] { return pttl(m[1], key) > 25000; }, 1000ms));
  auto second = b.try_acquire(key, options_for(kind, 5s));
  BOOST_TEST(!second.has_value(), "a second client acquired while the first still held "
                                      << held.remaining_validity().count() << " ms");
}

BOOST_DATA_TEST_CASE(failed_shorter_extend_never_shortens_a_key, bdata::make(every_kind), kind) {
  failed_shorter_round_never_shortens_a_key(kind, "shorter-extend",
                                            [](redlock::client& c, redlock::lock& l) { c.extend(l, 1000ms); });
}

BOOST_DATA_TEST_CASE(failed_shorter_reentry_never_shortens_a_key, bdata::make(hash_kinds), kind) {
  failed_shorter_round_never_shortens_a_key(kind, "shorter-reentry", [kind](redlock::client& c, redlock::lock& l) {
    c.acquire(l.name(), options_for(kind, 1000ms));
  });
}

// A successful extend to a shorter TTL keeps the keys and the window where
// they were, so the watchdog's schedule (made for the longer window) stays
// right: the renewed lease is not lost.
BOOST_DATA_TEST_CASE(successful_shorter_extend_keeps_the_keys_the_window_and_the_lease, bdata::make(every_kind),
                     kind) {
  masters m(3);
  redlock::client a(m.options(200ms));
  const std::string key = "shorter-ok";
  auto o = options_for(kind, 6s);
  o.renew = true;  // renews every 2 s
  auto held = a.acquire(key, o);
  auto before = held.valid_until();
  a.extend(held, 1000ms);
  BOOST_TEST((held.valid_until() >= before));
  std::this_thread::sleep_for(2500ms);
  BOOST_TEST(!held.lost());
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding(key) == 3u; }));
  BOOST_TEST(held.remaining_validity() > 1s);
  a.release(held);
}

// Issue 13, item 2. m3 answers "not ours" (someone else's key), m1 times
// out, m2 renews: that is not a lost lease, and a renewal retried once m1
// is back keeps it.
BOOST_DATA_TEST_CASE(one_timeout_and_one_refusal_do_not_end_a_renewed_lease, bdata::make(every_kind), kind) {
  masters m(3);
  redlock::client a(m.options(200ms));
  const std::string key = "transient";
  std::atomic<int> lost{0};
  auto o = options_for(kind, 1500ms);
  o.renew = true;  // every 500 ms
  o.on_lost = [&](lost_reason why) { lost = static_cast<int>(why); };
  auto held = a.acquire(key, o);
  plant_intruder(m[2], key, kind);
  m[0].pause();
  std::this_thread::sleep_for(800ms);  // a renewal at 500 ms meets the timeout and the refusal
  m[0].resume();
  std::this_thread::sleep_for(1200ms);
  BOOST_TEST(lost.load() == 0, "lost with reason " << lost.load());
  BOOST_TEST(!held.lost());
  BOOST_TEST(held.remaining_validity() > 0ms);
  m[2].command({"DEL", key});
  a.release(held);
}

// The same rule for a one-shot extend and for release: the caller learns
// the round was inconclusive (the node error), not that the lock is gone.
BOOST_DATA_TEST_CASE(extend_and_release_say_not_held_only_when_refusals_make_a_quorum_impossible,
                     bdata::make(every_kind), kind) {
  masters m(3);
  redlock::client a(m.options(200ms));
  const std::string key = "inconclusive";
  auto held = a.acquire(key, options_for(kind, 10s));
  plant_intruder(m[2], key, kind);
  m[0].pause();
  BOOST_TEST(code_of([&] { a.extend(held, 10s); }) == errc::timeout);
  m[0].resume();
  auto other = a.acquire(key + "-2", options_for(kind, 10s));
  plant_intruder(m[1], key + "-2", kind);
  plant_intruder(m[2], key + "-2", kind);
  BOOST_TEST(code_of([&] { a.extend(other, 10s); }) == errc::not_held);  // two refusals of three
  m[0].pause();
  BOOST_TEST(code_of([&] { a.release(held); }) == errc::timeout);
  m[0].resume();
  BOOST_TEST(code_of([&] { a.release(other); }) == errc::not_held);
}

// Issue 13, item 6. An extend in flight when the release starts (one master
// slow) must not give the lock validity again: released means zero, from
// the moment the release is asked for.
BOOST_DATA_TEST_CASE(released_means_no_validity_even_for_an_extend_in_flight, bdata::make(every_kind), kind) {
  masters m(3);
  redlock::client a(m.options(1000ms));
  const std::string key = "released-zero";
  auto held = a.acquire(key, options_for(kind, 10s));
  m[1].pause();
  m[2].pause();
  std::promise<std::chrono::milliseconds> at_extend;
  std::promise<boost::system::error_code> extended, released;
  a.async().async_extend(held, 10s, [&](boost::system::error_code ec) {
    at_extend.set_value(held.remaining_validity());
    extended.set_value(ec);
  });
  a.async().async_release(held, [&](boost::system::error_code ec) { released.set_value(ec); });
  std::this_thread::sleep_for(100ms);
  m[1].resume();  // runs the extend, then the release
  auto validity = at_extend.get_future().get();
  BOOST_TEST(validity <= 0ms, "validity " << validity.count() << " ms after the release was asked for");
  extended.get_future().get();
  BOOST_TEST(!released.get_future().get());
  BOOST_TEST(held.remaining_validity() <= 0ms);
  m[2].resume();
}

// A re-entry decided after the owner's last release began must fail: that
// release deletes every level, the new one included, on every master.
BOOST_DATA_TEST_CASE(reentry_racing_the_last_release_fails, bdata::make(hash_kinds), kind) {
  masters m(3);
  redlock::client a(m.options(1000ms));
  const std::string key = "reentry-race";
  auto held = a.acquire(key, options_for(kind, 10s));
  m[1].pause();
  m[2].pause();
  std::promise<std::pair<boost::system::error_code, redlock::lock>> reentered;
  std::promise<boost::system::error_code> released;
  a.async().async_acquire(key, options_for(kind, 10s), [&](boost::system::error_code ec, redlock::lock l) {
    reentered.set_value({ec, std::move(l)});
  });
  a.async().async_release(held, [&](boost::system::error_code ec) { released.set_value(ec); });
  std::this_thread::sleep_for(100ms);
  m[1].resume();
  m[2].resume();
  auto [ec, l] = reentered.get_future().get();
  released.get_future().get();
  BOOST_TEST(ec == errc::not_held, ec.message());
  if (!ec) BOOST_TEST(m.holding(key) >= 2u, "re-entered with validity " << l.remaining_validity().count() << " ms, but the keys are gone");
}

namespace {
/// A client clock the test moves by hand.
struct manual_clock final : redlock::clock_source {
  std::atomic<std::chrono::steady_clock::duration> offset{std::chrono::steady_clock::duration::zero()};
  redlock::steady_time now() const noexcept override { return std::chrono::steady_clock::now() + offset.load(); }
};
}  // namespace

// Issue 13, item 10. A hold whose window has ended (here: the client's
// clock moved on while the keys are still on the masters) is not re-entered:
// re-entry would stretch a critical section that already ran out of time.
BOOST_DATA_TEST_CASE(reentry_of_a_lapsed_hold_is_refused, bdata::make(hash_kinds), kind) {
  masters m(3);
  auto clock = std::make_shared<manual_clock>();
  auto copts = m.options(200ms);
  copts.clock = clock;
  redlock::client a(copts);
  const std::string key = "lapsed";
  auto held = a.acquire(key, options_for(kind, 20s));
  clock->offset = std::chrono::seconds(25);
  BOOST_TEST(held.remaining_validity() <= 0ms);
  // The masters' keys have not expired (the third may still be applying).
  BOOST_TEST(eventually([&] { return m.holding(key) == 3u; }));
  BOOST_TEST(code_of([&] { a.acquire(key, options_for(kind, 20s)); }) == errc::not_held);
  BOOST_TEST(held.hold_count() == 1);
  a.release(held);
  BOOST_TEST(eventually([&] { return m.holding(key) == 0u; }));
}

// A renewed hold that was declared lost is not re-entered either.
BOOST_DATA_TEST_CASE(reentry_of_a_lost_hold_is_refused, bdata::make(hash_kinds), kind) {
  masters m(3);
  redlock::client a(m.options(200ms));
  const std::string key = "lost-reentry";
  auto o = options_for(kind, 900ms);
  o.renew = true;
  auto held = a.acquire(key, o);
  for (std::size_t i = 0; i < 3; ++i) plant_intruder(m[i], key, kind);
  BOOST_TEST(eventually([&] { return held.lost(); }, 3000ms));
  // Our field is back on every master (say an operator restored it): the
  // hold is still lost to its owner, whose critical section was told to stop.
  for (std::size_t i = 0; i < 3; ++i) {
    m[i].command({"DEL", key});
    m[i].command({"HSET", key, held.token(), "1"});
    m[i].command({"PEXPIRE", key, "10000"});
  }
  BOOST_TEST(code_of([&] { a.acquire(key, o); }) == errc::not_held);
}

// Issue 13, item 5. A fenced re-entry of an unfenced hold has no token to
// give: it is refused with its own error, and nothing changes on the masters.
BOOST_DATA_TEST_CASE(fenced_reentry_of_an_unfenced_hold_is_refused, bdata::make(hash_kinds), kind) {
  masters m(3);
  redlock::client a(m.options(200ms));
  const std::string key = "fence-reentry";
  auto held = a.acquire(key, options_for(kind, 10s));
  auto fenced = options_for(kind, 10s);
  fenced.fenced = true;
  BOOST_TEST(code_of([&] { a.acquire(key, fenced); }) == errc::unfenced_hold);
  BOOST_TEST(held.hold_count() == 1);
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_TEST(eventually([&] { return m[i].command({"HGET", key, held.token()}) == "1"; }));
  // The other way round is fine: an unfenced re-entry of a fenced hold keeps its token.
  a.release(held);
  auto f = a.acquire(key, fenced);
  BOOST_TEST(f.fence().has_value());
  auto inner = a.acquire(key, options_for(kind, 10s));
  BOOST_TEST((inner.fence() == f.fence()));
  a.release(inner);
  a.release(f);
}

// Issue 13, item 3. A lock adopted from its name and token (another process
// took it, e.g. `redlock acquire`) can be extended and released, whatever
// its kind.
BOOST_DATA_TEST_CASE(an_adopted_lock_can_be_extended_and_released, bdata::make(every_kind), kind) {
  masters m(3);
  auto copts = m.options(200ms);
  std::string token;
  {
    redlock::client owner(copts);
    auto held = owner.acquire("adopted", options_for(kind, 10s));
    token = held.token();
  }  // the acquiring client is gone; the lock stays
  redlock::client other(copts);
  auto adopted = other.async().adopt("adopted", token, 10s);
  other.extend(adopted, 20s);
  BOOST_TEST(adopted.remaining_validity() > 15s);
  // (The acquiring client may have closed before its third request left.)
  auto extended = [&] {
    std::size_t n = 0;
    for (std::size_t i = 0; i < 3; ++i) n += pttl(m[i], "adopted") > 15000;
    return n;
  };
  BOOST_TEST(eventually([&] { return extended() >= 2u; }));
  other.release(adopted);
  BOOST_TEST(eventually([&] { return m.holding("adopted") == 0u; }));
}

// Rule 3: a window that has ended stays ended. The client's clock jumps past
// the window while the keys are still on every master (no real time passed):
// an extend decided afterwards must not revive the window, and says so.
// Before the rule it succeeded and the window came back.
BOOST_DATA_TEST_CASE(an_extend_after_the_window_ended_does_not_revive_it, bdata::make(every_kind), kind) {
  struct jumping_clock : redlock::clock_source {
    std::atomic<long long> ahead_ms{0};
    redlock::steady_time now() const noexcept override {
      return steady::now() + std::chrono::milliseconds(ahead_ms.load());
    }
  };
  masters m(3);
  auto clock = std::make_shared<jumping_clock>();
  auto copts = m.options(200ms);
  copts.clock = clock;
  redlock::client c(copts);
  auto held = c.acquire("ended", options_for(kind, 10s));
  BOOST_REQUIRE(eventually([&] { return m.holding("ended") == 3u; }));
  clock->ahead_ms = 11000;  // past the 10 s window on the client's clock
  BOOST_TEST(held.remaining_validity() <= 0ms);
  BOOST_TEST(code_of([&] { c.extend(held, 10s); }) == errc::validity_expired);
  BOOST_TEST(held.remaining_validity() <= 0ms, "the window came back: " << held.remaining_validity().count() << " ms");
  c.release(held);  // the keys were ours all along: released everywhere
  BOOST_TEST(eventually([&] { return m.holding("ended") == 0u; }));
}
