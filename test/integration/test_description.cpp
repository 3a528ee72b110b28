// SPDX-License-Identifier: Apache-2.0
// Holder descriptions (acquire_options::description): written next to the
// lock, shown by status while the one it names holds it, lengthened by
// renewals, gone with the release, and never shown for another holder.
#define BOOST_TEST_MODULE integration_description
#include <boost/test/unit_test.hpp>

#include "masters.hpp"
#include "scripts/keys.hpp"

#include <redlock/redlock.hpp>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::lock_kind;
using redlock::testing::code_of;
using redlock::testing::eventually;
using redlock::testing::masters;
namespace keys = redlock::detail::keys;

namespace {

redlock::acquire_options described(lock_kind kind, std::string words, std::chrono::milliseconds ttl = 5000ms) {
  redlock::acquire_options o;
  o.kind = kind;
  o.ttl = ttl;
  o.description = std::move(words);
  return o;
}

/// Masters whose status shows `words` for the lock's holder.
std::size_t showing(redlock::client& c, const std::string& name, const std::string& words) {
  std::size_t n = 0;
  for (auto& s : c.status(name)) n += !s.error && s.description == words;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_kind_shows_its_description_while_held_and_leaves_nothing_behind) {
  masters m(3);
  redlock::client c(m.options());
  for (auto kind : {lock_kind::mutex, lock_kind::reentrant, lock_kind::fair}) {
    BOOST_TEST_CONTEXT("kind " << static_cast<int>(kind)) {
      const std::string name = "described-" + std::to_string(static_cast<int>(kind));
      const std::string words = "build-7:4242 nightly \"report\" é";
      auto held = c.acquire(name, described(kind, words));
      // The acquisition returns at a quorum; the last master's write may
      // still be on its way.
      BOOST_TEST(eventually([&] { return showing(c, name, words) == 3u; }));
      BOOST_TEST(m.holding(keys::holder(name)) == 3u);
      auto pttl = std::stoll(m[0].command({"PTTL", keys::holder(name)}));
      BOOST_TEST((pttl > 0 && pttl <= 5000), "the description lives as long as the hold: pttl " << pttl);
      c.release(held);
      BOOST_TEST(eventually([&] { return m.holding(keys::holder(name)) == 0u; }), "a description left behind");
      BOOST_TEST(showing(c, name, "") == 3u);
    }
  }
}

BOOST_AUTO_TEST_CASE(without_a_description_a_mutex_writes_only_its_key) {
  masters m(3);
  redlock::client c(m.options());
  auto held = c.acquire("plain", redlock::acquire_options{});
  BOOST_TEST(eventually([&] { return m.holding("plain") == 3u; }));
  BOOST_TEST(m.holding(keys::holder("plain")) == 0u);
  BOOST_TEST(redlock::testing::script_calls(m[0]) == 0);  // still the plain SET NX PX
  BOOST_TEST(showing(c, "plain", "") == 3u);
  c.release(held);
}

BOOST_AUTO_TEST_CASE(renewal_keeps_the_description_as_long_as_the_lock) {
  masters m(3);
  redlock::client c(m.options());
  for (auto kind : {lock_kind::mutex, lock_kind::reentrant}) {
    BOOST_TEST_CONTEXT("kind " << static_cast<int>(kind)) {
      const std::string name = "renewed-" + std::to_string(static_cast<int>(kind));
      auto o = described(kind, "renewing job", 600ms);
      o.renew = true;
      auto held = c.acquire(name, o);
      // Three ttls later the description is still there, renewed with the key.
      std::this_thread::sleep_for(1800ms);
      BOOST_TEST(!held.lost());
      BOOST_TEST(showing(c, name, "renewing job") >= 2u);
      c.release(held);
      BOOST_TEST(eventually([&] { return m.holding(keys::holder(name)) == 0u; }));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_dead_holders_description_is_not_shown_for_the_next_holder) {
  masters m(3);
  redlock::client first(m.options()), second(m.options());
  for (auto kind : {lock_kind::mutex, lock_kind::reentrant}) {
    BOOST_TEST_CONTEXT("kind " << static_cast<int>(kind)) {
      const std::string name = "succession-" + std::to_string(static_cast<int>(kind));
      auto held = first.acquire(name, described(kind, "first holder", 20000ms));
      BOOST_TEST(eventually([&] { return m.holding(keys::holder(name)) == 3u; }));
      // The first holder's keys vanish (an expiry, say) but its description
      // is still there when the second takes the lock without one.
      m.on_all({"DEL", name});
      redlock::acquire_options plain;
      plain.kind = kind;
      auto next = second.acquire(name, plain);
      BOOST_TEST(eventually([&] { return m.holding(name) == 3u; }));
      BOOST_TEST(m.holding(keys::holder(name)) == 3u);  // the leftover
      BOOST_TEST(showing(second, name, "") == 3u);
      // The first holder's late release does not touch the second's hold.
      BOOST_TEST(code_of([&] { first.release(held); }) == errc::not_held);
      BOOST_TEST(m.holding(name) == 3u);
      second.release(next);
      m.on_all({"DEL", keys::holder(name)});
    }
  }
}

BOOST_AUTO_TEST_CASE(a_bad_description_is_refused_by_name_and_takes_nothing) {
  masters m(3);
  redlock::client c(m.options());
  for (std::string bad : {std::string(redlock::max_description_bytes + 1, 'x'), std::string("two\nlines"),
                          std::string("bell\a")}) {
    try {
      c.acquire("bad-words", described(lock_kind::mutex, bad));
      BOOST_FAIL("a bad description was accepted");
    } catch (const redlock::error& e) {
      BOOST_TEST((e.code() == errc::bad_option));
      BOOST_TEST(std::string(e.what()).find("description") != std::string::npos, e.what());
    }
  }
  BOOST_TEST(m.holding("bad-words") == 0u);
  BOOST_TEST(m.holding(keys::holder("bad-words")) == 0u);
  // The longest accepted one is accepted.
  auto held = c.acquire("bad-words", described(lock_kind::mutex, std::string(redlock::max_description_bytes, 'y')));
  BOOST_TEST(eventually([&] { return showing(c, "bad-words", std::string(redlock::max_description_bytes, 'y')) == 3u; }));
  c.release(held);
}

// Keys of the user's own where a lock's companions go ({R}:holder,
// {R}:queue, {R}:fence): status still shows the lock, and leaves them as
// they are. Before, the status script failed on them, and the CLI called
// the master "unreachable: the lock key holds data of another type".
BOOST_AUTO_TEST_CASE(status_shows_a_lock_beside_companion_keys_of_another_type) {
  masters m(3);
  redlock::client c(m.options());
  const std::string name = "companions";
  m.on_all({"HSET", keys::holder(name), "theirs", "1"});
  m.on_all({"SET", keys::queue(name), "theirs"});
  m.on_all({"RPUSH", keys::fence(name), "theirs"});
  auto held = c.acquire(name, {.ttl = 30s});
  BOOST_TEST(eventually([&] {
    std::size_t n = 0;
    for (auto& s : c.status(name)) n += !s.error && s.token == held.token() && s.description.empty();
    return n == 3u;
  }));
  for (auto& s : c.status(name)) BOOST_TEST(!s.error, s.node << ": " << s.error.message());
  c.release(held);
  BOOST_TEST(eventually([&] { return m.holding(name) == 0u; }));
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST(m[i].command({"HGET", keys::holder(name), "theirs"}) == "1");
    BOOST_TEST(m[i].command({"GET", keys::queue(name)}) == "theirs");
    BOOST_TEST(m[i].command({"TYPE", keys::fence(name)}) == "list");
  }
}

// A lock named as another lock's companion ('{R}:holder') shared that key
// with R's scripts: R's described acquisition wrote its description over
// the lock's token, and R's release deleted it, so a second client took the
// '{R}:holder' lock while its first holder still held it. Such a name is
// refused before anything is sent, for every kind and way of taking a lock;
// under a key prefix the key is no companion, and the name is taken.
BOOST_AUTO_TEST_CASE(a_name_that_is_another_locks_companion_is_refused_before_anything_is_written) {
  masters m(3);
  redlock::client c(m.options());
  const std::string r = "shared-key";
  const std::string as_holder = keys::holder(r);
  auto refused = [&](auto&& take, const std::string& what) {
    BOOST_TEST_CONTEXT(what) {
      try {
        take();
        BOOST_FAIL("a companion's key was taken as a lock");
      } catch (const redlock::error& e) {
        BOOST_TEST((e.code() == errc::bad_option), e.what());
        BOOST_TEST(std::string(e.what()).find("companion of the lock at key '" + r + "'") != std::string::npos,
                   e.what());
      }
    }
  };
  for (auto kind : {lock_kind::mutex, lock_kind::reentrant, lock_kind::fair, lock_kind::read, lock_kind::write}) {
    refused([&] { c.acquire(as_holder, {.ttl = 5s, .kind = kind}); }, "kind " + std::to_string(static_cast<int>(kind)));
  }
  refused([&] { c.acquire(keys::permit(r, 0), {.ttl = 5s}); }, "a permit slot as a mutex");
  refused([&] { c.acquire(keys::fence(r), {.ttl = 5s, .kind = lock_kind::semaphore, .permits = 2}); },
          "a semaphore");
  refused([&] { c.acquire("elsewhere", {.ttl = 5s, .other_names = {keys::waiting_writer(r)}}); }, "in a set");
  refused([&] { c.campaign(keys::queue(r), {.ttl = 5s}); }, "a campaign");
  refused([&] { c.adopt(keys::wake_list(r), std::string(32, 'a'), 5s); }, "an adoption");
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(m[i].command({"DBSIZE"}) == "0");

  // What the refusal prevents: R, described, cannot free a lock named so.
  auto prefixed_options = m.options();
  prefixed_options.key_prefix = "app:";
  redlock::client prefixed(prefixed_options);
  auto other = prefixed.acquire(as_holder, {.ttl = 30s});
  auto described_r = prefixed.acquire(r, described(lock_kind::mutex, "job r", 30s));
  prefixed.release(described_r);
  BOOST_TEST(eventually([&] { return m.holding(keys::holder("app:" + r)) == 0u; }));
  BOOST_TEST(m.holding("app:" + as_holder) == 3u);
  BOOST_TEST(code_of([&] { prefixed.acquire(as_holder, {.ttl = 5s}); }) == errc::not_acquired);
  prefixed.release(other);
}
