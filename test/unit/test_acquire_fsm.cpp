// SPDX-License-Identifier: Apache-2.0
// acquire_fsm without sockets: every decision of an acquisition, from
// events built by hand (src/locks/acquire_fsm.hpp).
#define BOOST_TEST_MODULE unit_acquire_fsm
#include <boost/test/unit_test.hpp>

#include "locks/acquire_fsm.hpp"

#include <redlock/error.hpp>

#include <boost/asio/error.hpp>

using namespace std::chrono_literals;
using std::chrono::milliseconds;
namespace d = redlock::detail;
using redlock::errc;
using redlock::lock_kind;
using act = d::acquire_action::type;
using ev = d::acquire_event::type;

namespace {

// A scripted acquisition: events at times the test moves, each decision
// checked as it comes.
struct driver {
  d::acquire_fsm fsm;
  redlock::steady_time now{std::chrono::seconds(1000)};
  std::chrono::steady_clock::time_point real{std::chrono::seconds(1000)};
  milliseconds jitter;

  static d::acquire_terms terms(redlock::acquire_options o, bool listed_waiter = false, bool checks_type = false) {
    d::acquire_terms t;
    t.options = std::move(o);
    t.quorum = 2;
    t.node_timeout = 50ms;
    t.listed_waiter = listed_waiter;
    t.checks_key_type = checks_type;
    return t;
  }
  // The machine is handed a fresh retry delay +/- jitter with each event
  // that may wait: here the options' delay (their jitter is 0).
  explicit driver(d::acquire_terms t) : fsm(t), jitter(t.options.retry_delay) {}

  d::acquire_event event(ev what) const {
    d::acquire_event e;
    e.what = what;
    e.now = now;
    e.real_now = real;
    e.jittered_delay = jitter;
    return e;
  }
  d::acquire_action start(bool releaser_woke_waiter = false) {
    auto e = event(ev::started);
    e.releaser_woke_waiter = releaser_woke_waiter;
    return fsm.resume(e);
  }
  d::acquire_action refused(std::size_t refused = 3, boost::system::error_code failure = {}) {
    auto e = event(ev::round_decided);
    e.round.refused = refused;
    e.round.failure = failure;
    e.round.started_at = now;
    return fsm.resume(e);
  }
  d::acquire_action won() {
    auto e = event(ev::round_decided);
    e.round.won = e.round.quorum = true;
    e.round.started_at = now;
    return fsm.resume(e);
  }
  d::acquire_action resume(ev what) { return fsm.resume(event(what)); }
  void pass(milliseconds by) {
    now += by;
    real += by;
  }
};

redlock::acquire_options waiting(milliseconds wait, milliseconds delay = 100ms) {
  redlock::acquire_options o;
  o.ttl = 10000ms;
  o.wait = wait;
  o.retry_delay = delay;
  o.retry_jitter = 0ms;
  return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_attempt_without_a_wait_then_not_acquired) {
  driver t(driver::terms(waiting(0ms)));
  auto a = t.start();
  BOOST_TEST((a.what == act::attempt));
  BOOST_TEST(a.counted);
  BOOST_TEST((t.refused().what == act::clean_up));
  a = t.resume(ev::cleaned_up);
  BOOST_TEST((a.what == act::complete));
  BOOST_TEST(a.ec == errc::not_acquired);
  BOOST_TEST(t.fsm.attempts() == 1u);
  BOOST_TEST((t.resume(ev::timer_fired).what == act::none), "nothing after the end");
}

BOOST_AUTO_TEST_CASE(the_wait_budget_bounds_the_retries_and_the_last_delay) {
  driver t(driver::terms(waiting(250ms)));
  t.start();
  t.refused();
  auto a = t.resume(ev::cleaned_up);
  BOOST_TEST((a.what == act::wait));
  BOOST_TEST(a.delay == 100ms);
  t.pass(100ms);
  BOOST_TEST((t.resume(ev::timer_fired).what == act::attempt));
  t.refused();
  t.pass(100ms);  // 200 of 250 ms used: the delay is cut to what is left
  a = t.resume(ev::cleaned_up);
  BOOST_TEST((a.what == act::wait));
  BOOST_TEST(a.delay == 50ms);
  t.pass(50ms);
  t.resume(ev::timer_fired);
  t.refused();
  a = t.resume(ev::cleaned_up);
  BOOST_TEST((a.what == act::complete));
  BOOST_TEST(a.ec == errc::not_acquired);
  BOOST_TEST(t.fsm.attempts() == 3u);
}

BOOST_AUTO_TEST_CASE(max_attempts_bounds_the_retries) {
  auto o = waiting(0ms);
  o.max_attempts = 2;
  driver t(driver::terms(o));
  t.start();
  t.refused();
  BOOST_TEST((t.resume(ev::cleaned_up).what == act::wait));
  t.resume(ev::timer_fired);
  t.refused();
  auto a = t.resume(ev::cleaned_up);
  BOOST_TEST((a.what == act::complete));
  BOOST_TEST(t.fsm.attempts() == 2u);
}

BOOST_AUTO_TEST_CASE(permanent_errors_end_the_wait_at_once) {
  for (auto e : {errc::wrong_type, errc::auth_failed, errc::permits_mismatch, errc::bad_database}) {
    driver t(driver::terms(waiting(10000ms)));
    t.start();
    t.refused(0, make_error_code(e));
    auto a = t.resume(ev::cleaned_up);
    BOOST_TEST((a.what == act::complete));
    BOOST_TEST(a.ec == e);
  }
  driver transient(driver::terms(waiting(10000ms)));  // a timeout is retried
  transient.start();
  transient.refused(0, make_error_code(errc::timeout));
  BOOST_TEST((transient.resume(ev::cleaned_up).what == act::wait));
}

BOOST_AUTO_TEST_CASE(a_quorum_without_validity_left_is_validity_expired) {
  driver t(driver::terms(waiting(0ms)));
  t.start();
  auto e = t.event(ev::round_decided);
  e.round.quorum = true;  // won = false: too slow
  BOOST_TEST((t.fsm.resume(e).what == act::clean_up));
  auto a = t.resume(ev::cleaned_up);
  BOOST_TEST(a.ec == errc::validity_expired);
}

BOOST_AUTO_TEST_CASE(a_plain_mutex_refusal_looks_at_the_key_type_before_saying_not_acquired) {
  driver t(driver::terms(waiting(0ms), false, true));
  t.start();
  t.refused();
  BOOST_TEST((t.resume(ev::cleaned_up).what == act::check_key_type));
  auto e = t.event(ev::key_type_checked);
  e.wrong_type = true;
  auto a = t.fsm.resume(e);
  BOOST_TEST((a.what == act::complete));
  BOOST_TEST(a.ec == errc::wrong_type);
}

BOOST_AUTO_TEST_CASE(a_release_heard_mid_attempt_retries_at_once_after_it_fails) {
  driver t(driver::terms(waiting(10000ms, 5000ms)));
  t.start();
  BOOST_TEST((t.resume(ev::release_heard).what == act::none));
  t.refused();
  auto a = t.resume(ev::cleaned_up);
  BOOST_TEST((a.what == act::wait));
  BOOST_TEST(a.delay == 0ms);
  // Heard while waiting: the timer is cut short, and its completion retries.
  t.resume(ev::timer_fired);
  t.refused();
  a = t.resume(ev::cleaned_up);
  BOOST_TEST(a.delay == 5000ms);
  BOOST_TEST((t.resume(ev::release_heard).what == act::cancel_timer));
  BOOST_TEST((t.resume(ev::timer_fired).what == act::attempt));
}

// Heard after the attempt was refused, while its clean-up is on its way:
// the lock is free now, so the retry goes at once. It slept out its whole
// retry delay before, with the lock free (a mutex waiter retrying one copy
// short of a quorum is refused where the release has not yet run, and the
// quorum-th copy can arrive during that clean-up).
BOOST_AUTO_TEST_CASE(a_release_heard_during_the_clean_up_retries_at_once_after_it) {
  driver t(driver::terms(waiting(10000ms, 5000ms)));
  t.start();
  BOOST_TEST((t.refused().what == act::clean_up));
  BOOST_TEST((t.resume(ev::release_heard).what == act::none));
  auto a = t.resume(ev::cleaned_up);
  BOOST_TEST((a.what == act::wait));
  BOOST_TEST(a.delay == 0ms);
}

BOOST_AUTO_TEST_CASE(a_releaser_asking_again_joins_the_line_once_and_tries_within_a_node_timeout) {
  driver t(driver::terms(waiting(10000ms, 5000ms), true));
  auto a = t.start(true);
  BOOST_TEST((a.what == act::attempt));
  BOOST_TEST(a.join_line_only);
  BOOST_TEST(!a.counted);
  BOOST_TEST(t.fsm.attempts() == 0u);
  t.refused();
  a = t.resume(ev::cleaned_up);
  BOOST_TEST((a.what == act::wait));
  BOOST_TEST(a.delay == 50ms, "tries for itself after one node timeout");
  a = t.resume(ev::timer_fired);
  BOOST_TEST(!a.join_line_only, "the line is joined once");
  BOOST_TEST(a.counted);
  // A wait that ran out during the line round still gets its one attempt.
  auto o = waiting(1ms);
  driver late(driver::terms(o, true));
  late.start(true);
  late.refused();
  late.pass(10ms);
  BOOST_TEST((late.resume(ev::cleaned_up).what == act::wait));
  BOOST_TEST((late.resume(ev::timer_fired).what == act::attempt));
}

// Issue 33, defect 4: a woken waiter retries with the plain SET NX PX only
// while its listing lives, and a refused plain retry tries again (with the
// script) before that listing lapses, not after its whole retry delay.
BOOST_AUTO_TEST_CASE(a_refused_plain_retry_tries_again_before_its_listing_lapses) {
  driver t(driver::terms(waiting(60000ms, 30000ms), true));
  t.start();
  t.refused(3);  // a script attempt a quorum refused: listed for lapse / 2 = (2*50 + 30000) ms
  BOOST_TEST(t.resume(ev::cleaned_up).delay == 30000ms);
  t.pass(1000ms);
  t.resume(ev::release_heard);
  auto a = t.resume(ev::timer_fired);
  BOOST_TEST(a.plain, "a woken waiter still listed retries plainly");
  t.refused(3);  // beaten by a third client: a plain retry lists nothing
  a = t.resume(ev::cleaned_up);
  BOOST_TEST((a.what == act::wait));
  BOOST_TEST(a.delay == 29100ms, "retries before its listing (30100 ms from the script attempt) lapses");
  t.pass(a.delay);
  a = t.resume(ev::timer_fired);
  BOOST_TEST(!a.plain, "with the script again, which lists it");

  // Started under a listing our own release wrote (four node timeouts):
  // woken, refused, it must not sleep its 30 s either.
  driver own(driver::terms(waiting(60000ms, 30000ms), true));
  auto e = own.event(ev::started);
  e.releaser_woke_waiter = true;
  e.listed_until = own.now + 100ms;  // lapse / 2 of a 200 ms listing
  a = own.fsm.resume(e);
  BOOST_TEST((a.what == act::wait));
  BOOST_TEST(a.delay == 50ms);
  own.pass(10ms);
  own.resume(ev::release_heard);
  a = own.resume(ev::timer_fired);
  BOOST_TEST(a.plain);
  own.refused(3);
  a = own.resume(ev::cleaned_up);
  BOOST_TEST(a.delay == 90ms);
}

BOOST_AUTO_TEST_CASE(a_cancelled_acquisition_cleans_up_then_ends_aborted) {
  // Cancelled while an attempt is out, which then wins: released, aborted.
  driver t(driver::terms(waiting(10000ms)));
  t.start();
  BOOST_TEST((t.resume(ev::cancelled).what == act::none));
  BOOST_TEST((t.won().what == act::clean_up));
  auto a = t.resume(ev::cleaned_up);
  BOOST_TEST((a.what == act::complete));
  BOOST_TEST(a.ec == boost::asio::error::operation_aborted);
  // Cancelled while waiting: the timer is cut short and its completion ends it.
  driver w(driver::terms(waiting(10000ms)));
  w.start();
  w.refused();
  w.resume(ev::cleaned_up);
  BOOST_TEST((w.resume(ev::cancelled).what == act::cancel_timer));
  a = w.resume(ev::timer_fired);
  BOOST_TEST((a.what == act::complete));
  BOOST_TEST(a.ec == boost::asio::error::operation_aborted);
  // Handed the lock after a cancellation: given back, aborted.
  driver h(driver::terms(waiting(10000ms)));
  h.start();
  h.resume(ev::cancelled);
  BOOST_TEST((h.resume(ev::handed_over).what == act::clean_up));
  BOOST_TEST(h.resume(ev::cleaned_up).ec == boost::asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(a_fenced_win_raises_the_fence_then_holds_if_in_time) {
  auto o = waiting(0ms);
  o.fenced = true;
  driver t(driver::terms(o));
  t.start();
  BOOST_TEST((t.won().what == act::raise_fence));
  auto e = t.event(ev::fence_raised);
  e.round.won = e.round.quorum = true;
  BOOST_TEST((t.fsm.resume(e).what == act::hold));
  BOOST_TEST(t.fsm.done());
  // Raised on a quorum, but too late: the window is gone.
  driver late(driver::terms(o));
  late.start();
  late.won();
  e = late.event(ev::fence_raised);
  e.round.quorum = true;
  BOOST_TEST((late.fsm.resume(e).what == act::clean_up));
  BOOST_TEST(late.resume(ev::cleaned_up).ec == errc::validity_expired);
}

BOOST_AUTO_TEST_CASE(a_hand_over_while_waiting_holds_and_later_news_is_ignored) {
  driver t(driver::terms(waiting(10000ms)));
  t.start();
  t.refused();
  t.resume(ev::cleaned_up);
  BOOST_TEST((t.resume(ev::handed_over).what == act::hold));
  BOOST_TEST((t.resume(ev::timer_fired).what == act::none));
  BOOST_TEST((t.refused().what == act::none), "a poll decided after the hand-over");
}

BOOST_AUTO_TEST_CASE(a_stopped_client_ends_the_next_attempt) {
  driver t(driver::terms(waiting(10000ms)));
  t.start();
  t.refused();
  t.resume(ev::cleaned_up);
  auto e = t.event(ev::timer_fired);
  e.client_stopped = true;
  auto a = t.fsm.resume(e);
  BOOST_TEST((a.what == act::complete));
  BOOST_TEST(a.ec == errc::shutting_down);
}

BOOST_AUTO_TEST_CASE(a_fair_waiter_far_back_waits_longer) {
  auto o = waiting(60000ms, 100ms);
  o.kind = lock_kind::fair;
  o.queue_timeout = 5000ms;
  driver t(driver::terms(o));
  t.start();
  auto e = t.event(ev::round_decided);
  e.round.refused = 3;
  e.queue_rank = 3;
  t.fsm.resume(e);
  BOOST_TEST(t.resume(ev::cleaned_up).delay == 400ms);  // rank + 1 retry delays (retry_policy.hpp)
}
