// SPDX-License-Identifier: Apache-2.0
// Names held together (acquire_options::other_names, docs/algorithm.md section
// 13): all or none on each master, one token, one validity, one release;
// overlapping sets never deadlock; a fencing token per name.
#define BOOST_TEST_MODULE integration_multi
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "masters.hpp"
#include "scripts/keys.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/use_future.hpp>

#include <atomic>
#include <future>
#include <map>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::testing::code_of;
using redlock::testing::eventually;
using redlock::testing::masters;
namespace bdata = boost::unit_test::data;
namespace keys = redlock::detail::keys;

namespace {

redlock::acquire_options together(std::vector<std::string> more, std::chrono::milliseconds ttl = 5000ms) {
  redlock::acquire_options o;
  o.ttl = ttl;
  o.other_names = std::move(more);
  return o;
}

}  // namespace

BOOST_DATA_TEST_CASE(all_names_or_none, bdata::make({1, 3, 5}), nodes) {
  masters m(static_cast<std::size_t>(nodes));
  redlock::client c(m.options());
  auto l = c.acquire("c", together({"a", "b"}));
  BOOST_TEST(l.names() == (std::vector<std::string>{"a", "b", "c"}), "sorted");
  BOOST_TEST(l.name() == "c");
  BOOST_TEST(l.remaining_validity() > 4000ms);
  BOOST_TEST(eventually([&] {
    for (auto n : {"a", "b", "c"})
      for (std::size_t i = 0; i < m.size(); ++i)
        if (m[i].command({"GET", n}) != l.token()) return false;
    return true;
  }));
  // Any one of them held: a set that overlaps it takes nothing.
  BOOST_TEST(!c.try_acquire("d", together({"b", "e"})).has_value());
  BOOST_TEST(eventually([&] { return m.holding("d") + m.holding("e") == 0u; }), "a partial hold left behind");
  c.release(l);
  BOOST_TEST(eventually([&] { return m.holding("a") + m.holding("b") + m.holding("c") == 0u; }));
  auto after = c.acquire("d", together({"b", "e"}));
  c.release(after);
}

BOOST_AUTO_TEST_CASE(a_master_that_holds_one_name_refuses_the_whole_set_there) {
  masters m(3);
  redlock::client c(m.options());
  // "b" is someone else's on masters 0 and 1: no quorum can take {a, b}.
  m[0].command({"SET", "b", "other", "PX", "60000"});
  m[1].command({"SET", "b", "other", "PX", "60000"});
  BOOST_TEST(!c.try_acquire("a", together({"b"})).has_value());
  BOOST_TEST(eventually([&] { return m.holding("a") == 0u; }), "'a' taken without 'b'");
  BOOST_TEST(m[2].command({"EXISTS", "b"}) == "0", "master 2 took 'b' and kept it");
  // Held on master 0 only: masters 1 and 2 make the quorum, master 0 took nothing.
  m[1].command({"DEL", "b"});
  auto l = c.acquire("a", together({"b"}));
  BOOST_TEST(m[0].command({"GET", "a"}) == "(nil)");
  BOOST_TEST(m[0].command({"GET", "b"}) == "other");
  c.release(l);
  BOOST_TEST(m[0].command({"GET", "b"}) == "other", "the release touched someone else's key");
}

BOOST_AUTO_TEST_CASE(overlapping_sets_never_deadlock_and_exclude_each_other) {
  masters m(3);
  redlock::client c(m.options(200ms));
  const std::vector<std::vector<std::string>> sets{{"x", "y"}, {"y", "z"}, {"z", "x"}, {"x", "y", "z"}};
  std::map<std::string, std::atomic<int>> inside;
  for (auto n : {"x", "y", "z"}) inside[n] = 0;
  std::atomic<int> overlaps{0}, done{0};
  std::vector<std::thread> workers;
  for (std::size_t w = 0; w < 8; ++w)
    workers.emplace_back([&, w] {
      auto names = sets[w % sets.size()];
      auto opts = together({names.begin() + 1, names.end()}, 2000ms);
      opts.wait = 20s;
      opts.retry_delay = 5ms;
      opts.retry_jitter = 5ms;
      for (int i = 0; i < 10; ++i) {
        auto l = c.acquire(names[0], opts);
        for (auto& n : names)
          if (inside[n].fetch_add(1) != 0) ++overlaps;
        std::this_thread::sleep_for(1ms);
        for (auto& n : names) inside[n].fetch_sub(1);
        c.release(l);
      }
      ++done;
    });
  for (auto& t : workers) t.join();
  BOOST_TEST(done.load() == 8);
  BOOST_TEST(overlaps.load() == 0);
}

BOOST_AUTO_TEST_CASE(a_fencing_token_per_name_raised_in_one_round) {
  masters m(3);
  redlock::client c(m.options());
  auto opts = together({"f2"});
  opts.fenced = true;
  // f2 alone moves ahead: the two names' tokens are their own.
  redlock::acquire_options single{.fenced = true};
  for (int i = 0; i < 3; ++i) c.release(c.acquire("f2", single));
  std::vector<std::uint64_t> last{0, 0};
  for (int round = 0; round < 4; ++round) {
    auto l = c.acquire("f1", opts);
    auto fences = l.fences();
    BOOST_REQUIRE(fences.size() == 2u);
    BOOST_TEST(fences[0] > last[0]);
    BOOST_TEST(fences[1] > last[1]);
    BOOST_TEST(fences[1] >= 4u, "f2's own counter");
    BOOST_TEST(l.fence().value_or(0) == fences[0], "fence() is the name acquired (f1)");
    for (std::size_t i = 0; i < m.size(); ++i) {
      BOOST_TEST(std::stoull(m[i].command({"GET", keys::fence("f1")})) >= fences[0]);
      BOOST_TEST(std::stoull(m[i].command({"GET", keys::fence("f2")})) >= fences[1]);
    }
    last = fences;
    c.release(l);
  }
}

BOOST_AUTO_TEST_CASE(renewal_and_extend_keep_every_name) {
  masters m(3);
  redlock::client c(m.options());
  auto opts = together({"r2", "r3"}, 600ms);
  opts.renew = true;
  opts.description = "nightly batch";
  auto l = c.acquire("r1", opts);
  std::this_thread::sleep_for(1500ms);
  BOOST_TEST(!l.lost());
  for (auto n : {"r1", "r2", "r3"}) {
    BOOST_TEST(m.holding(n) == 3u, n);
    BOOST_TEST(m.holding(keys::holder(n)) == 3u, n);
  }
  // One name taken over on a quorum: the lease is lost (extend needs them all).
  m.on_all({"SET", "r2", "thief", "PX", "60000"});
  BOOST_TEST(eventually([&] { return l.lost(); }, 3000ms));
  BOOST_TEST((l.why_lost() == redlock::lost_reason::taken_over));
  BOOST_TEST(code_of([&] { c.release(l); }) == errc::not_held);
  BOOST_TEST(m[0].command({"GET", "r2"}) == "thief");
  BOOST_TEST(eventually([&] { return m.holding("r1") + m.holding("r3") == 0u; }));
}

BOOST_AUTO_TEST_CASE(bad_sets_are_refused_naming_the_problem) {
  masters m(1);
  redlock::client c(m.options());
  auto message = [&](const redlock::acquire_options& o) {
    try {
      c.acquire("n", o);
    } catch (const redlock::error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto twice = together({"m", "n"});
  BOOST_TEST(code_of([&] { c.acquire("n", twice); }) == errc::bad_option);
  BOOST_TEST(message(twice).find("'n' is given twice") != std::string::npos, message(twice));
  BOOST_TEST(code_of([&] { c.acquire("n", together({""})); }) == errc::empty_name);
  auto fair = together({"m"});
  fair.kind = redlock::lock_kind::fair;
  BOOST_TEST(code_of([&] { c.acquire("n", fair); }) == errc::bad_option);
  std::vector<std::string> many;
  for (std::size_t i = 0; i < redlock::max_names; ++i) many.push_back("k" + std::to_string(i));
  BOOST_TEST(code_of([&] { c.acquire("n", together(many)); }) == errc::bad_option);
  BOOST_TEST(m[0].command({"DBSIZE"}) == "0");
  // Someone else's data under one of the names: reported, nothing taken.
  m[0].command({"HSET", "m", "field", "1"});
  BOOST_TEST(code_of([&] { c.acquire("n", together({"m"})); }) == errc::wrong_type);
  BOOST_TEST(m[0].command({"EXISTS", "n"}) == "0");
}

BOOST_AUTO_TEST_CASE(a_paused_then_killed_master_does_not_stop_a_quorum) {
  masters m(5);
  redlock::client c(m.options(50ms));
  m[3].pause();
  auto l = c.acquire("p1", together({"p2"}));
  BOOST_TEST(!c.try_acquire("p2", together({"p3"})).has_value());
  m[3].resume();
  m[4].kill9();
  c.release(l);
  auto again = c.acquire("p2", together({"p3"}));
  c.release(again);
}

// A single-name waiter listens on that name's wake list alone: the release
// of a set that holds the name must wake it there, as a mutex release does.
// release_all.lua published nothing, and the waiter slept out its 10 s
// retry delay with the name free.
BOOST_AUTO_TEST_CASE(releasing_a_set_wakes_a_waiter_on_one_of_its_names) {
  masters m(3);
  redlock::client holder(m.options()), waiter(m.options());
  auto set = holder.acquire("a", together({"b"}, 30000ms));
  redlock::acquire_options o{.ttl = 30000ms, .wait = 30000ms, .retry_delay = 10000ms, .retry_jitter = 0ms};
  auto got = waiter.async().async_acquire("a", o, boost::asio::use_future);
  BOOST_REQUIRE(eventually([&] {
    return redlock::testing::wake_list_is(m, "a", 1) && redlock::testing::listening_clients(m, "a") == 1u;
  }));
  auto released_at = std::chrono::steady_clock::now();
  holder.release(set);
  BOOST_REQUIRE_MESSAGE(got.wait_for(5s) == std::future_status::ready, "the waiter on 'a' was not woken");
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - released_at);
  BOOST_TEST(waited < 1000ms, "got 'a' " << waited.count() << " ms after the set's release");
  waiter.release(got.get());
  BOOST_TEST(eventually([&] { return m.holding("a") == 0u && m.holding("b") == 0u; }));
  BOOST_TEST(eventually([&] { return redlock::testing::wake_list_is(m, "a", 0); }));
}

// A set's token names the whole set: adopted with every name, its release
// frees them all (and extend lengthens them all); adopted with one name it
// is refused, since a release would free part of the set while its holder
// runs on believing it holds it.
BOOST_AUTO_TEST_CASE(a_set_is_adopted_whole_or_not_at_all) {
  masters m(3);
  redlock::client holder(m.options()), other(m.options());
  auto set = holder.acquire("b", together({"a", "c"}, 2000ms));
  BOOST_TEST(set.token().rfind("s:", 0) == 0u, "a set's token says it is one: " << set.token());
  BOOST_TEST(code_of([&] { other.adopt("a", set.token(), 5000ms); }) == errc::bad_option);
  BOOST_TEST(code_of([&] { other.adopt("a", set.token(), 5000ms, {.other_names = {"b", "b"}}); }) == errc::bad_option);
  auto adopted = other.adopt("c", set.token(), 30000ms, {.other_names = {"a", "b"}});
  BOOST_TEST((adopted.names() == std::vector<std::string>{"a", "b", "c"}));
  other.extend(adopted, 30000ms);
  for (const char* name : {"a", "b", "c"})  // (the third master may answer after the quorum)
    for (std::size_t i = 0; i < m.size(); ++i)
      BOOST_TEST(eventually([&] { return std::stoll(m[i].command({"PTTL", name})) > 20000; }));
  other.release(adopted);
  for (const char* name : {"a", "b", "c"}) BOOST_TEST(eventually([&] { return m.holding(name) == 0u; }));
  BOOST_TEST(code_of([&] { holder.release(set); }) == errc::not_held);
}
