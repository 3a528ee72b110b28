// SPDX-License-Identifier: Apache-2.0
// What the sync client's files (client.cpp, client_election.cpp) share: its
// I/O thread, the one blocking bridge to the async client, and the errors
// the throwing forms raise.
#pragma once

#include <redlock/client.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <future>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <tuple>

namespace redlock {

// The thread that runs the client's io_context.
struct client::io_thread {
  boost::asio::io_context context{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{context.get_executor()};
  std::thread thread{[this] { context.run(); }};

  ~io_thread() {
    work.reset();
    context.stop();
    if (thread.joinable()) thread.join();
  }
  void check_not_io_thread() const {
    // Blocking on the thread that must complete the operation would deadlock.
    if (std::this_thread::get_id() == thread.get_id())
      throw std::logic_error("redlock::client: blocking call made from its own I/O thread (use async())");
  }
};

namespace detail::sync_bridge {

namespace asio = boost::asio;
using boost::system::error_code;

// Validation messages are complete sentences; operation failures get the
// operation as context: "acquire 'jobs': lock not acquired: ...".
[[noreturn]] inline void throw_error(error_code ec, const std::string& what) { throw error(ec, what); }
[[noreturn]] inline void throw_failed(error_code ec, const std::string& operation) {
  throw error(ec, operation + ": " + ec.message());
}
// A failed acquisition also says what the masters said.
[[noreturn]] inline void throw_not_acquired(error_code ec, const std::string& name, std::shared_ptr<acquire_report> report) {
  std::string what = "acquire '" + name + "': " + ec.message();
  if (report && report->attempts > 0) {
    what += " (after " + std::to_string(report->attempts) + (report->attempts == 1 ? " attempt" : " attempts");
    if (!report->last_attempt.empty()) what += "; last: " + summarize(report->last_attempt);
    what += ")";
  }
  throw error(ec, what, std::move(report));
}

// The one blocking bridge: starts an operation of the async client (on its
// I/O thread) with a handler that hands its results to the waiting thread.
// A stop request on `stop` emits a terminal cancellation on the handler's
// slot. It is emitted on the client's strand (through `on_strand`): there
// the operation, started there before, has assigned its slot, and nothing
// touches the slot at the same time. The handler owns the signal (the slot
// lives in it).
template <typename... Results, typename OnStrand, typename Initiate>
std::tuple<Results...> wait_for(OnStrand on_strand, std::stop_token stop, Initiate&& initiate) {
  std::promise<std::tuple<Results...>> result;
  auto f = result.get_future();
  auto deliver = [&result](Results... r) { result.set_value(std::tuple<Results...>(std::move(r)...)); };
  if (!stop.stop_possible()) {
    initiate(deliver);
    return f.get();
  }
  auto signal = std::make_shared<asio::cancellation_signal>();
  initiate(asio::bind_cancellation_slot(signal->slot(), [deliver, signal](Results... r) { deliver(std::move(r)...); }));
  std::stop_callback on_stop(std::move(stop), [&on_strand, weak = std::weak_ptr(signal)] {
    on_strand([weak] {
      if (auto s = weak.lock()) s->emit(asio::cancellation_type::terminal);
    });
  });
  return f.get();
}

template <typename... Results, typename Initiate>
std::tuple<Results...> wait_for(Initiate&& initiate) {
  return wait_for<Results...>([](auto&&) {}, std::stop_token{}, std::forward<Initiate>(initiate));
}


inline const error_code cancelled = asio::error::operation_aborted;

}  // namespace detail::sync_bridge
}  // namespace redlock
