// SPDX-License-Identifier: Apache-2.0
// The quorum decision without sockets: fake replies, a fake clock.
#define BOOST_TEST_MODULE unit_quorum_decision
#include <boost/test/unit_test.hpp>

#include "quorum/quorum_decision.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

using namespace std::chrono_literals;
using redlock::steady_time;
using redlock::detail::quorum_decision;
using redlock::detail::quorum_of;
using redlock::detail::verdict;
using effect = quorum_decision::effect;
using rule = quorum_decision::failure_rule;

namespace {

/// A clock the test moves: t(0) is the start of the round.
steady_time t(std::chrono::microseconds us) { return steady_time{} + 1h + us; }

/// Feeds `answers` in order, one per 100 us; returns the index of the answer
/// that decided the round (answers.size() if none did).
std::size_t feed(quorum_decision& d, const std::vector<verdict>& answers) {
  d.start(t(0us));
  std::size_t decided_by = answers.size();
  for (std::size_t i = 0; i < answers.size(); ++i) {
    auto e = d.record(answers[i], t(std::chrono::microseconds(100 * (i + 1))));
    if (e == effect::decided) decided_by = i;
    if (i > decided_by) BOOST_TEST((e == effect::late));
  }
  return decided_by;
}

const verdict Y = verdict::yes, N = verdict::no, F = verdict::failed;

}  // namespace

BOOST_AUTO_TEST_CASE(every_reply_order_for_three_masters) {
  // Every sequence of three answers: decided at the second answer when the
  // first two agree on the outcome (two yes, or two "not yes"), else at the
  // third; reached exactly when two said yes; refused exactly when two said no.
  const std::array<verdict, 3> kinds{Y, N, F};
  for (auto a : kinds)
    for (auto b : kinds)
      for (auto c : kinds) {
        std::vector<verdict> seq{a, b, c};
        quorum_decision d(3, 2);
        auto by = feed(d, seq);
        auto yes = std::count(seq.begin(), seq.end(), Y);
        auto no = std::count(seq.begin(), seq.end(), N);
        bool first_two_settle = (a == Y) == (b == Y);
        BOOST_TEST(d.decided());
        BOOST_TEST(by == (first_two_settle ? 1u : 2u));
        BOOST_TEST(d.reached() == (yes >= 2));
        BOOST_TEST(d.refused_by_quorum() == (no >= 2));
        BOOST_TEST(d.every_master_answered());
        // The decision time is the deciding answer's.
        BOOST_TEST((d.decided_at() == t(std::chrono::microseconds(100 * (by + 1)))));
      }
}

BOOST_AUTO_TEST_CASE(one_master_is_its_own_quorum) {
  quorum_decision yes(1, quorum_of(1));
  BOOST_TEST(feed(yes, {Y}) == 0u);
  BOOST_TEST(yes.reached());
  quorum_decision no(1, quorum_of(1));
  BOOST_TEST(feed(no, {N}) == 0u);
  BOOST_TEST(!no.reached());
  BOOST_TEST(no.refused_by_quorum());
  quorum_decision timeout(1, quorum_of(1));
  BOOST_TEST(feed(timeout, {F}) == 0u);
  BOOST_TEST(!timeout.refused_by_quorum());  // a timeout is not a refusal
}

BOOST_AUTO_TEST_CASE(even_numbers_of_masters_need_more_than_half) {
  // N = 4, Q = 3: two yes and two no is no quorum, and a refusal only when
  // more than one master refused.
  quorum_decision split(4, quorum_of(4));
  BOOST_TEST(feed(split, {Y, N, Y, N}) == 3u);
  BOOST_TEST(!split.reached());
  BOOST_TEST(split.refused_by_quorum());
  quorum_decision one_no(4, quorum_of(4));
  BOOST_TEST(feed(one_no, {Y, F, N, Y}) == 2u);  // failed + no = 2 > N - Q = 1
  BOOST_TEST(!one_no.refused_by_quorum());
  quorum_decision three(4, quorum_of(4));
  BOOST_TEST(feed(three, {Y, Y, N, Y}) == 3u);
  BOOST_TEST(three.reached());
  // N = 2 needs both.
  quorum_decision two(2, quorum_of(2));
  BOOST_TEST(feed(two, {Y, F}) == 1u);
  BOOST_TEST(!two.reached());
}

BOOST_AUTO_TEST_CASE(timeouts_decide_a_failure_early_but_not_a_refusal) {
  // N = 3: m1 times out, m3 says "not ours", m2 says yes. Early rule: failed
  // at the second answer, and not refused (a lease stays, issue 13 item 2).
  quorum_decision d(3, 2);
  BOOST_TEST(feed(d, {F, N, Y}) == 1u);
  BOOST_TEST(!d.reached());
  BOOST_TEST(d.impossible());
  BOOST_TEST(!d.refused_by_quorum());
}

BOOST_AUTO_TEST_CASE(settled_failures_wait_for_every_master_to_count_refusals) {
  // N = 5: a timeout and two refusals make a quorum impossible at the third
  // answer, but only the last two refusals show it was refused.
  quorum_decision early(5, 3);
  BOOST_TEST(feed(early, {F, N, N}) == 2u);
  BOOST_TEST(!early.refused_by_quorum());  // at the decision: 2 refusals of 5
  quorum_decision settled(5, 3, rule::settled);
  BOOST_TEST(feed(settled, {F, N, N, N, N}) == 4u);
  BOOST_TEST(settled.refused_by_quorum());
  // Success is still decided at the quorum.
  quorum_decision quick(5, 3, rule::settled);
  BOOST_TEST(feed(quick, {Y, N, Y, Y, F}) == 3u);
  BOOST_TEST(quick.reached());
}

BOOST_AUTO_TEST_CASE(every_master_rule_waits_for_the_last_answer) {
  quorum_decision d(3, 2, rule::every_master);
  BOOST_TEST(feed(d, {Y, Y, F}) == 2u);
  BOOST_TEST(d.reached());
}

// A round sent to some masters only (a lease repair): waiting for every
// master means waiting for those asked, or it would never decide.
BOOST_AUTO_TEST_CASE(every_master_rule_waits_only_for_the_masters_asked) {
  quorum_decision d(5, 3, rule::every_master);
  d.ask_only(2);
  BOOST_TEST(feed(d, {Y, N}) == 1u);
  BOOST_TEST(d.every_master_answered());
  BOOST_TEST(!d.reached());
  BOOST_TEST(!d.refused_by_quorum());  // one refusal of five masters is not a quorum's
}

BOOST_AUTO_TEST_CASE(late_answers_are_counted_but_change_nothing) {
  quorum_decision d(5, 3);
  d.start(t(0us));
  for (int i = 0; i < 3; ++i) BOOST_TEST((d.record(Y, t(100us)) != effect::late));
  BOOST_TEST(d.decided());
  auto at = d.decided_at();
  BOOST_TEST((d.record(Y, t(900us)) == effect::late));
  BOOST_TEST((d.record(N, t(950us)) == effect::late));
  BOOST_TEST(d.yes() == 4u);
  BOOST_TEST(d.no() == 1u);
  BOOST_TEST((d.decided_at() == at));
}

BOOST_AUTO_TEST_CASE(validity_is_start_plus_ttl_minus_drift_and_checked_at_the_decision) {
  // TTL 10 s, drift 1% + 2 ms = 102 ms: the window ends at start + 9 898 ms,
  // whenever the quorum came.
  quorum_decision d(3, 2);
  d.start(t(0us));
  d.record(Y, t(1000us));
  d.record(Y, t(1600us));
  BOOST_TEST((d.window_end(10000ms, 0.01) == t(9898ms)));
  BOOST_TEST(d.acquired(10000ms, 0.01));
  BOOST_TEST(d.acquired(10000ms, 0.01, 9000ms));     // 9 896.4 ms left
  BOOST_TEST(!d.acquired(10000ms, 0.01, 9897ms));    // not that much
  // A quorum that came too late leaves no validity: not acquired.
  quorum_decision slow(3, 2);
  slow.start(t(0us));
  slow.record(Y, t(10ms));
  slow.record(Y, t(98ms));  // TTL 100 ms: 100 - 98 - 3 < 0
  BOOST_TEST(slow.reached());
  BOOST_TEST(!slow.acquired(100ms, 0.01));
  // No quorum: never acquired, however early.
  quorum_decision none(3, 2);
  feed(none, {Y, N, N});
  BOOST_TEST(!none.acquired(10000ms, 0.01));
}

// Semaphores: each yes names a permit slot, and a quorum is a quorum of one
// slot. Yes replies for other slots count against it like refusals.
BOOST_AUTO_TEST_CASE(a_quorum_of_choices_is_a_quorum_of_one_choice) {
  {  // 3 masters, three different slots: no quorum, decided at the third.
    quorum_decision d(3, 2);
    d.start(t(0us));
    BOOST_TEST((d.record(Y, t(100us), 0) == effect::pending));
    BOOST_TEST((d.record(Y, t(200us), 1) == effect::pending));
    BOOST_TEST((d.record(Y, t(300us), 2) == effect::decided));
    BOOST_TEST(!d.reached());
    BOOST_TEST(d.impossible());
  }
  {  // 5 masters: 1, 0, 1, then a refusal, then 1 decides for slot 1.
    quorum_decision d(5, 3);
    d.start(t(0us));
    d.record(Y, t(100us), 1);
    d.record(Y, t(200us), 0);
    d.record(Y, t(300us), 1);
    BOOST_TEST((d.record(N, t(400us)) == effect::pending));
    BOOST_TEST((d.record(Y, t(500us), 1) == effect::decided));
    BOOST_TEST(d.reached());
    BOOST_TEST(d.winner() == 1);
  }
  {  // 5 masters: two slots with two votes each and one failure: impossible
     // at the fifth answer only (the fifth could have made either a quorum).
    quorum_decision d(5, 3);
    d.start(t(0us));
    d.record(Y, t(100us), 0);
    d.record(Y, t(200us), 1);
    d.record(Y, t(300us), 0);
    BOOST_TEST((d.record(Y, t(400us), 1) == effect::pending));
    BOOST_TEST(!d.impossible());
    BOOST_TEST((d.record(F, t(500us)) == effect::decided));
    BOOST_TEST(!d.reached());
  }
  {  // 3 masters: a yes for slot 0 and one for slot 1 leave one master
     // that can still make a quorum with either.
    quorum_decision d(3, 2);
    d.start(t(0us));
    d.record(Y, t(100us), 0);
    BOOST_TEST((d.record(Y, t(200us), 1) == effect::pending));
    BOOST_TEST((d.record(Y, t(300us), 1) == effect::decided));
    BOOST_TEST(d.winner() == 1);
  }
}
