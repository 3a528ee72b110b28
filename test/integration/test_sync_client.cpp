// SPDX-License-Identifier: Apache-2.0
// integration_mutex, continued: the blocking front end (redlock::client's
// error_code forms, status, adopt) and redlock::mutex with std lock types.
#include "mutex_prelude.hpp"

BOOST_AUTO_TEST_CASE(sync_client_reports_through_error_codes_reads_status_and_adopts) {
  masters m(3);
  redlock::client a(m.options()), b(m.options());
  boost::system::error_code ec;
  auto held = a.acquire("sync-ec", {.ttl = 5000ms}, ec);
  BOOST_REQUIRE(!ec);
  BOOST_TEST(held.token().size() == 32u);
  auto refused = b.acquire("sync-ec", {.ttl = 5000ms}, ec);
  BOOST_TEST(ec == errc::not_acquired);
  BOOST_TEST(!refused);
  b.acquire("", {}, ec);
  BOOST_TEST(ec == errc::empty_name);
  b.extend(redlock::lock{}, 1000ms, ec);
  BOOST_TEST(ec == errc::empty_lock);
  a.extend(held, 0ms, ec);
  BOOST_TEST(ec == errc::bad_ttl);

  BOOST_REQUIRE(eventually([&] { return m.holding("sync-ec") == 3u; }));
  auto seen = a.status("sync-ec");
  BOOST_REQUIRE(seen.size() == 3u);
  for (auto& s : seen) {
    BOOST_TEST(!s.error);
    BOOST_TEST((s.content == redlock::key_content::mutex));
    BOOST_TEST(s.token == held.token());
    BOOST_TEST(s.pttl.count() > 0);
  }
  b.status("", ec);
  BOOST_TEST(ec == errc::empty_name);

  // Another handle (as another process would have) extends and releases it.
  auto adopted = b.adopt("sync-ec", held.token(), 5000ms);
  b.extend(adopted, 8000ms, ec);
  BOOST_TEST(!ec);
  BOOST_TEST(eventually([&] { return std::stol(m[0].command({"PTTL", "sync-ec"})) > 6000; }));
  b.release(adopted, ec);
  BOOST_TEST(!ec);
  BOOST_TEST(eventually([&] { return m.holding("sync-ec") == 0u; }));
  a.release(held, ec);  // released elsewhere: not held any more
  BOOST_TEST(ec == errc::not_held);
}

// redlock::mutex is a standard Lockable: unique_lock, scoped_lock over two
// names (std::lock's try-and-back-off, no deadlock), try_lock against a holder.
BOOST_AUTO_TEST_CASE(mutex_adapter_works_with_the_standard_lock_types) {
  masters m(3);
  redlock::client a(m.options()), b(m.options());
  redlock::mutex jobs(a, "lockable-jobs", {.ttl = 5000ms});
  {
    std::unique_lock guard(jobs);
    BOOST_TEST(guard.owns_lock());
    BOOST_TEST(jobs.held().remaining_validity() > 4000ms);
    BOOST_TEST(eventually([&] { return m.holding("lockable-jobs") == 3u; }));
    redlock::mutex other(b, "lockable-jobs", {.ttl = 5000ms});
    BOOST_TEST(!other.try_lock());  // held by a
    BOOST_TEST(!other.owns_lock());
  }
  BOOST_TEST(eventually([&] { return m.holding("lockable-jobs") == 0u; }));
  BOOST_TEST(!jobs.last_release_error());
  BOOST_TEST(code_of([&] { jobs.held(); }) == errc::empty_lock);

  redlock::mutex x(a, "lockable-x", {.ttl = 5000ms, .wait = 2000ms}), y(a, "lockable-y", {.ttl = 5000ms, .wait = 2000ms});
  {
    std::scoped_lock both(x, y);
    BOOST_TEST(x.owns_lock());
    BOOST_TEST(y.owns_lock());
  }
  BOOST_TEST(eventually([&] { return m.holding("lockable-x") + m.holding("lockable-y") == 0u; }));
  BOOST_TEST(!x.owns_lock());
}

// Issue 33, defect 7: with the default wait of 0, each try_acquire made one
// attempt and lock() called it again at once, round after round (a
// std::unique_lock waiting 1.5 s for a held name sent 5,528 SETs to one
// master). lock() waits as acquire() with a wait does: about an attempt per
// retry delay, on the wake lists, woken by the release.
