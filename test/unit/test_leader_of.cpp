// SPDX-License-Identifier: Apache-2.0
// Who leads, from each master's view (redlock::leader_of): pure logic.
#define BOOST_TEST_MODULE unit_leader_of
#include <boost/test/unit_test.hpp>

#include <redlock/async_client.hpp>
#include <redlock/election.hpp>
#include <redlock/error.hpp>

using namespace std::chrono_literals;
using redlock::key_content;
using redlock::node_lock_view;

namespace {

node_lock_view holding(std::string token, std::chrono::milliseconds pttl, std::string description) {
  node_lock_view s;
  s.content = key_content::mutex;
  s.token = std::move(token);
  s.pttl = pttl;
  s.description = std::move(description);
  return s;
}

node_lock_view unreachable() {
  node_lock_view s;
  s.error = redlock::make_error_code(redlock::errc::timeout);
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_token_on_a_quorum_with_its_epoch_leads) {
  std::vector<node_lock_view> views{holding("t1", 9000ms, "epoch 17 host-a"), holding("t1", 7000ms, "epoch 17 host-a"),
                                 holding("t1", 8000ms, "epoch 17 host-a"), node_lock_view{}, unreachable()};
  auto l = redlock::leader_of(views, 3);
  BOOST_REQUIRE(l.has_value());
  BOOST_TEST(l->token == "t1");
  BOOST_TEST(l->epoch == 17u);
  BOOST_TEST(l->description == "host-a");
  BOOST_TEST(l->remaining.count() == 7000, "past the third-longest PTTL fewer than 3 hold it");
}

BOOST_AUTO_TEST_CASE(no_leader_without_a_quorum_or_a_proclamation) {
  // Two of five: not a quorum.
  std::vector<node_lock_view> two{holding("t1", 9000ms, "epoch 3"), holding("t1", 9000ms, "epoch 3"),
                               holding("t2", 9000ms, "epoch 4"), unreachable(), node_lock_view{}};
  BOOST_TEST(!redlock::leader_of(two, 3).has_value());
  // A quorum, not proclaimed yet (or someone else's plain lock on the name).
  std::vector<node_lock_view> quiet{holding("t1", 9000ms, ""), holding("t1", 9000ms, "a description"),
                                 holding("t1", 9000ms, "epoch x")};
  BOOST_TEST(!redlock::leader_of(quiet, 2).has_value());
  // Proclaimed on one master of the quorum is enough to know the epoch.
  std::vector<node_lock_view> one{holding("t1", 9000ms, ""), holding("t1", 5000ms, "epoch 8"), node_lock_view{}};
  auto l = redlock::leader_of(one, 2);
  BOOST_REQUIRE(l.has_value());
  BOOST_TEST(l->epoch == 8u);
  BOOST_TEST(l->description == "");
  BOOST_TEST(l->remaining.count() == 5000);
}
