// SPDX-License-Identifier: Apache-2.0
#define BOOST_TEST_MODULE integration_reentrant
#include <boost/test/unit_test.hpp>

#include "masters.hpp"
#include "scripts/keys.hpp"
#include "scripts/script.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>

#include <future>
#include <thread>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::lock_kind;
using redlock::testing::masters;
namespace keys = redlock::detail::keys;
using redlock::testing::code_of;

namespace {

redlock::acquire_options reentrant(std::chrono::milliseconds ttl = 5000ms) {
  redlock::acquire_options o;
  o.ttl = ttl;
  o.kind = lock_kind::reentrant;
  return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(reentrant_depth_and_release_order) {
  masters m(3);
  redlock::client c(m.options());
  auto a = c.acquire("re", reentrant());
  auto b = c.acquire("re", reentrant());
  auto d = c.acquire("re", reentrant());
  BOOST_TEST(a.hold_count() == 3);
  BOOST_TEST(a.token() == d.token());
  auto field = a.token();
  BOOST_TEST(field.find(':') != std::string::npos);  // <client id>:<owner id>, as in Redisson's layout
  // Each level completes at quorum; the last master may still be applying.
  auto counts_are = [&](const std::string& n) {
    auto end = std::chrono::steady_clock::now() + 2s;
    bool all = false;
    while (!all && std::chrono::steady_clock::now() < end) {
      all = true;
      for (std::size_t i = 0; i < 3; ++i) all &= m[i].command({"HGET", "re", field}) == n;
      if (!all) std::this_thread::sleep_for(5ms);
    }
    return all;
  };
  BOOST_TEST(counts_are("3"));
  c.release(d);
  c.release(b);
  BOOST_TEST(a.hold_count() == 1);
  BOOST_TEST(counts_are("1"));
  c.release(a);
  BOOST_TEST(a.hold_count() == 0);
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("re") == 0u; }));
  BOOST_TEST(code_of([&] { c.release(a); }) == errc::not_held);  // one release too many
}

BOOST_AUTO_TEST_CASE(reentrant_owner_isolation) {
  masters m(3);
  redlock::client c(m.options()), other_client(m.options());
  auto mine = c.acquire("iso", reentrant());
  // Another thread of the same client is another owner.
  std::optional<redlock::lock> from_thread;
  std::thread([&] { from_thread = c.try_acquire("iso", reentrant()); }).join();
  BOOST_TEST(!from_thread.has_value());
  // Another client, same thread id even: another client id.
  BOOST_TEST(!other_client.try_acquire("iso", reentrant()).has_value());
  // A non-owner's release changes nothing and says so.
  auto forged = other_client.async().adopt("iso", "someone:else", 5000ms);
  BOOST_TEST(code_of([&] { other_client.release(forged); }) == errc::not_held);
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(m[i].command({"HGET", "iso", mine.token()}) == "1");
  c.release(mine);
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("iso") == 0u; }));
}

BOOST_AUTO_TEST_CASE(reentrant_failed_reentry_undoes_only_its_own_increment) {
  masters m(5);
  redlock::client c(m.options());
  auto first = c.acquire("undo", reentrant());
  auto field = first.token();
  // The acquisition returned at a quorum: its script may not have run on
  // every master yet, and would take the hold there after the DEL below.
  BOOST_REQUIRE(redlock::testing::eventually([&] { return m.holding("undo") == 5u; }));
  // The hold is lost on three masters (e.g. they restarted without data).
  for (std::size_t i : {2u, 3u, 4u}) m[i].command({"DEL", "undo"});
  BOOST_TEST(code_of([&] { c.acquire("undo", reentrant()); }) == errc::not_held);
  BOOST_TEST(first.hold_count() == 1);
  // The two masters where the re-entry applied are back to one level.
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while ((m[0].command({"HGET", "undo", field}) != "1" || m[1].command({"HGET", "undo", field}) != "1") &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  BOOST_TEST(m[0].command({"HGET", "undo", field}) == "1");
  BOOST_TEST(m[1].command({"HGET", "undo", field}) == "1");
  for (std::size_t i : {2u, 3u, 4u}) BOOST_TEST(m[i].command({"EXISTS", "undo"}) == "0");  // never re-created
  // The hold is gone from a quorum: the release says so, and still cleans up.
  BOOST_TEST(code_of([&] { c.release(first); }) == errc::not_held);
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("undo") == 0u; }));
}

BOOST_AUTO_TEST_CASE(reentrant_final_release_deletes_diverged_counts) {
  masters m(3);
  redlock::client c(m.options());
  auto l = c.acquire("diverged", reentrant());
  m[0].command({"HINCRBY", "diverged", l.token(), "5"});  // e.g. an undo that never arrived
  c.release(l);
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("diverged") == 0u; }));
}

BOOST_AUTO_TEST_CASE(reentrant_fenced_keeps_its_token_on_reentry) {
  masters m(3);
  redlock::client c(m.options());
  auto o = reentrant();
  o.fenced = true;
  auto a = c.acquire("fence-re", o);
  auto b = c.acquire("fence-re", o);
  BOOST_TEST(a.fence().has_value());
  BOOST_TEST(*b.fence() == *a.fence());
  c.release(b);
  c.release(a);
  auto again = c.acquire("fence-re", o);
  BOOST_TEST(*again.fence() > *a.fence());
  c.release(again);
}

BOOST_AUTO_TEST_CASE(reentrant_async_needs_an_explicit_owner) {
  masters m(1);
  boost::asio::io_context io;
  redlock::async_client c(io.get_executor(), m.options());
  boost::system::error_code result;
  c.async_acquire("async-re", reentrant(), [&](boost::system::error_code ec, redlock::lock) { result = ec; });
  io.run_for(200ms);
  BOOST_TEST(result == errc::bad_option);
  auto o = reentrant();
  o.owner = "request-42";
  c.async_acquire("async-re", o, [&](boost::system::error_code ec, redlock::lock l) {
    result = ec;
    BOOST_TEST(l.token().ends_with(":request-42"));
  });
  io.restart();
  io.run_for(300ms);
  BOOST_TEST(!result);
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("async-re") == 1u; }));
}

BOOST_AUTO_TEST_CASE(reentrant_key_of_another_type_is_left_alone) {
  masters m(3);
  m.on_all({"SET", "plain", "someone's value"});
  redlock::client c(m.options());
  BOOST_TEST(code_of([&] { c.acquire("plain", reentrant()); }) == errc::wrong_type);
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(m[i].command({"GET", "plain"}) == "someone's value");
}

BOOST_AUTO_TEST_CASE(reentrant_requests_older_than_the_hold_leave_it_alone) {
  // The scripts' side of the hold id (docs/algorithm.md, section 7), run by
  // hand on one master: requests of the same owner that arrive late (ids
  // older than the hold) neither take nor delete it; the hold's own id does.
  masters m(1);
  auto acquire = [&](const std::string& mode, const std::string& id) {
    return m[0].command({"EVAL", std::string(redlock::detail::scripts::reentrant_acquire.body), "2", "late",
                         keys::fence("late"), "c:o", "60000", "0", mode, id});
  };
  auto release = [&](const std::string& last, const std::string& id) {
    return m[0].command({"EVAL", std::string(redlock::detail::scripts::reentrant_release.body), "4", "late",
                         keys::queue("late"), keys::queue_deadlines("late"), keys::queue_terms("late"), "c:o", keys::released_channel("late"), last, "1",
                         "rel", id});
  };
  BOOST_TEST(acquire("first", "5") == "OK");
  BOOST_TEST(acquire("first", "3") == "(nil)");  // a late first request
  BOOST_TEST(m[0].command({"HGET", "late", ":hold-id"}) == "5");
  BOOST_TEST(release("1", "4") == "0");  // the clean-up of request 4
  BOOST_TEST(m[0].command({"HGET", "late", "c:o"}) == "1");
  BOOST_TEST(acquire("reenter", "5") == "OK");
  BOOST_TEST(release("0", "4") == "0");  // a late release of one level
  BOOST_TEST(m[0].command({"HGET", "late", "c:o"}) == "2");
  BOOST_TEST(release("1", "5") == "1");
  BOOST_TEST(m[0].command({"EXISTS", "late"}) == "0");
  // A leftover of an older request of ours is adopted by a newer one.
  BOOST_TEST(acquire("first", "6") == "OK");
  BOOST_TEST(acquire("first", "7") == "OK");
  BOOST_TEST(m[0].command({"HGET", "late", ":hold-id"}) == "7");
  BOOST_TEST(release("1", "6") == "0");
  BOOST_TEST(release("1", "7") == "1");
}

// status reports each master's view typed: owners with their counts (an owner
// name may hold any character, so nothing is split on ',' or '='), the fair
// queue in order, and someone else's data as foreign, never as a lock.
BOOST_AUTO_TEST_CASE(status_reports_owners_waiters_and_foreign_data_typed) {
  masters m(3);
  redlock::client c(m.options());
  redlock::acquire_options o = reentrant();
  o.owner = "job,a=b";  // separators of the old joined form
  auto held = c.acquire("st", o);
  c.acquire("st", o);
  m[0].command({"ZADD", keys::queue("st"), "1", "c9:w1"});
  m[0].command({"ZADD", keys::queue("st"), "2", "c9:w,2"});
  m[1].command({"DEL", "st"});
  m[1].command({"HSET", "st", "colour", "blue"});  // a hash, but not a lock's
  m[2].command({"DEL", "st"});
  m[2].command({"RPUSH", "st", "x"});

  auto nodes = c.status("st");
  BOOST_REQUIRE(nodes.size() == 3u);
  BOOST_TEST(!nodes[0].error);
  BOOST_TEST((nodes[0].content == redlock::key_content::reentrant));
  BOOST_REQUIRE(nodes[0].owners.size() == 1u);  // ':hold-id' is bookkeeping, not an owner
  BOOST_TEST(nodes[0].owners[0].owner == held.token());
  BOOST_TEST(nodes[0].owners[0].count == 2u);
  BOOST_TEST(nodes[0].pttl.count() > 0);
  BOOST_TEST((nodes[0].waiters == std::vector<std::string>{"c9:w1", "c9:w,2"}));
  BOOST_TEST((nodes[1].content == redlock::key_content::foreign));
  BOOST_TEST(nodes[1].foreign_type == "hash");
  BOOST_TEST(nodes[1].owners.empty());
  BOOST_TEST((nodes[2].content == redlock::key_content::foreign));
  BOOST_TEST(nodes[2].foreign_type == "list");
  BOOST_TEST(nodes[2].pttl.count() == -1);
  BOOST_TEST(m[1].command({"HGET", "st", "colour"}) == "blue");  // read-only: nothing touched

  c.status("never-taken");
  auto none = c.status("never-taken");
  for (auto& n : none) {
    BOOST_TEST((n.content == redlock::key_content::free));
    BOOST_TEST(n.pttl.count() == -2);
    BOOST_TEST(!n.fence);
  }
}

namespace {
// Two acquisitions of `name` by one owner of one client, started together
// (an async owner, a task, starting the same critical section twice).
std::pair<redlock::lock, redlock::lock> twice_at_once(redlock::client& c, const std::string& name,
                                                      const redlock::acquire_options& o) {
  auto first = c.async().async_acquire(name, o, boost::asio::use_future);
  auto second = c.async().async_acquire(name, o, boost::asio::use_future);
  auto l1 = first.get();
  auto l2 = second.get();
  return {l1, l2};
}
}  // namespace

// One owner, one hold per name. The second of two first acquisitions by one
// owner at once waits for the first and re-enters its hold: one hold of two
// levels, which one release does not free. Both were granted as first
// acquisitions (the masters cannot tell them apart: one owner field), each
// with a handle of one level, and releasing one deleted the hold the other
// still counted on. Also with a master paused (rounds decided by the other
// two), and for the fair lock.
BOOST_AUTO_TEST_CASE(two_first_acquisitions_by_one_owner_at_once_are_one_hold) {
  for (auto kind : {lock_kind::reentrant, lock_kind::fair})
    for (bool paused : {false, true}) {
      BOOST_TEST_CONTEXT((kind == lock_kind::fair ? "fair" : "reentrant") << (paused ? ", a master paused" : "")) {
        masters m(3);
        redlock::client c(m.options());
        if (paused) m[2].pause();
        auto o = reentrant(30000ms);
        o.kind = kind;
        o.owner = "task";
        o.wait = 5000ms;
        auto [l1, l2] = twice_at_once(c, "twice", o);
        BOOST_TEST(l1.hold_count() == 2);
        BOOST_TEST(l2.hold_count() == 2);
        c.release(l1);
        BOOST_TEST(m[0].command({"EXISTS", "twice"}) == "1", "one release freed the other acquisition's hold");
        BOOST_TEST(m[1].command({"EXISTS", "twice"}) == "1");
        redlock::client other(m.options());
        auto intruder = reentrant();
        intruder.owner = "intruder";
        BOOST_TEST(!other.try_acquire("twice", intruder).has_value(), "another owner got in while one level was held");
        c.release(l2);
        BOOST_TEST(redlock::testing::eventually([&] {
          return m[0].command({"EXISTS", "twice"}) == "0" && m[1].command({"EXISTS", "twice"}) == "0";
        }));
        if (paused) m[2].resume();
      }
    }
}

// The second acquisition waits behind the first, which waits for another
// owner's hold: cancelled, it ends at once with operation_aborted, sending
// nothing, and the first goes on.
BOOST_AUTO_TEST_CASE(an_acquisition_waiting_behind_its_owners_first_can_be_cancelled) {
  masters m(3);
  redlock::client c(m.options()), holder(m.options());
  auto other_owner = reentrant(30000ms);
  other_owner.owner = "holder";
  auto held = holder.acquire("behind", other_owner);
  auto o = reentrant(30000ms);
  o.owner = "task";
  o.wait = 10000ms;
  o.retry_delay = 100ms;
  auto first = c.async().async_acquire("behind", o, boost::asio::use_future);
  boost::asio::cancellation_signal cancel;
  std::promise<boost::system::error_code> second_done;
  boost::asio::post(c.async().get_executor(), [&] {
    c.async().async_acquire("behind", o,
                            boost::asio::bind_cancellation_slot(cancel.slot(), [&](boost::system::error_code ec, redlock::lock) {
                              second_done.set_value(ec);
                            }));
    cancel.emit(boost::asio::cancellation_type::terminal);
  });
  auto second = second_done.get_future();
  BOOST_REQUIRE(second.wait_for(2s) == std::future_status::ready);
  BOOST_TEST(second.get() == boost::asio::error::operation_aborted);
  BOOST_TEST((first.wait_for(0s) == std::future_status::timeout), "the first acquisition still waits");
  holder.release(held);
  auto l = first.get();
  BOOST_TEST(l.hold_count() == 1);
  c.release(l);
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("behind") == 0u; }));
}

// A key of the user's own where a fair lock's line goes ({R}:queue, a string
// say): a reentrant lock on R has no line, and its last release frees R and
// leaves that key alone. Before, the release took the key for a line and
// failed on it before deleting the hold: wrong_type, and the lock held until
// its TTL. A fair acquisition needs its line, and is refused with
// wrong_type at once, holding nothing.
BOOST_AUTO_TEST_CASE(a_key_of_another_type_at_the_fair_line_is_left_alone) {
  masters m(3);
  redlock::client c(m.options());
  const std::string name = "line-theirs";
  for (auto value : {std::vector<std::string>{"SET", keys::queue(name), "theirs"},
                     std::vector<std::string>{"HSET", keys::queue(name), "theirs", "1"}}) {
    BOOST_TEST_CONTEXT(value[0]) {
      m.on_all(value);
      auto held = c.acquire(name, reentrant());
      auto again = c.acquire(name, reentrant());
      BOOST_CHECK_NO_THROW(c.release(again));
      BOOST_CHECK_NO_THROW(c.release(held));
      BOOST_TEST(m.holding(name) == 0u, "the hold left behind");
      auto fair = reentrant();
      fair.kind = lock_kind::fair;
      BOOST_TEST(code_of([&] { c.acquire(name, fair); }) == errc::wrong_type);
      BOOST_TEST(m.holding(name) == 0u, "a refused fair acquisition left a hold");
      for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(m[i].command({"TYPE", keys::queue(name)}) == (value[0] == "SET" ? "string" : "hash"));
      m.on_all({"DEL", keys::queue(name)});
    }
  }
}
