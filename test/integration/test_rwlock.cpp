// SPDX-License-Identifier: Apache-2.0
// Read-write locks (lock_kind::read / write, docs/algorithm.md section 15):
// readers share, a writer excludes everyone, a waiting writer holds new
// readers back (until its mark lapses), a crashed holder's hold lapses on
// its own, re-entry by one owner, upgrade refused.
#define BOOST_TEST_MODULE integration_rwlock
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include "masters.hpp"
#include "scripts/keys.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/use_future.hpp>

#include <future>

#include <atomic>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::lock_kind;
using redlock::testing::code_of;
using redlock::testing::eventually;
using redlock::testing::masters;
namespace bdata = boost::unit_test::data;
namespace keys = redlock::detail::keys;

namespace {

redlock::acquire_options side(lock_kind kind, std::string owner = "", std::chrono::milliseconds ttl = 5000ms) {
  redlock::acquire_options o;
  o.kind = kind;
  o.ttl = ttl;
  o.owner = std::move(owner);
  return o;
}
const auto reader = lock_kind::read;
const auto writer = lock_kind::write;

}  // namespace

BOOST_DATA_TEST_CASE(readers_share_and_a_writer_excludes_everyone, bdata::make({1, 3, 5}), nodes) {
  masters m(static_cast<std::size_t>(nodes));
  redlock::client c(m.options());
  auto r1 = c.acquire("doc", side(reader, "a"));
  auto r2 = c.acquire("doc", side(reader, "b"));
  BOOST_TEST((r1.kind() == reader));
  BOOST_TEST(!c.try_acquire("doc", side(writer, "w")).has_value(), "a writer while two read");
  c.release(r1);
  BOOST_TEST(!c.try_acquire("doc", side(writer, "w")).has_value(), "a writer while one reads");
  c.release(r2);
  auto w = c.acquire("doc", side(writer, "w"));
  BOOST_TEST(!c.try_acquire("doc", side(reader, "a")).has_value(), "a reader while one writes");
  BOOST_TEST(!c.try_acquire("doc", side(writer, "x")).has_value(), "a second writer");
  c.release(w);
  BOOST_TEST(eventually([&] { return m.holding("doc") == 0u; }), "the key outlived its last hold");
}

BOOST_AUTO_TEST_CASE(a_waiting_writer_is_not_starved_by_a_stream_of_readers) {
  masters m(3);
  redlock::client c(m.options());
  std::atomic<bool> stop{false}, writer_in{false};
  std::atomic<int> reads_after_writer_asked{0};
  std::atomic<bool> writer_asked{false};
  // Readers overlap one another all the time: without the mark, a writer
  // would never find the lock free.
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i)
    readers.emplace_back([&, i] {
      redlock::client rc(m.options());
      auto opts = side(reader, "reader" + std::to_string(i));
      opts.wait = 5s;
      opts.retry_delay = 5ms;
      opts.retry_jitter = 2ms;
      while (!stop) {
        auto l = rc.try_acquire("stream", opts);
        if (!l) continue;
        if (writer_asked) ++reads_after_writer_asked;
        std::this_thread::sleep_for(40ms);
        rc.release(*l);
      }
    });
  std::this_thread::sleep_for(200ms);
  auto opts = side(writer, "writer");
  opts.wait = 5s;
  opts.retry_delay = 10ms;
  opts.retry_jitter = 5ms;
  writer_asked = true;
  auto t0 = std::chrono::steady_clock::now();
  auto w = c.try_acquire("stream", opts);
  auto waited = std::chrono::steady_clock::now() - t0;
  writer_in = w.has_value();
  if (w) c.release(*w);
  stop = true;
  for (auto& t : readers) t.join();
  BOOST_TEST(writer_in.load(), "the writer starved");
  BOOST_TEST((waited < 3s));
}

BOOST_AUTO_TEST_CASE(a_writer_that_goes_away_blocks_readers_only_until_its_mark_lapses) {
  masters m(3);
  redlock::client c(m.options());
  auto r = c.acquire("marked", side(reader, "a"));
  {
    // A writer that waits (and so puts its mark up), then is cancelled by
    // its wait running out: it takes the mark down itself.
    auto opts = side(writer, "w");
    opts.wait = 150ms;
    opts.retry_delay = 20ms;
    BOOST_TEST(!c.try_acquire("marked", opts).has_value());
  }
  BOOST_TEST(eventually([&] { return m.holding(keys::waiting_writer("marked")) == 0u; }), "a writer's mark stayed up");
  auto r2 = c.acquire("marked", side(reader, "b"));
  // A mark left by a writer that died: it lapses on its own.
  m.on_all({"SET", keys::waiting_writer("marked"), "dead-writer", "PX", "300"});
  BOOST_TEST(!c.try_acquire("marked", side(reader, "c")).has_value(), "a reader passed a waiting writer");
  auto opts = side(reader, "c");
  opts.wait = 2s;
  opts.retry_delay = 20ms;
  auto r3 = c.acquire("marked", opts);
  for (auto* l : {&r, &r2, &r3}) c.release(*l);
}

BOOST_AUTO_TEST_CASE(a_crashed_readers_hold_lapses_while_others_keep_the_key_alive) {
  masters m(3);
  redlock::client c(m.options());
  auto alive = c.acquire("lapse", side(reader, "alive", 5000ms));
  {
    redlock::client gone(m.options());
    gone.acquire("lapse", side(reader, "crashed", 300ms));  // never released
  }
  // The live reader keeps the key alive for seconds; the crashed reader's
  // hold must end at its own deadline all the same.
  std::this_thread::sleep_for(600ms);
  c.release(alive);
  auto w = c.try_acquire("lapse", side(writer, "w"));
  BOOST_TEST(w.has_value(), "a lapsed reader still held the writer back");
  if (w) c.release(*w);
}

BOOST_AUTO_TEST_CASE(one_owner_reenters_and_may_not_upgrade) {
  masters m(3);
  redlock::client c(m.options());
  auto r = c.acquire("own", side(reader, "me"));
  auto r_again = c.acquire("own", side(reader, "me"));  // read inside read: no round on the masters
  BOOST_TEST(r_again.token() == r.token());
  BOOST_TEST(r.hold_count() == 2);
  BOOST_TEST(code_of([&] { c.acquire("own", side(writer, "me")); }) == errc::upgrade_refused);
  c.release(r_again);
  BOOST_TEST(m.holding("own") == 3u, "the inner release let the outer go");
  c.release(r);
  BOOST_TEST(eventually([&] { return m.holding("own") == 0u; }));
  auto w = c.acquire("own", side(writer, "me"));
  auto r_in_w = c.acquire("own", side(reader, "me"));  // read inside write
  auto w_in_w = c.acquire("own", side(writer, "me"));
  BOOST_TEST(w.hold_count() == 3);
  BOOST_TEST(!c.try_acquire("own", side(reader, "someone else")).has_value());
  c.release(w_in_w);
  c.release(r_in_w);
  c.release(w);
  BOOST_TEST(eventually([&] { return m.holding("own") == 0u; }));
}

BOOST_AUTO_TEST_CASE(fencing_renewal_and_release_of_each_side) {
  masters m(3);
  redlock::client c(m.options());
  auto opts = side(writer, "", 600ms);
  opts.fenced = true;
  opts.renew = true;
  auto w = c.acquire("fenced-rw", opts);
  BOOST_REQUIRE(w.fence().has_value());
  std::this_thread::sleep_for(1000ms);
  BOOST_TEST(!w.lost());
  c.release(w);
  auto r = c.acquire("fenced-rw", [&] {
    auto o = side(reader);
    o.fenced = true;
    return o;
  }());
  BOOST_TEST(*r.fence() > *w.fence());
  c.release(r);
  BOOST_TEST(code_of([&] { c.release(r); }) == errc::not_held);
}

BOOST_AUTO_TEST_CASE(a_description_is_refused_rather_than_dropped) {
  masters m(1);
  redlock::client c(m.options());
  auto opts = side(reader);
  opts.description = "report job";
  BOOST_TEST(code_of([&] { c.acquire("described", opts); }) == errc::bad_option);
  BOOST_TEST(m[0].command({"DBSIZE"}) == "0");
}

BOOST_AUTO_TEST_CASE(another_kind_under_the_name_is_reported_not_overwritten) {
  masters m(3);
  redlock::client c(m.options());
  auto mutex = c.acquire("taken");
  BOOST_TEST(code_of([&] { c.acquire("taken", side(reader)); }) == errc::wrong_type);
  c.release(mutex);
  auto reentrant = c.acquire("hashed", side(lock_kind::reentrant, "x"));
  BOOST_TEST(code_of([&] { c.acquire("hashed", side(writer)); }) == errc::wrong_type);
  BOOST_TEST(m[0].command({"TYPE", "hashed"}) == "hash");
  c.release(reentrant);
}

// Someone else's string at the waiting writer's mark ({R}:writer), kept
// without an expiry: it was taken for a writer's mark, which never lapsed,
// so every reader and writer was refused for as long as it stayed (CLI exit
// 75). Our marks always expire, so one without an expiry is reported as
// wrong_type and left as it was, and nothing is held.
BOOST_AUTO_TEST_CASE(someone_elses_string_at_the_writers_mark_is_reported_not_waited_on) {
  masters m(3);
  redlock::client c(m.options());
  auto mark = keys::waiting_writer("marked");
  m.on_all({"SET", mark, "theirs"});
  for (auto kind : {reader, writer}) {
    auto o = side(kind);
    o.wait = 200ms;
    BOOST_TEST((code_of([&] { c.acquire("marked", o); }) == errc::wrong_type), (kind == reader ? "reader" : "writer"));
    BOOST_TEST(m.holding("marked") == 0u);
  }
  for (std::size_t i = 0; i < m.size(); ++i) {
    BOOST_TEST(m[i].command({"GET", mark}) == "theirs");
    BOOST_TEST(m[i].command({"PTTL", mark}) == "-1");
  }
  m.on_all({"DEL", mark});
  c.release(c.acquire("marked", side(writer)));
}

BOOST_AUTO_TEST_CASE(waiters_are_woken_by_the_release_that_lets_them_in) {
  masters m(3);
  redlock::client c(m.options());
  for (auto [held_kind, waiting_kind] : {std::pair{writer, reader}, std::pair{reader, writer}}) {
    auto waited = redlock::testing::wait_ended_by_release(c, "woken", c.acquire("woken", side(held_kind, "holder")),
                                                          side(waiting_kind, "waiter"));
    BOOST_TEST(waited.count() < 1500, "not woken: " << waited.count() << " ms");
  }
}

BOOST_AUTO_TEST_CASE(a_paused_then_killed_master_does_not_stop_a_quorum) {
  masters m(5);
  redlock::client c(m.options(50ms));
  m[1].pause();
  auto r1 = c.acquire("faulty", side(reader, "a"));
  auto r2 = c.acquire("faulty", side(reader, "b"));
  BOOST_TEST(!c.try_acquire("faulty", side(writer, "w")).has_value());
  m[1].resume();
  m[3].kill9();
  c.release(r1);
  c.release(r2);
  auto w = c.acquire("faulty", side(writer, "w"));
  BOOST_TEST(!c.try_acquire("faulty", side(reader, "c")).has_value());
  c.release(w);
}

// What `redlock release --token "$REDLOCK_TOKEN"` in a reader's EXIT trap
// does: adopt the reader's hold by its token and release it. Only that
// reader goes: the other reader still holds, and a writer is still refused.
// The token ('r:<hex>') was taken for a reentrant owner field, and the
// release deleted the whole hash: every reader's hold, while they ran.
BOOST_AUTO_TEST_CASE(a_readers_token_releases_that_reader_alone) {
  masters m(3);
  redlock::client c(m.options()), other(m.options());
  auto r1 = c.acquire("doc", side(reader, "a", 30000ms));
  auto r2 = c.acquire("doc", side(reader, "b", 30000ms));
  auto adopted = other.adopt("doc", r1.token(), 30000ms);
  BOOST_TEST((adopted.kind() == reader));
  other.release(adopted);
  for (std::size_t i = 0; i < m.size(); ++i) {
    BOOST_TEST(eventually([&] { return m[i].command({"HEXISTS", "doc", r1.token()}) == "0"; }));
    BOOST_TEST(m[i].command({"HEXISTS", "doc", r2.token()}) == "1", "master " << i << " lost the other reader");
  }
  BOOST_TEST(!other.try_acquire("doc", side(writer, "w")).has_value(), "a writer while a reader holds");
  // The writer's token likewise: its release frees the lock.
  c.release(r2);
  BOOST_TEST(code_of([&] { c.release(r1); }) == errc::not_held);
  auto w = c.acquire("doc", side(writer, "w"));
  other.release(other.adopt("doc", w.token(), 5000ms));
  BOOST_TEST(eventually([&] { return m.holding("doc") == 0u; }));
}

// Extending a reader by its token lengthens that reader's own deadline (the
// one rw_acquire.lua drops lapsed holds by), not just the key's. It
// lengthened the key only: past the reader's first ttl a writer got in
// while the reader, extended to 30 s, still held.
BOOST_AUTO_TEST_CASE(extending_a_readers_token_moves_that_readers_deadline) {
  masters m(3);
  redlock::client c(m.options()), other(m.options());
  auto r = c.acquire("doc", side(reader, "a", 1000ms));
  auto adopted = other.adopt("doc", r.token(), 30000ms);
  other.extend(adopted, 30000ms);
  BOOST_TEST(adopted.remaining_validity() > 20000ms);
  std::this_thread::sleep_for(1500ms);  // past the first ttl
  BOOST_TEST(!other.try_acquire("doc", side(writer, "w")).has_value(), "a writer got in while the reader held");
  other.release(adopted);
  BOOST_TEST(eventually([&] { return m.holding("doc") == 0u; }));
}

// Tokens of another kind's shape are refused before anything is sent: a
// reader's token adopted as a reentrant owner (whose release deletes the
// hash) or as a writer, and a reentrant owner field adopted as a reader.
BOOST_AUTO_TEST_CASE(a_token_adopted_as_another_kind_is_refused_naming_it) {
  masters m(1);
  redlock::client c(m.options());
  auto r = c.acquire("doc", side(reader, "a"));
  for (auto kind : {lock_kind::reentrant, lock_kind::fair, lock_kind::write, lock_kind::semaphore})
    BOOST_TEST(code_of([&] { c.adopt("doc", r.token(), 5000ms, {.kind = kind}); }) == errc::bad_option);
  BOOST_TEST(code_of([&] { c.adopt("doc", "0123456789abcdef0123456789abcdef:job", 5000ms, {.kind = reader}); }) ==
             errc::bad_option);
  BOOST_TEST(m[0].command({"HEXISTS", "doc", r.token()}) == "1");
  c.release(r);
}

// A reader that died holding leaves its field until its deadline; the last
// live reader's release must drop it with its own hold, delete the key and
// wake the writer. It kept the lapsed field: the hash was not empty, so the
// release neither deleted nor announced, and the writer slept out its 10 s
// retry delay.
BOOST_AUTO_TEST_CASE(the_last_live_readers_release_lets_the_writer_in_past_a_dead_readers_field) {
  masters m(3);
  {
    redlock::client dead(m.options());
    dead.acquire("doc", side(reader, "dead", 500ms));  // never released: the client goes
  }
  redlock::client c(m.options()), w(m.options());
  auto live = c.acquire("doc", side(reader, "live", 30000ms));
  auto o = side(writer, "w", 30000ms);
  o.wait = 30000ms;
  o.retry_delay = 10000ms;
  o.retry_jitter = 0ms;
  auto got = w.async().async_acquire("doc", o, boost::asio::use_future);
  std::this_thread::sleep_for(800ms);  // the dead reader's deadline has passed; the writer was refused
  BOOST_REQUIRE(got.wait_for(0s) == std::future_status::timeout);
  auto released_at = std::chrono::steady_clock::now();
  c.release(live);
  BOOST_REQUIRE_MESSAGE(got.wait_for(5s) == std::future_status::ready, "the writer was not woken");
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - released_at);
  BOOST_TEST(waited < 1000ms, "the writer got in " << waited.count() << " ms after the release");
  w.release(got.get());
  BOOST_TEST(eventually([&] { return m.holding("doc") == 0u; }));
}

// A reader that held the hash alive for a minute (an extend) and released
// left it to its minute though the only hold left, a dead reader's, ended
// within a second: every other kind then found a hash in its way. The
// release now leaves the key no longer than the latest live deadline.
BOOST_AUTO_TEST_CASE(a_release_leaves_the_hash_no_longer_than_its_latest_live_hold) {
  masters m(3);
  {
    redlock::client dead(m.options());
    dead.acquire("doc", side(reader, "dead", 800ms));  // never released: the client goes
  }
  redlock::client c(m.options());
  auto r = c.acquire("doc", side(reader, "long", 1000ms));
  c.extend(r, 60000ms);
  c.release(r);
  for (std::size_t i = 0; i < m.size(); ++i) {
    auto pttl = std::stoll(m[i].command({"PTTL", "doc"}));
    BOOST_TEST(pttl <= 800, "master " << i << ": the hash lives " << pttl << " ms more");
  }
  BOOST_TEST(eventually([&] { return m.holding("doc") == 0u; }, 3000ms), "the hash outlived its last hold");
  auto mutex = c.try_acquire("doc", side(lock_kind::mutex, "", 1000ms));
  BOOST_TEST(mutex.has_value(), "a mutex found the dead readers' hash in its way");
  if (mutex) c.release(*mutex);
}
