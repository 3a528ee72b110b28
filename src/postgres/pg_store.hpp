// SPDX-License-Identifier: Apache-2.0
// The state behind postgres_fenced_store and postgres_transaction, on one
// strand: a pool of connections, the fenced BEGIN, a transaction's
// statements and its end, write_row.
#pragma once

#include "pg_connection.hpp"

#include <redlock/postgres_fenced_store.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <string>

namespace redlock::detail {

class pg_transaction;

/// How the store's internal operations report: the code, a message naming
/// the problem (the sync API throws it), the value. Called on the strand.
template <typename... Values>
using pg_done = boost::asio::any_completion_handler<void(boost::system::error_code, std::string, Values...)>;

/// What comes next once a step is done (move-only: it may carry a handler).
using pg_then = boost::asio::any_completion_handler<void()>;

/// What an operation waits on now, so that a cancellation can stop it: a
/// connection (dropped) or a place in the pool's queue (left).
struct pg_stopper {
  std::function<void()> stop;
};

// Shared by the store's files (pg_store.cpp, pg_store_ops.cpp, pg_transaction.cpp).
/// Sets what a stop request runs (nothing: `f` empty); no-op without a stopper.
void stop_with(const std::shared_ptr<pg_stopper>& s, std::function<void()> f);
/// A cancellation drops the connection: the server then rolls back.
std::function<void()> dropping(const std::shared_ptr<pg_connection>& c);
bool connection_failed(const boost::system::error_code& ec);
/// The server's message, with its SQLSTATE when there is one.
std::string describe(const pg_reply& r);
/// The last statement's outcome, rows and columns, as the public type.
postgres_result to_result(pg_reply& r);

class pg_store : public std::enable_shared_from_this<pg_store> {
 public:
  pg_store(boost::asio::any_io_executor executor, pg_conninfo conninfo, const postgres_store_options& options);

  // On the strand, from here on.
  void begin(std::string resource, std::uint64_t token, std::shared_ptr<pg_stopper> stopper,
             pg_done<std::shared_ptr<pg_transaction>> done);
  void write_row(postgres_row row, std::uint64_t token, std::shared_ptr<pg_stopper> stopper, pg_done<> done);

  using lease_fn = pg_done<std::shared_ptr<pg_connection>, bool /*reused*/>;
  /// A connection for one user: an idle one, a new one, or the next one
  /// given back, before `deadline`. `reused`: it served someone before (a
  /// server restarted since would be found out at its first statement).
  void lease(pg_clock::time_point deadline, const std::shared_ptr<pg_stopper>& stopper, lease_fn done);
  /// The user is done with it: kept for the next if idle, closed otherwise.
  void give_back(std::shared_ptr<pg_connection> c);
  /// Ends the transaction `c` is in (ROLLBACK) if any, then gives it back.
  void roll_back_and_give_back(std::shared_ptr<pg_connection> c, pg_then then = {});
  /// Closes the idle connections (the server went away: they are dead too).
  void drop_idle();
  void shutdown();

  pg_clock::time_point deadline() const { return pg_clock::now() + options.timeout; }

  const boost::asio::any_io_executor executor;  // where the caller's handlers run
  const pg_strand strand;
  const pg_conninfo conninfo;
  const postgres_store_options options;
  const std::string fence_table;  // quoted

 private:
  struct waiter {
    lease_fn done;
    pg_clock::time_point deadline;
    std::shared_ptr<pg_stopper> stopper;
    boost::asio::steady_timer timer;
    bool served = false;
  };
  void open(pg_clock::time_point deadline, const std::shared_ptr<pg_stopper>& stopper, lease_fn done);
  void serve_waiters();

  std::vector<std::shared_ptr<pg_connection>> idle_;
  std::size_t open_ = 0;  // idle, in use or connecting: at most options.max_connections
  std::deque<std::shared_ptr<waiter>> waiters_;
  bool shut_ = false;
};

/// An open transaction's state (postgres_transaction is its handle).
class pg_transaction : public std::enable_shared_from_this<pg_transaction> {
 public:
  pg_transaction(std::shared_ptr<pg_store> store, std::shared_ptr<pg_connection> conn, std::string resource,
                 std::uint64_t token);

  // On the strand.
  void exec(std::string sql, std::vector<postgres_param> params, std::shared_ptr<pg_stopper> stopper,
            pg_done<postgres_result> done);
  void end(bool commit, std::shared_ptr<pg_stopper> stopper, pg_done<> done);
  /// The handle was dropped: roll back (after the statement in flight, if any).
  void abandon();

  const std::string resource;
  const std::uint64_t token;
  bool open() const noexcept { return state_ != state::ended; }  // read by the handle: see is_open()
  const pg_strand& strand() const noexcept { return store_->strand; }
  const boost::asio::any_io_executor& executor() const noexcept { return store_->executor; }

 private:
  enum class state { open, failed, ended };
  void ended();
  void roll_back_then(pg_then then);

  std::shared_ptr<pg_store> store_;
  std::shared_ptr<pg_connection> conn_;
  std::atomic<state> state_{state::open};
  bool busy_ = false;       // a statement (or the end) in flight
  bool abandoned_ = false;  // the handle is gone: roll back when the statement in flight completes
  boost::system::error_code failure_;  // the failed statement's, while state_ is failed
  std::string failure_message_;
};

}  // namespace redlock::detail
