// SPDX-License-Identifier: Apache-2.0
// redlock::postgres_fenced_store (CMake target redlock::postgres, built when
// libpq is installed; Debian: libpq-dev): the storage side of fencing in a
// PostgreSQL database. Two forms (docs/fencing.md, "PostgreSQL"):
//   - a transaction that first fences a per-resource row, so that a stale
//     token rolls back everything the caller meant to do in it
//     (begin / transact; the caller's statements run after the fence);
//   - one statement for one protected row that carries its own fence column
//     (write_row: an upsert that changes the row only if the token is >= the
//     one that wrote it last).
// A refused token is errc::stale_token, and nothing of the transaction or
// the statement is committed. libpq stays private: this header needs only
// Boost.
#pragma once

#include <redlock/export.hpp>

#include <redlock/error.hpp>
#include <redlock/options.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace redlock {

namespace detail {
class pg_store;
class pg_transaction;
}  // namespace detail

enum class postgres_isolation { read_committed, repeatable_read, serializable };

struct postgres_store_options {
  /// Bounds each step: waiting for a free connection, the connect, and each
  /// statement (BEGIN with the fence, each exec, COMMIT). A step that runs
  /// out drops its connection: its transaction is rolled back by the server
  /// (a COMMIT already sent has an unknown outcome: errc::timeout).
  milliseconds timeout{5000};
  /// The per-resource fence rows: (resource text PRIMARY KEY, token bigint
  /// NOT NULL). "table" or "schema.table", used exactly as written (quoted).
  std::string fence_table = "redlock_fences";
  /// Create fence_table (CREATE TABLE IF NOT EXISTS) when a fence finds it
  /// missing. Off: a missing table is an error (errc::server_error).
  bool create_fence_table = true;
  /// The isolation level of the transactions begin() opens.
  postgres_isolation isolation = postgres_isolation::read_committed;
  /// At most this many connections at once (idle ones are kept for reuse);
  /// a transaction beyond them waits for one, within `timeout`.
  std::size_t max_connections = 4;
  /// > 0: each connection asks the server to end a transaction left idle
  /// that long (idle_in_transaction_session_timeout), releasing its fence
  /// row: a holder paused inside its transaction then blocks newer holders
  /// for at most this long. 0: the server's own setting.
  milliseconds idle_in_transaction_timeout{0};
};

/// A statement parameter in text form (PostgreSQL converts it to the type
/// the statement needs), or NULL (std::nullopt).
using postgres_param = std::optional<std::string>;

/// What one statement returned.
struct postgres_result {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<std::string>>> rows;  ///< text form; std::nullopt is NULL
  std::uint64_t affected_rows = 0;  ///< rows inserted, updated, deleted or selected (PQcmdTuples)
  std::string command;              ///< the command tag, e.g. "UPDATE 1"
  std::string sqlstate;             ///< on failure: the SQLSTATE, e.g. "23505" (empty for a connection failure)
  std::string message;              ///< on failure: the server's or libpq's message
};

/// One protected row for write_row: written by one statement,
///   INSERT INTO table AS t (key_column, columns..., fence_column) VALUES (...)
///   ON CONFLICT (key_column) DO UPDATE SET columns... = EXCLUDED..., fence_column = EXCLUDED.fence_column
///    WHERE t.fence_column <= EXCLUDED.fence_column
/// Names are used exactly as written (quoted); `table` may be "schema.table".
struct postgres_row {
  std::string table;
  std::string key_column;  ///< the primary key, or a column with a unique index
  std::string key;         ///< the row's key, in text form
  std::vector<std::pair<std::string, postgres_param>> values;  ///< column, value
  std::string fence_column = "fence";                          ///< bigint: the token that wrote the row last
};

class postgres_transaction;

/// Thread-safe to call from any thread. Connects lazily, at the first
/// operation. Handlers run on the executor given to the constructor.
class REDLOCK_EXPORT postgres_fenced_store {
 public:
  using done_signature = void(boost::system::error_code);
  using begin_signature = void(boost::system::error_code, postgres_transaction);

  /// `conninfo`: a libpq connection string ("host=db port=5432 dbname=app
  /// user=app") or URI ("postgresql://app@db/app"). Throws redlock::error:
  /// errc::bad_uri when libpq cannot parse it (its message says why),
  /// errc::bad_option for an option out of range (named). Nothing is sent.
  postgres_fenced_store(boost::asio::any_io_executor executor, const std::string& conninfo,
                        const postgres_store_options& options = {});
  /// Closes the idle connections; transactions still open keep theirs until
  /// they end. Operations in flight complete (with errc::shutting_down if
  /// they were waiting for a connection).
  ~postgres_fenced_store();
  postgres_fenced_store(const postgres_fenced_store&) = delete;
  postgres_fenced_store& operator=(const postgres_fenced_store&) = delete;

  /// Opens a transaction fenced for `resource` with `token`:
  ///   BEGIN ISOLATION LEVEL ...;
  ///   INSERT INTO fence_table AS f (resource, token) VALUES ($resource, $token)
  ///   ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token WHERE f.token <= EXCLUDED.token;
  /// and completes with the open transaction when the fence row took the
  /// token; with errc::stale_token (rolled back, nothing done) when a newer
  /// token fenced it already. The fence row stays locked until the
  /// transaction ends, so a stale holder's transaction waits for ours and
  /// is then refused, and ours reads nothing a stale holder writes after.
  /// A serialization failure of the fence itself (REPEATABLE READ or
  /// SERIALIZABLE, after waiting for a concurrent holder) is retried here:
  /// nothing of the caller's had run. Bad input completes at once:
  /// errc::empty_name (empty resource), errc::bad_option (token 0, or above
  /// PostgreSQL's bigint). Per-operation cancellation (a bound cancellation
  /// slot) drops the connection: asio::error::operation_aborted.
  template <typename Token = boost::asio::deferred_t>
  auto async_begin(std::string resource, std::uint64_t token, Token&& t = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, begin_signature>(
        [this](auto handler, std::string r, std::uint64_t tok) { start_begin(std::move(r), tok, std::move(handler)); },
        t, std::move(resource), token);
  }
  /// Blocking forms (call them from a thread that is not running the
  /// executor). Throw redlock::error with the server's message.
  postgres_transaction begin(const std::string& resource, std::uint64_t token);
  postgres_transaction begin(const std::string& resource, std::uint64_t token, boost::system::error_code& ec);

  /// begin(), then body(transaction&), then commit() unless the body ended
  /// the transaction itself. An exception from the body rolls back and
  /// propagates; so does a stale token (redlock::error, errc::stale_token),
  /// before the body runs.
  template <typename Body>
  void transact(const std::string& resource, std::uint64_t token, Body&& body);
  /// The same, reporting redlock::error (from begin, commit or the body)
  /// through `ec`; other exceptions still propagate.
  template <typename Body>
  void transact(const std::string& resource, std::uint64_t token, Body&& body, boost::system::error_code& ec);

  /// Upserts one row that carries its own fence column (postgres_row), in
  /// one statement of its own: success when the row was written,
  /// errc::stale_token when its fence column holds a newer token (the row is
  /// left as it was). Retried on a serialization failure. Bad input
  /// completes at once with errc::bad_option (naming the problem), or
  /// errc::empty_name for an empty key.
  template <typename Token = boost::asio::deferred_t>
  auto async_write_row(postgres_row row, std::uint64_t token, Token&& t = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, done_signature>(
        [this](auto handler, postgres_row r, std::uint64_t tok) {
          start_write_row(std::move(r), tok, std::move(handler));
        },
        t, std::move(row), token);
  }
  void write_row(const postgres_row& row, std::uint64_t token);
  void write_row(const postgres_row& row, std::uint64_t token, boost::system::error_code& ec);

  /// The statement that fences a resource in begin() ($1 resource, $2 token).
  std::string fence_statement() const;
  /// The statement write_row sends for `row` ($1 key, then the values, then the token).
  static std::string row_statement(const postgres_row& row);

 private:
  void start_begin(std::string resource, std::uint64_t token,
                   boost::asio::any_completion_handler<begin_signature> handler);
  void start_write_row(postgres_row row, std::uint64_t token,
                       boost::asio::any_completion_handler<done_signature> handler);
  std::shared_ptr<detail::pg_store> impl_;
};

/// An open, fenced transaction: statements, then commit or rollback.
/// Move-only. Dropped while still open, it is rolled back. One statement at
/// a time: a second one started before the first completed is refused
/// (errc::bad_option). After a failed statement the transaction can only be
/// ended: commit() rolls back and reports that failure.
class REDLOCK_EXPORT postgres_transaction {
 public:
  using exec_signature = void(boost::system::error_code, postgres_result);
  using done_signature = void(boost::system::error_code);

  postgres_transaction() noexcept;
  postgres_transaction(postgres_transaction&& other) noexcept;
  postgres_transaction& operator=(postgres_transaction&& other) noexcept;
  ~postgres_transaction();

  /// Began and not yet committed or rolled back (a failed statement leaves
  /// it open, to be ended).
  bool is_open() const noexcept;
  explicit operator bool() const noexcept { return is_open(); }
  const std::string& resource() const noexcept;
  std::uint64_t token() const noexcept;

  /// Runs one statement ($1, $2, ... are `params`). On failure the result's
  /// sqlstate and message say why; the code is errc::serialization_failure
  /// for SQLSTATE 40001 and 40P01 (run the whole transaction again, with a
  /// fresh begin), errc::server_error for other errors the server reports,
  /// errc::timeout or errc::connection_lost when the connection was dropped.
  template <typename Token = boost::asio::deferred_t>
  auto async_exec(std::string sql, std::vector<postgres_param> params = {}, Token&& t = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, exec_signature>(
        [this](auto handler, std::string s, std::vector<postgres_param> p) {
          start_exec(std::move(s), std::move(p), std::move(handler));
        },
        t, std::move(sql), std::move(params));
  }
  postgres_result exec(const std::string& sql, const std::vector<postgres_param>& params = {});
  postgres_result exec(const std::string& sql, const std::vector<postgres_param>& params, boost::system::error_code& ec);

  /// COMMIT. Success means committed. After a failed statement: rolls back
  /// and reports that statement's error. errc::serialization_failure when
  /// the server refused to commit (SERIALIZABLE): nothing was committed. A
  /// connection lost or timed out while the COMMIT was on its way leaves the
  /// outcome unknown (errc::connection_lost, errc::timeout).
  template <typename Token = boost::asio::deferred_t>
  auto async_commit(Token&& t = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, done_signature>(
        [this](auto handler) { start_end(true, std::move(handler)); }, t);
  }
  void commit();
  void commit(boost::system::error_code& ec);

  /// ROLLBACK (nothing of the transaction is kept, whatever the outcome).
  template <typename Token = boost::asio::deferred_t>
  auto async_rollback(Token&& t = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, done_signature>(
        [this](auto handler) { start_end(false, std::move(handler)); }, t);
  }
  void rollback();

 private:
  friend class postgres_fenced_store;
  explicit postgres_transaction(std::shared_ptr<detail::pg_transaction> impl) noexcept;
  void start_exec(std::string sql, std::vector<postgres_param> params,
                  boost::asio::any_completion_handler<exec_signature> handler);
  void start_end(bool commit, boost::asio::any_completion_handler<done_signature> handler);
  void abandon() noexcept;
  std::shared_ptr<detail::pg_transaction> impl_;
};

template <typename Body>
void postgres_fenced_store::transact(const std::string& resource, std::uint64_t token, Body&& body) {
  postgres_transaction tx = begin(resource, token);
  std::forward<Body>(body)(tx);  // throws: tx's destructor rolls back
  if (tx.is_open()) tx.commit();
}

template <typename Body>
void postgres_fenced_store::transact(const std::string& resource, std::uint64_t token, Body&& body,
                                     boost::system::error_code& ec) {
  try {
    transact(resource, token, std::forward<Body>(body));
    ec = {};
  } catch (const error& e) {
    ec = e.code();
  }
}

}  // namespace redlock
