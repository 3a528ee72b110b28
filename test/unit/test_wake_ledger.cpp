// SPDX-License-Identifier: Apache-2.0
// The wake ledger without sockets (src/waiting/wake_ledger.hpp): what a
// client remembers of its own releases, and every send or timer it decides
// on, from releases and asks built by hand (docs/algorithm.md, sections 10
// and 12). The fair hand-over ledger's tests are in test_waiting_ledgers.cpp.
#define BOOST_TEST_MODULE unit_wake_ledger
#include <boost/test/unit_test.hpp>

#include "waiting/wake_ledger.hpp"

using namespace std::chrono_literals;
namespace d = redlock::detail;
using ledger = d::wake_ledger;

namespace {

// Three masters, a quorum of two, 50 ms node timeouts: a release note is
// fresh for 50 ms, a permit release for 5 ms.
ledger three_masters() { return ledger(3, 2, 50ms); }

const redlock::steady_time t0{1000s};                 // client clock
const std::chrono::steady_clock::time_point r0{1000s};  // real clock

d::release_replies named(std::size_t masters) { return {.named = masters}; }
const d::release_replies no_one = named(0);
const d::release_replies waiter_left{.waiter_left = true};

const d::wake_list_entry entry{"client:7", 12.5, 200ms};

// A release of `key` at t0 + `at` that named a waiter on every master, and
// listed us behind it when `listed`.
ledger::release_noted release(ledger& l, const std::string& key, const d::wake_list_entry* listed = nullptr,
                              std::chrono::milliseconds at = 0ms) {
  return l.note_release(key, named(3), listed, false, t0 + at, t0 + at, r0 + at);
}

// A quiet permit release of slot 3 of `key` (a waiter heads a list) at r0 + `at`.
ledger::permit_release_noted quiet_release(ledger& l, const std::string& key, std::chrono::milliseconds at = 0ms,
                                           const std::string& token = "tok") {
  return l.note_permit_release(key, 3, token, true, waiter_left, false, r0 + at);
}

using names = std::vector<std::string>;
// The locks whose listings the ledger says to take down, in order.
names keys_of(const std::vector<ledger::unclaimed_listing>& take_down) {
  names out;
  for (auto& t : take_down) out.push_back(t.key);
  return out;
}
// The semaphores whose held-back wake-ups the ledger says to send, in order.
names keys_of(const std::vector<ledger::held_back_wake>& send) {
  names out;
  for (auto& w : send) out.push_back(w.semaphore_key);
  return out;
}

}  // namespace

// ---- mutex releases that named a waiter -------------------------------------

BOOST_AUTO_TEST_CASE(a_release_that_woke_a_waiter_on_a_quorum_is_fresh_for_one_node_timeout) {
  auto l = three_masters();
  l.note_release("k", named(2), nullptr, false, t0, t0, r0);
  BOOST_TEST(l.woke_waiter_just_now("k", t0 + 49ms));
  BOOST_TEST(!l.woke_waiter_just_now("k", t0 + 50ms));
  BOOST_TEST(!l.woke_waiter_just_now("other", t0));
}

// A named waiter retries one copy short of a quorum (release_news::named):
// 2 of 5 masters, 1 of 3. A release that named it on fewer woke no one.
BOOST_AUTO_TEST_CASE(a_release_that_named_a_waiter_on_fewer_copies_than_wake_it_woke_no_one) {
  auto l = ledger(5, 3, 50ms);
  l.note_release("k", named(1), nullptr, false, t0, t0, r0);
  BOOST_TEST(!l.woke_waiter_just_now("k", t0));
  l.note_reasked("k");  // but it is remembered: asking again at once is
  BOOST_TEST(l.relists("k"));
  l.note_release("k", named(2), nullptr, false, t0, t0, r0);
  BOOST_TEST(l.woke_waiter_just_now("k", t0));
  auto three = three_masters();
  three.note_release("k", named(1), nullptr, false, t0, t0, r0);
  BOOST_TEST(three.woke_waiter_just_now("k", t0));
}

// Decided at a quorum of deletions, one naming the waiter: a master yet to
// answer may name it too, and then the waiter comes. Asking again at once
// would race it (integration_mutex lost that race under load: answers 2, 1
// and one on its way).
BOOST_AUTO_TEST_CASE(a_release_that_may_yet_name_a_waiter_enough_times_woke_it) {
  auto l = ledger(5, 3, 50ms);
  l.note_release("k", {.named = 1, .unread = 1}, nullptr, false, t0, t0, r0);
  BOOST_TEST(l.woke_waiter_just_now("k", t0));
  // Nothing left to hear from, or no one named: no one comes.
  l.note_release("k", {.named = 1, .unread = 0}, nullptr, false, t0, t0, r0);
  BOOST_TEST(!l.woke_waiter_just_now("k", t0));
  l.note_release("k", {.named = 0, .unread = 2}, nullptr, false, t0, t0, r0);
  BOOST_TEST(!l.woke_waiter_just_now("k", t0));
}

BOOST_AUTO_TEST_CASE(a_release_that_named_no_waiter_ends_the_note) {
  auto l = three_masters();
  release(l, "k");
  l.note_reasked("k");
  l.note_release("k", no_one, nullptr, false, t0 + 1ms, t0 + 1ms, r0 + 1ms);
  BOOST_TEST(!l.woke_waiter_just_now("k", t0 + 1ms));
  BOOST_TEST(!l.relists("k"));
  release(l, "k", nullptr, 2ms);  // a fresh note: the asking again was forgotten
  BOOST_TEST(l.woke_waiter_just_now("k", t0 + 2ms));
  BOOST_TEST(!l.relists("k"));
}

BOOST_AUTO_TEST_CASE(asking_again_at_once_makes_the_next_releases_list_the_client) {
  auto l = three_masters();
  release(l, "k");
  BOOST_TEST(!l.relists("k"));
  l.note_reasked("other");  // no note there: nothing to mark
  BOOST_TEST(!l.relists("other"));
  l.note_reasked("k");
  BOOST_TEST(l.relists("k"));
  release(l, "k", nullptr, 10ms);  // carried over to the next release's note
  BOOST_TEST(l.relists("k"));
  BOOST_TEST((l.relisting_lapse() == 200ms));  // four node timeouts
}

BOOST_AUTO_TEST_CASE(a_listing_is_taken_over_by_the_next_acquisition) {
  auto l = three_masters();
  auto noted = l.note_release("k", named(2), &entry, false, t0, t0 + 5ms, r0);
  BOOST_TEST(noted.listing_kept);
  BOOST_TEST(noted.take_down.empty());
  BOOST_TEST((noted.sweep_at == r0 + 50ms));
  l.listing_watched("k", 9);
  auto claim = l.claim_listing("k");
  BOOST_REQUIRE(claim.has_value());
  BOOST_TEST(!claim->spent);
  BOOST_TEST(claim->watch == 9u);
  BOOST_TEST(claim->listed.entry.id == "client:7");
  BOOST_TEST(claim->listed.entry.score == 12.5);
  BOOST_TEST((claim->listed.sent_at == t0));
  BOOST_TEST((claim->listed.listed_until() == t0 + 100ms));  // half its lapse after it was sent
  BOOST_TEST(!l.claim_listing("k").has_value());  // taken once
  BOOST_TEST(l.drop_listings().empty());          // and no longer the ledger's
}

BOOST_AUTO_TEST_CASE(a_listing_named_before_it_is_claimed_is_spent) {
  auto l = three_masters();
  l.note_reasked("k");
  release(l, "k");
  l.note_reasked("k");
  release(l, "k", &entry);
  l.listing_watched("k", 9);
  BOOST_TEST(!l.listing_named("k", "client:8"));  // another entry: not ours to pass on
  BOOST_TEST(!l.listing_named("j", "client:7"));
  BOOST_TEST(l.listing_named("k", "client:7"));   // the wake-up goes on to whoever is next
  auto claim = l.claim_listing("k");
  BOOST_REQUIRE(claim.has_value());
  BOOST_TEST(claim->spent);  // taken down, not waited under
  BOOST_TEST(claim->listed.entry.id == "client:7");
  BOOST_TEST(claim->watch == 9u);
  BOOST_TEST(!l.relists("k"));  // not listed again until seen asking again at once
  BOOST_TEST(!l.listing_named("k", "client:7"));
}

BOOST_AUTO_TEST_CASE(a_listing_is_not_kept_when_no_one_was_named_or_the_client_stops) {
  auto l = three_masters();
  auto noted = l.note_release("k", no_one, &entry, false, t0, t0, r0);
  BOOST_TEST(!noted.listing_kept);
  BOOST_TEST(!noted.sweep_at.has_value());
  BOOST_TEST(!l.claim_listing("k").has_value());
  noted = l.note_release("k", named(3), &entry, true, t0, t0, r0);
  BOOST_TEST(!noted.listing_kept);
  BOOST_TEST(!l.claim_listing("k").has_value());
  BOOST_TEST(!l.woke_waiter_just_now("k", t0));  // a stopping client keeps no note
}

BOOST_AUTO_TEST_CASE(an_unclaimed_listing_is_taken_down_by_the_next_release_of_its_lock) {
  auto l = three_masters();
  l.note_reasked("k");
  release(l, "k", &entry);
  l.listing_watched("k", 9);
  auto noted = release(l, "k", nullptr, 10ms);
  BOOST_REQUIRE(noted.take_down.size() == 1u);
  BOOST_TEST(noted.take_down[0].key == "k");
  BOOST_TEST(noted.take_down[0].id == "client:7");
  BOOST_TEST(noted.take_down[0].watch == 9u);
  BOOST_TEST(!l.relists("k"));  // we did not ask again after all
  BOOST_TEST(!l.claim_listing("k").has_value());
}

BOOST_AUTO_TEST_CASE(the_sweep_takes_down_listings_unclaimed_for_a_node_timeout) {
  auto l = three_masters();
  BOOST_TEST((release(l, "k1", &entry).sweep_at == r0 + 50ms));
  BOOST_TEST(!release(l, "k2", &entry, 20ms).sweep_at.has_value());  // the sweep is armed already
  auto sweep = l.sweep_listings(r0 + 50ms);
  BOOST_TEST((keys_of(sweep.take_down) == names{"k1"}));
  BOOST_TEST((sweep.next == r0 + 70ms));
  sweep = l.sweep_listings(r0 + 70ms);
  BOOST_TEST((keys_of(sweep.take_down) == names{"k2"}));
  BOOST_TEST(!sweep.next.has_value());
  BOOST_TEST((release(l, "k3", &entry, 100ms).sweep_at == r0 + 150ms));  // not armed any more
}

BOOST_AUTO_TEST_CASE(only_the_latest_sixteen_releases_are_remembered) {
  auto l = three_masters();
  release(l, "k0", &entry);
  for (int i = 1; i < 16; ++i) BOOST_TEST(release(l, "k" + std::to_string(i)).take_down.empty());
  // The oldest note's listing, unclaimed, goes with it.
  BOOST_TEST((keys_of(release(l, "k16").take_down) == names{"k0"}));
  BOOST_TEST(!l.woke_waiter_just_now("k0", t0));
  BOOST_TEST(l.woke_waiter_just_now("k1", t0));
}

BOOST_AUTO_TEST_CASE(shutdown_takes_down_every_unclaimed_listing) {
  auto l = three_masters();
  release(l, "k1", &entry);
  release(l, "k2", &entry);
  BOOST_TEST(l.claim_listing("k1").has_value());
  BOOST_TEST((keys_of(l.drop_listings()) == names{"k2"}));
  BOOST_TEST(l.drop_listings().empty());
}

// ---- permit releases --------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_permit_asked_for_again_at_once_is_offered_its_slot_first) {
  auto l = three_masters();
  auto noted = l.note_permit_release("s", 3, "tok", false, {}, false, r0);
  BOOST_TEST(noted.send.empty());
  BOOST_TEST(!noted.arm_at.has_value());
  BOOST_TEST(!l.retakes_permits("s"));
  BOOST_TEST(!l.note_permit_asked("other", r0).has_value());
  BOOST_TEST((l.note_permit_asked("s", r0 + 5ms) == 3u));
  BOOST_TEST(l.retakes_permits("s"));
  BOOST_TEST(!l.note_permit_asked("s", r0 + 5ms).has_value());  // once per release
}

BOOST_AUTO_TEST_CASE(a_permit_asked_for_after_a_tenth_of_a_node_timeout_is_not) {
  auto l = three_masters();
  l.note_permit_release("s", 3, "tok", false, {}, false, r0);
  BOOST_TEST(!l.note_permit_asked("s", r0 + 6ms).has_value());
  BOOST_TEST(!l.retakes_permits("s"));
}

BOOST_AUTO_TEST_CASE(a_quiet_release_holds_its_wake_up_back_where_a_waiter_may_wait) {
  auto l = three_masters();
  // Every master answered, none has a waiter: nothing to hold back.
  auto noted = l.note_permit_release("s", 3, "tok", true, {}, false, r0);
  BOOST_TEST(!noted.arm_at.has_value());
  BOOST_TEST(l.wakes_due(r0 + 1s).send.empty());
  // A master had not answered by the decision: it may have a waiter.
  noted = l.note_permit_release("s", 3, "tok", true, {.unread = 1}, false, r0);
  BOOST_TEST((noted.arm_at == r0 + 5ms));
  // A master answered 3: a waiter heads its list.
  noted = quiet_release(l, "t");
  BOOST_TEST(!noted.arm_at.has_value());  // the timer is armed for then already
  auto due = l.wakes_due(r0 + 4ms);
  BOOST_TEST(due.send.empty());
  BOOST_TEST((due.next == r0 + 5ms));
  due = l.wakes_due(r0 + 5ms);
  BOOST_REQUIRE((keys_of(due.send) == names{"s", "t"}));
  BOOST_TEST(due.send[1].permit == 3u);
  BOOST_TEST(due.send[1].token == "tok");
  BOOST_TEST((due.send[1].nodes == std::vector<std::uint32_t>{0, 1, 2}));  // every master
  BOOST_TEST(!due.send[1].must_reach);
  BOOST_TEST(!due.next.has_value());
  BOOST_TEST(l.wakes_due(r0 + 10ms).send.empty());  // sent once
}

BOOST_AUTO_TEST_CASE(a_held_back_wake_up_waits_for_the_retake_and_is_dropped_if_it_wins) {
  auto l = three_masters();
  quiet_release(l, "s");
  BOOST_TEST((l.note_permit_asked("s", r0 + 1ms) == 3u));
  BOOST_TEST(l.wakes_due(r0 + 5ms).send.empty());  // the ask's decision sends it or drops it
  BOOST_TEST(!l.permit_retake_decided("s", true).has_value());
  BOOST_TEST(l.wakes_due(r0 + 10ms).send.empty());
  BOOST_TEST(l.take_held_back_wakes().empty());
}

BOOST_AUTO_TEST_CASE(a_held_back_wake_up_is_sent_when_the_retake_loses) {
  auto l = three_masters();
  quiet_release(l, "s");
  BOOST_TEST((l.note_permit_asked("s", r0 + 1ms) == 3u));
  auto wake = l.permit_retake_decided("s", false);
  BOOST_REQUIRE(wake.has_value());
  BOOST_TEST(wake->semaphore_key == "s");
  BOOST_TEST(!wake->must_reach);
  BOOST_TEST(!l.permit_retake_decided("s", false).has_value());  // decided once
  BOOST_TEST(l.wakes_due(r0 + 10ms).send.empty());
}

BOOST_AUTO_TEST_CASE(a_wake_up_sent_on_its_timer_ends_the_retaking) {
  auto l = three_masters();
  l.note_permit_release("s", 3, "tok", false, {}, false, r0);
  BOOST_TEST(l.note_permit_asked("s", r0 + 1ms).has_value());
  BOOST_TEST(!l.permit_retake_decided("s", true).has_value());
  BOOST_TEST(l.retakes_permits("s"));
  quiet_release(l, "s", 10ms);  // not asked again at once this time
  BOOST_TEST(l.wakes_due(r0 + 15ms).send.size() == 1u);
  BOOST_TEST(!l.retakes_permits("s"));  // wake at once next time
}

BOOST_AUTO_TEST_CASE(the_wake_up_timer_is_armed_only_when_not_armed_for_later) {
  auto l = three_masters();
  BOOST_TEST((quiet_release(l, "s1").arm_at == r0 + 5ms));
  BOOST_TEST(!quiet_release(l, "s2", 1ms).arm_at.has_value());  // the timer expires first
  auto due = l.wakes_due(r0 + 5ms);
  BOOST_TEST((keys_of(due.send) == names{"s1"}));
  BOOST_TEST((due.next == r0 + 6ms));
  due = l.wakes_due(r0 + 6ms);
  BOOST_TEST((keys_of(due.send) == names{"s2"}));
  BOOST_TEST(!due.next.has_value());
  BOOST_TEST((quiet_release(l, "s3", 10ms).arm_at == r0 + 15ms));  // it expired: armed anew
}

BOOST_AUTO_TEST_CASE(a_second_permit_release_sends_the_first_ones_held_back_wake_up) {
  auto l = three_masters();
  quiet_release(l, "s", 0ms, "first");
  auto noted = l.note_permit_release("s", 1, "second", false, {}, false, r0 + 1ms);
  BOOST_REQUIRE(noted.send.size() == 1u);
  BOOST_TEST(noted.send[0].token == "first");
  BOOST_TEST(l.wakes_due(r0 + 10ms).send.empty());
}

BOOST_AUTO_TEST_CASE(a_stopping_client_sends_a_held_back_wake_up_at_once) {
  auto l = three_masters();
  auto noted = l.note_permit_release("s", 3, "tok", true, waiter_left, true, r0);
  BOOST_REQUIRE(noted.send.size() == 1u);
  BOOST_TEST(noted.send[0].must_reach);
  BOOST_TEST(!noted.arm_at.has_value());
}

BOOST_AUTO_TEST_CASE(shutdown_sends_every_held_back_wake_up) {
  auto l = three_masters();
  quiet_release(l, "s1");
  quiet_release(l, "s2");
  auto wakes = l.take_held_back_wakes();
  BOOST_REQUIRE(wakes.size() == 2u);
  BOOST_TEST(wakes[0].must_reach);
  BOOST_TEST(wakes[1].must_reach);
  BOOST_TEST(l.take_held_back_wakes().empty());
}

BOOST_AUTO_TEST_CASE(only_sixteen_semaphores_are_remembered) {
  auto l = three_masters();
  for (int i = 0; i < 16; ++i) quiet_release(l, "s" + std::to_string(i));
  auto noted = quiet_release(l, "s16");
  BOOST_REQUIRE((keys_of(noted.send) == names{"s0"}));  // the oldest one's, sent as it is forgotten
  BOOST_TEST(!noted.send[0].must_reach);
}

// ---- lapses ---------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_waiters_entry_lives_twice_the_longest_gap_between_its_attempts) {
  redlock::acquire_options o;
  o.retry_delay = 100ms;
  o.retry_jitter = 20ms;
  // The longest gap as a master sees it: sent at once, the next run at its
  // deadline two node timeouts later, with the longest delay between.
  BOOST_TEST((d::wake_list_lapse(o, 50ms) == 2 * (100ms + 120ms)));
}
