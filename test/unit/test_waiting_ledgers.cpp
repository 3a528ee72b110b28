// SPDX-License-Identifier: Apache-2.0
// The waiter's pure bookkeeping: counting a release's announcements, and the
// fair hand-over ledger (docs/algorithm.md, sections 10 and 11).
#define BOOST_TEST_MODULE unit_waiting_ledgers
#include <boost/test/unit_test.hpp>

#include "quorum/validity.hpp"
#include "waiting/fair_handover.hpp"
#include "waiting/release_news.hpp"

using namespace std::chrono_literals;
using redlock::steady_time;
using redlock::detail::handover_ledger;
using redlock::detail::release_news;

namespace {
steady_time t(std::chrono::milliseconds ms) { return steady_time{} + 1h + ms; }
}  // namespace

BOOST_AUTO_TEST_CASE(a_release_is_news_once_known_on_a_quorum) {
  release_news news(3);  // N = 5
  BOOST_TEST(!news.heard("r1"));
  BOOST_TEST(!news.heard("r1"));
  BOOST_TEST(news.heard("r1"));   // the third master: free on a quorum
  BOOST_TEST(!news.heard("r1"));  // later copies wake nobody again
  BOOST_TEST(!news.heard("r1"));
  // Copies of two releases interleave without mixing.
  BOOST_TEST(!news.heard("r2"));
  BOOST_TEST(!news.heard("r3"));
  BOOST_TEST(!news.heard("r2"));
  BOOST_TEST(!news.heard("r3"));
  BOOST_TEST(news.heard("r3"));
  BOOST_TEST(news.heard("r2"));
}

BOOST_AUTO_TEST_CASE(a_single_master_release_is_news_at_once) {
  release_news news(1);
  BOOST_TEST(news.heard("only"));
  BOOST_TEST(!news.heard("only"));
  release_news named(1);
  BOOST_TEST(named.named("only"));
  BOOST_TEST(!named.named("only"));
}

// A mutex release names one waiter: it retries one copy short of a quorum,
// and again at the quorum-th copy (in case the first retry was refused
// where the release had not yet run); never for the copies after.
BOOST_AUTO_TEST_CASE(a_named_waiter_retries_one_copy_short_of_a_quorum_and_again_at_it) {
  release_news news(3);  // N = 5
  BOOST_TEST(!news.named("r1"));
  BOOST_TEST(news.named("r1"));  // the second copy
  BOOST_TEST(news.named("r1"));  // the third: free on a quorum
  BOOST_TEST(!news.named("r1"));
  BOOST_TEST(!news.named("r1"));
  release_news three(2);  // N = 3: the first copy, then the second
  BOOST_TEST(three.named("r1"));
  BOOST_TEST(three.named("r1"));
  BOOST_TEST(!three.named("r1"));
  BOOST_TEST(release_news::wake_copies(5) == 4u);
}

BOOST_AUTO_TEST_CASE(hand_overs_win_at_a_quorum_with_the_earliest_poll_as_start) {
  handover_ledger l(3, 2);
  l.note_poll(5, t(0ms));
  l.note_poll(6, t(40ms));
  BOOST_TEST(!l.window_end(1000ms, 1000ms, 0.01).has_value());
  BOOST_TEST(l.handed(0, 6));
  BOOST_TEST(!l.has_quorum());
  BOOST_TEST(l.handed(2, 5));
  BOOST_TEST(l.has_quorum());
  // Held for 1 s from the earliest named poll (t = 0), minus 1% + 2 ms.
  BOOST_TEST((*l.window_end(1000ms, 1000ms, 0.01) == t(1000ms - 12ms)));
  BOOST_TEST((l.counted() == std::vector<std::uint32_t>{0, 2}));
  // A second grant on the same master changes nothing.
  BOOST_TEST(l.handed(0, 5));
  BOOST_TEST(l.count() == 2u);
}

BOOST_AUTO_TEST_CASE(a_poll_granted_by_the_master_itself_counts_like_a_hand_over) {
  handover_ledger l(3, 2);
  l.note_poll(7, t(10ms));
  l.poll_granted(1, 7, t(10ms));
  BOOST_TEST(l.handed(0, 7));
  BOOST_TEST(l.has_quorum());
}

BOOST_AUTO_TEST_CASE(a_grant_that_our_own_release_may_have_undone_is_not_counted) {
  // We polled (id 5), then released on master 1 (our clean-up). A release
  // that names poll 5 there may have run before our clean-up, which then
  // deleted the hold: only polls sent after the clean-up count there.
  handover_ledger l(3, 2);
  l.note_poll(5, t(0ms));
  l.forget({1}, /*next poll id*/ 6);
  BOOST_TEST(!l.handed(1, 5));
  BOOST_TEST(l.handed(0, 5));  // master 0 was not released: still good
  l.poll_granted(1, 5, t(0ms));
  BOOST_TEST(!l.has_quorum());
  l.note_poll(6, t(50ms));
  BOOST_TEST(l.handed(1, 6));
  BOOST_TEST(l.has_quorum());
  BOOST_TEST((*l.window_end(500ms, 1000ms, 0.0) == t(500ms - 2ms)));  // earliest counted: poll 5 on master 0
}

BOOST_AUTO_TEST_CASE(unknown_polls_are_not_counted_and_forget_drops_every_count) {
  handover_ledger l(3, 2);
  BOOST_TEST(!l.handed(0, 42));  // a poll we never sent (or forgot long ago)
  for (std::uint64_t id = 1; id <= 40; ++id) l.note_poll(id, t(std::chrono::milliseconds(id)));
  BOOST_TEST(!l.handed(0, 3));  // only the 32 most recent polls are remembered
  BOOST_TEST(l.handed(0, 40));
  BOOST_TEST(l.handed(1, 39));
  BOOST_TEST(l.has_quorum());
  l.forget({}, 41);
  BOOST_TEST(l.count() == 0u);
  BOOST_TEST(l.handed(0, 40));  // nothing was released: the same grants count again
}
