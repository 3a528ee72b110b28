// The RedLock mutex: SET NX PX with a random token, compare-and-delete
// release, compare-and-pexpire extend, each run on all masters through the
// quorum coordinator.
#pragma once

#include "client/client_impl.hpp"

#include <redlock/async_client.hpp>

namespace redlock::detail {

using acquire_handler = boost::asio::any_completion_handler<async_client::acquire_signature>;
using done_handler = boost::asio::any_completion_handler<async_client::done_signature>;

void start_mutex_acquire(std::shared_ptr<client_impl> client, std::string name, acquire_options options,
                         acquire_handler handler);
void start_mutex_release(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state,
                         done_handler handler);
void start_mutex_extend(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state,
                        milliseconds ttl, done_handler handler);

void start_status(std::shared_ptr<client_impl> client, std::string name,
                  boost::asio::any_completion_handler<async_client::status_signature> handler);

/// Extends `state` to `ttl` through the quorum and moves its validity window;
/// `done` gets errc::not_held when the token is gone from a quorum.
void run_extend(const std::shared_ptr<client_impl>& client, const std::shared_ptr<lock_state>& state, milliseconds ttl,
                std::function<void(boost::system::error_code)> done);

/// Sends the release to every master and forgets about it (used after a failed
/// attempt: partial holds must not block contenders until their TTL ends).
void release_everywhere(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& token);

}  // namespace redlock::detail
