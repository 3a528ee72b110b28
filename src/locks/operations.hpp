// SPDX-License-Identifier: Apache-2.0
// The lock operations behind async_client: acquire (every kind, with
// retries, re-entry, fencing, wake-ups), release, extend, status. All run on
// the client's strand.
#pragma once

#include "locks/client_impl.hpp"
#include "lease/lock_state.hpp"

#include <redlock/signatures.hpp>

#include <boost/asio/any_completion_handler.hpp>

namespace redlock::detail {

using acquire_handler = boost::asio::any_completion_handler<acquire_signature>;
using done_handler = boost::asio::any_completion_handler<done_signature>;
using status_handler = boost::asio::any_completion_handler<status_signature>;

/// `asked_at`: the caller's wall clock when it asked (a fair waiter's place in line).
void start_acquire(std::shared_ptr<client_impl> client, std::string name, acquire_options options,
                   std::chrono::system_clock::time_point asked_at, acquire_handler handler);
/// The acquisition that headed `line` (client_impl::owner_lines) ended: the
/// same owner's acquisitions waiting behind it start again, in order.
void end_owner_line(const std::shared_ptr<client_impl>& client, const std::string& line);
/// One more level of `held`, a hold this owner already has (reentry.cpp).
void start_reentry(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> held, acquire_options options,
                   acquire_handler handler);
void start_release(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state, done_handler handler);
void start_extend(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state, milliseconds ttl,
                  done_handler handler);
void start_status(std::shared_ptr<client_impl> client, std::string name, status_handler handler);
/// The admin tools (admin.cpp): the lock names on every master, and a
/// forced release of one name.
void start_list(std::shared_ptr<client_impl> client, list_options options,
                boost::asio::any_completion_handler<list_signature> handler);
void start_force_release(std::shared_ptr<client_impl> client, std::string name, std::optional<key_content> only,
                         boost::asio::any_completion_handler<force_release_signature> handler);

/// Extends `state` to `ttl` through the quorum and moves its validity window;
/// `done` gets errc::not_held when the token is gone from a quorum.
void run_extend(const std::shared_ptr<client_impl>& client, const std::shared_ptr<lock_state>& state, milliseconds ttl,
                std::function<void(boost::system::error_code)> done);

/// The client's initiating functions under way on this thread. They start
/// their operation with dispatch, so one called from a handler that runs on
/// the client's strand runs its operation inside the call; an outcome known
/// at once (a release of a lock already released) must then not call the
/// handler before the call returns, which an Asio initiating function never
/// does. (post instead of dispatch would cost every operation an extra
/// scheduler operation, and its allocation.)
inline thread_local int initiations_under_way = 0;
struct initiation {
  initiation() noexcept { ++initiations_under_way; }
  ~initiation() { --initiations_under_way; }
  initiation(const initiation&) = delete;
  initiation& operator=(const initiation&) = delete;
};

/// Completes `handler` on its associated executor: inline when that is
/// ours, posted when an initiating function is under way on this thread.
template <typename Handler, typename... Args>
void complete_handler(const std::shared_ptr<client_impl>& client, Handler handler, Args&&... args);

}  // namespace redlock::detail

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

template <typename Handler, typename... Args>
void redlock::detail::complete_handler(const std::shared_ptr<client_impl>& client, Handler handler, Args&&... args) {
  auto completion = boost::asio::append(std::move(handler), std::forward<Args>(args)...);
  if (initiations_under_way > 0)
    boost::asio::post(client->executor, std::move(completion));  // then the handler's own executor
  else
    boost::asio::dispatch(client->completion_executor, std::move(completion));
}
