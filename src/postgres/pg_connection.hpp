// SPDX-License-Identifier: Apache-2.0
// One libpq connection driven without blocking on the store's strand:
// libpq's non-blocking calls (PQconnectPoll, PQsendQuery*, PQflush,
// PQconsumeInput, PQisBusy/PQgetResult), woken by Asio waits on PQsocket.
// No thread of its own, and none per call.
#pragma once

#include <redlock/error.hpp>
#include <redlock/postgres_fenced_store.hpp>

#include <libpq-fe.h>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

using pg_strand = boost::asio::strand<boost::asio::any_io_executor>;
using pg_clock = std::chrono::steady_clock;

/// What libpq connects with (PQconnectStartParams): the caller's string,
/// parsed, plus our session settings.
struct pg_conninfo {
  std::vector<std::string> keywords, values;
};
/// Throws redlock::error(bad_uri) with libpq's reason when it cannot parse
/// `conninfo` (PQconninfoParse).
pg_conninfo parse_conninfo(const std::string& conninfo, milliseconds idle_in_transaction_timeout);

struct pg_result_free {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using pg_result_ptr = std::unique_ptr<PGresult, pg_result_free>;

/// What one query gave back: each statement's result, and the first failure.
struct pg_reply {
  boost::system::error_code ec;
  std::string sqlstate;  ///< of the failure; empty for a connection failure
  std::string message;   ///< of the failure
  std::vector<pg_result_ptr> results;
  /// Rows the i-th statement affected (PQcmdTuples); 0 when there is none.
  std::uint64_t affected(std::size_t i) const;
  /// The i-th statement's command tag ("COMMIT", "UPDATE 1"); empty when none.
  std::string command(std::size_t i) const;
};

/// Every member runs on the strand; one operation at a time.
class pg_connection : public std::enable_shared_from_this<pg_connection> {
 public:
  using done_fn = boost::asio::any_completion_handler<void(pg_reply)>;

  explicit pg_connection(pg_strand strand);
  ~pg_connection();
  pg_connection(const pg_connection&) = delete;
  pg_connection& operator=(const pg_connection&) = delete;

  /// Connects (done: no results; ec errc::not_connected, or timeout).
  void connect(const pg_conninfo& info, pg_clock::time_point deadline, done_fn done);
  /// Simple query protocol: `sql` may hold several statements, no parameters.
  void query(const std::string& sql, pg_clock::time_point deadline, done_fn done);
  /// One statement, parameters in text form (extended protocol).
  void query(const std::string& sql, const std::vector<postgres_param>& params, pg_clock::time_point deadline,
             done_fn done);
  /// Drops the connection now; the operation in flight completes with `why`.
  /// The server rolls back the transaction it was in (a COMMIT already sent
  /// may have committed).
  void abort(boost::system::error_code why, const std::string& message);

  bool connected() const noexcept { return conn_ && PQstatus(conn_) == CONNECTION_OK; }
  /// Connected, nothing in flight, and in no transaction: fit for the next user.
  bool idle() const noexcept;
  /// Inside a transaction (open, or failed and waiting for its ROLLBACK).
  bool in_transaction() const noexcept;
  /// `text` as an SQL string literal in this connection's encoding
  /// (PQescapeLiteral); empty when it is not valid text there.
  std::optional<std::string> literal(std::string_view text) const;
  /// The server process serving this connection (for tests and logs).
  int backend_pid() const noexcept { return conn_ ? PQbackendPID(conn_) : 0; }

 private:
  void start(pg_clock::time_point deadline, done_fn done);
  void finish(pg_reply reply);
  void fail(errc code, std::string message);
  void fail_from_libpq(errc code);
  void close() noexcept;
  void watch_socket();
  void connect_step();
  void flush();
  void read();
  bool collect(PGresult* r);
  // A wait's handler: false when its operation is over (finished, aborted)
  // or the wait failed (then the operation fails).
  bool still_current(std::uint64_t op, const boost::system::error_code& ec);

  pg_strand strand_;
  PGconn* conn_ = nullptr;
  boost::asio::posix::stream_descriptor socket_;  // PQsocket, released (never closed) by us
  boost::asio::steady_timer timer_;
  PostgresPollingStatusType polling_ = PGRES_POLLING_WRITING;
  std::uint64_t op_ = 0;  // the operation in flight (waits and the timer carry theirs)
  done_fn done_;          // set while an operation is in flight
  pg_reply reply_;
};

}  // namespace redlock::detail
