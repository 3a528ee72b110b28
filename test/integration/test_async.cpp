// SPDX-License-Identifier: Apache-2.0
#define BOOST_TEST_MODULE integration_async
#include <boost/test/unit_test.hpp>

#include "masters.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace asio = boost::asio;
using redlock::errc;
using redlock::testing::masters;

namespace {
// An io_context run by a thread of its own until this goes out of scope:
// joined even when a check throws, so a failure is reported, not a
// std::terminate from a joinable std::thread.
struct context_thread {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
  std::thread runner{[this] { io.run(); }};
  ~context_thread() {
    work.reset();
    runner.join();
  }
};
}  // namespace

BOOST_AUTO_TEST_CASE(futures) {
  masters m(3);
  context_thread t;
  {
    redlock::async_client c(t.io.get_executor(), m.options());
    auto l = c.async_acquire("fut", {.ttl = 3000ms}, asio::use_future).get();
    BOOST_TEST(redlock::testing::eventually([&] { return m.holding("fut") == 3u; }));
    c.async_extend(l, 6000ms, asio::use_future).get();
    c.async_release(l, asio::use_future).get();
    BOOST_TEST(redlock::testing::eventually([&] { return m.holding("fut") == 0u; }));
    // Errors arrive as exceptions through the future.
    BOOST_CHECK_THROW(c.async_release(l, asio::use_future).get(), boost::system::system_error);
  }
}

// client_options::executor_runs_on_one_thread: no strand of the client's own;
// operations started from another thread still run on the executor's one
// thread, a waiter is woken by a release, and the client shuts down cleanly
// (the sanitized build checks for races and leaks).
BOOST_AUTO_TEST_CASE(a_client_whose_executor_one_thread_runs_needs_no_strand) {
  masters m(3);
  context_thread t;
  {
    auto o = m.options();
    o.executor_runs_on_one_thread = true;
    redlock::async_client holder(t.io.get_executor(), o), waiter(t.io.get_executor(), o);
    auto held = holder.async_acquire("one-thread", {.ttl = 5000ms}, asio::use_future).get();
    auto waiting = waiter.async_acquire("one-thread", {.ttl = 5000ms, .wait = 5000ms}, asio::use_future);
    holder.async_release(held, asio::use_future).get();
    auto l = waiting.get();
    BOOST_TEST(redlock::testing::eventually([&] { return m.held_where_granted("one-thread", l); }));
    waiter.async_release(l, asio::use_future).get();
    BOOST_TEST(redlock::testing::eventually([&] { return m.holding("one-thread") == 0u; }));
  }
}

namespace {
// The client's connections keep the context busy: run until `done` (10 s at most).
bool run_until(asio::io_context& io, const bool& done) {
  auto limit = std::chrono::steady_clock::now() + 10s;
  while (!done && std::chrono::steady_clock::now() < limit) io.run_one_for(100ms);
  return done;
}
}  // namespace

BOOST_AUTO_TEST_CASE(coroutines) {
  masters m(5);
  asio::io_context io;
  redlock::async_client c(io.get_executor(), m.options());
  bool finished = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        // A named variable, not a temporary inside the co_await expression:
        // g++ 12 mis-destroys non-trivial temporaries there (GCC bug 100611).
        redlock::acquire_options opts{.ttl = 3000ms, .fenced = true};
        auto l = co_await c.async_acquire("coro", opts, asio::use_awaitable);
        BOOST_TEST(redlock::testing::eventually([&] { return m.holding("coro") == 5u; }));
        BOOST_TEST(l.fence().has_value());
        co_await c.async_release(l, asio::use_awaitable);
        finished = true;
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  BOOST_TEST(run_until(io, finished));
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("coro") == 0u; }));
}

// Without a completion token every operation returns an asio::deferred
// operation: awaitable directly in a coroutine (an error arrives as a
// system_error with the library's code), or started later with any token.
BOOST_AUTO_TEST_CASE(without_a_token_operations_are_deferred) {
  masters m(3);
  asio::io_context io;
  redlock::async_client c(io.get_executor(), m.options());
  redlock::async_client other(io.get_executor(), m.options());
  bool finished = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        redlock::acquire_options opts{.ttl = 3000ms};
        auto l = co_await c.async_acquire("deferred", opts);
        BOOST_TEST(l.token().size() > 0u);
        auto nodes = co_await c.async_status("deferred");
        BOOST_TEST(nodes.size() == 3u);
        boost::system::error_code refused;
        try {
          co_await other.async_acquire("deferred", opts);
        } catch (const boost::system::system_error& e) {
          refused = e.code();
        }
        BOOST_TEST(refused == redlock::errc::not_acquired);
        auto extend = c.async_extend(l, 5000ms);  // nothing sent yet
        boost::system::error_code extended = redlock::errc::timeout;
        co_await std::move(extend)(asio::redirect_error(asio::use_awaitable, extended));
        BOOST_TEST(!extended);
        co_await c.async_release(l);
        finished = true;
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  BOOST_TEST(run_until(io, finished));
  BOOST_TEST(redlock::testing::eventually([&] { return m.holding("deferred") == 0u; }));
}

BOOST_AUTO_TEST_CASE(cancellation_stops_waiting_and_leaves_nothing) {
  masters m(3);
  asio::io_context io;
  redlock::async_client holder(io.get_executor(), m.options());
  redlock::async_client waiter(io.get_executor(), m.options());
  redlock::lock held;
  holder.async_acquire("cancel", {.ttl = 10000ms}, [&](boost::system::error_code ec, redlock::lock l) {
    BOOST_REQUIRE(!ec);
    held = l;
  });
  while (!held) io.run_one();

  asio::cancellation_signal signal;
  boost::system::error_code result;
  bool done = false;
  auto t0 = std::chrono::steady_clock::now();
  waiter.async_acquire("cancel", {.ttl = 10000ms, .wait = 10000ms, .retry_delay = 30ms},
                       asio::bind_cancellation_slot(signal.slot(), [&](boost::system::error_code ec, redlock::lock) {
                         result = ec;
                         done = true;
                       }));
  asio::steady_timer t(io, 150ms);
  t.async_wait([&](auto) { signal.emit(asio::cancellation_type::terminal); });
  while (!done) io.run_one();
  BOOST_TEST(result == asio::error::operation_aborted);
  BOOST_TEST((std::chrono::steady_clock::now() - t0 < 5000ms));
  io.run_for(50ms);
  for (std::size_t i = 0; i < m.size(); ++i) BOOST_TEST(m[i].command({"GET", "cancel"}) == held.token());
}

BOOST_AUTO_TEST_CASE(destroying_the_client_completes_operations_in_flight) {
  masters m(3);
  asio::io_context io;
  boost::system::error_code result;
  bool done = false;
  m[0].pause();
  m[1].pause();
  {
    auto o = m.options(2000ms);
    redlock::async_client c(io.get_executor(), o);
    c.async_acquire("bye", {.ttl = 10000ms}, [&](boost::system::error_code ec, redlock::lock) {
      result = ec;
      done = true;
    });
    io.run_for(50ms);
  }  // destroyed with the request outstanding
  io.run_for(500ms);
  BOOST_TEST(done);
  BOOST_TEST(result == errc::shutting_down);
  m[0].resume();
  m[1].resume();
}

BOOST_AUTO_TEST_CASE(client_destroyed_after_its_io_context_stopped_leaves_no_cycle) {
  // The io_context is stopped, then the client destroyed, then the context,
  // which never runs again: a handler queued for the shutdown never runs.
  // The client once kept itself alive through its queued request (and the
  // operation, and its completion handler, with it).
  masters m(3);
  m[0].pause();
  m[1].pause();
  std::weak_ptr<int> handler_alive;
  {
    asio::io_context io;
    auto marker = std::make_shared<int>(0);
    handler_alive = marker;
    redlock::async_client c(io.get_executor(), m.options(2000ms));
    c.async_acquire("stopped-first", {.ttl = 10000ms}, [marker](boost::system::error_code, redlock::lock) {});
    marker.reset();
    io.run_for(50ms);  // the request to the paused masters is outstanding
    io.stop();
  }
  BOOST_TEST(handler_alive.expired());
  m[0].resume();
  m[1].resume();
}

BOOST_AUTO_TEST_CASE(sync_client_destroyed_while_its_strand_is_busy_leaves_no_cycle) {
  // The acquisition's request to the stopped master stays queued on its
  // connection, holding the operation and through it the client. The
  // completion handler keeps the client's strand busy while the client is
  // destroyed: the destructor must still run the shutdown (which clears the
  // queues) before it stops the I/O thread. It once waited on a marker that
  // could overtake the shutdown, and LeakSanitizer then reported the cycle
  // when this test module exited (in about 1 run of 5; hence the rounds).
  masters m(3);
  m[2].pause();
  for (int round = 0; round < 5; ++round) {
    redlock::client c(m.options(2000ms));
    std::promise<void> completed;
    c.async().async_acquire("busy-strand-" + std::to_string(round), redlock::acquire_options{},
                            [&](boost::system::error_code ec, redlock::lock) {
                              BOOST_TEST(!ec);
                              completed.set_value();
                              std::this_thread::sleep_for(150ms);  // the strand is busy while ~client runs
                            });
    completed.get_future().wait();
  }
  m[2].resume();
}

// Asio's rule for an initiating function: its handler is never called from
// within the call, even when the outcome is known at once (a retry loop would
// recurse; a caller holding a mutex would deadlock). Started from a handler
// of the client's, an operation whose outcome was known at once (releasing
// or extending a lock already released) completed inside the call.
BOOST_AUTO_TEST_CASE(an_outcome_known_at_once_never_completes_inside_the_initiating_call) {
  masters m(3);
  for (bool one_thread : {false, true}) {
    BOOST_TEST_CONTEXT("executor_runs_on_one_thread " << one_thread) {
      asio::io_context io;
      auto o = m.options();
      o.executor_runs_on_one_thread = one_thread;
      std::optional<redlock::async_client> c(std::in_place, io.get_executor(), o);
      redlock::acquire_options reentrant;
      reentrant.kind = redlock::lock_kind::reentrant;
      reentrant.owner = "at-once";
      std::vector<std::string> seen;
      bool both = false;  // both answers came
      bool release_returned = false, extend_returned = false;
      c->async_acquire("at-once", reentrant, [&](boost::system::error_code ec, redlock::lock l) {
        BOOST_REQUIRE(!ec);
        c->async_release(l, [&, l](boost::system::error_code ec) {
          BOOST_TEST(!ec);
          c->async_release(l, [&](boost::system::error_code ec) {
            BOOST_TEST(ec == errc::not_held);
            seen.push_back(release_returned ? "release completed after the call" : "release completed inside the call");
            both = seen.size() == 2;
          });
          release_returned = true;
          c->async_extend(l, 5000ms, [&](boost::system::error_code ec) {
            BOOST_TEST(ec == errc::not_held);
            seen.push_back(extend_returned ? "extend completed after the call" : "extend completed inside the call");
            both = seen.size() == 2;
          });
          extend_returned = true;
        });
      });
      run_until(io, both);
      std::vector<std::string> expected{"release completed after the call", "extend completed after the call"};
      BOOST_TEST(seen == expected, boost::test_tools::per_element());
      c.reset();
      io.run_for(200ms);  // the client's shutdown
    }
  }
}
