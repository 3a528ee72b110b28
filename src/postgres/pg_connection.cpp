// SPDX-License-Identifier: Apache-2.0
#include "pg_connection.hpp"

#include "pg_sql.hpp"

#include <boost/asio/error.hpp>

#include <charconv>

namespace redlock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

std::string trimmed(const char* text) {
  std::string s = text ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

pg_conninfo parse_conninfo(const std::string& conninfo, milliseconds idle_in_transaction_timeout) {
  char* why = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &why);
  if (!parsed) {
    std::string reason = why ? trimmed(why) : "out of memory";
    if (why) PQfreemem(why);
    throw error(errc::bad_uri, "postgres_fenced_store: libpq cannot parse the connection string: " + reason);
  }
  pg_conninfo info;
  for (auto* o = parsed; o->keyword; ++o) {
    if (!o->val) continue;  // libpq's defaults (environment, service file) apply
    info.keywords.emplace_back(o->keyword);
    info.values.emplace_back(o->val);
  }
  PQconninfoFree(parsed);
  auto value_of = [&](const std::string& keyword) -> std::string* {
    for (std::size_t i = 0; i < info.keywords.size(); ++i)
      if (info.keywords[i] == keyword) return &info.values[i];
    info.keywords.push_back(keyword);
    info.values.emplace_back();
    return &info.values.back();
  };
  // Shows in pg_stat_activity unless the caller named its application.
  *value_of("fallback_application_name") = "redlock-fenced-store";
  if (idle_in_transaction_timeout > milliseconds(0)) {
    auto* options = value_of("options");  // the caller's own -c settings stay
    if (!options->empty()) *options += ' ';
    *options += "-c idle_in_transaction_session_timeout=" + std::to_string(idle_in_transaction_timeout.count());
  }
  return info;
}

std::uint64_t pg_reply::affected(std::size_t i) const {
  if (i >= results.size()) return 0;
  const char* n = PQcmdTuples(results[i].get());
  std::uint64_t v = 0;
  std::from_chars(n, n + std::char_traits<char>::length(n), v);
  return v;
}

std::string pg_reply::command(std::size_t i) const {
  return i < results.size() ? std::string(PQcmdStatus(results[i].get())) : std::string();
}

pg_connection::pg_connection(pg_strand strand) : strand_(strand), socket_(strand), timer_(strand) {}

pg_connection::~pg_connection() { close(); }

void pg_connection::close() noexcept {
  if (socket_.is_open()) socket_.release();  // the descriptor is libpq's to close
  if (conn_) {
    PQfinish(conn_);
    conn_ = nullptr;
  }
}

bool pg_connection::idle() const noexcept {
  return !done_ && connected() && PQtransactionStatus(conn_) == PQTRANS_IDLE;
}

bool pg_connection::in_transaction() const noexcept {
  if (!connected()) return false;
  auto s = PQtransactionStatus(conn_);
  return s == PQTRANS_INTRANS || s == PQTRANS_INERROR;
}

std::optional<std::string> pg_connection::literal(std::string_view text) const {
  if (!conn_) return std::nullopt;
  char* escaped = PQescapeLiteral(conn_, text.data(), text.size());
  if (!escaped) return std::nullopt;
  std::string out(escaped);
  PQfreemem(escaped);
  return out;
}

void pg_connection::start(pg_clock::time_point deadline, done_fn done) {
  // Not `done_ = std::move(done)`: Boost 1.81's move assignment of an
  // any_completion_handler wraps the handler in itself, without end.
  done_.swap(done);
  reply_ = {};
  auto op = ++op_;
  timer_.expires_at(deadline);
  timer_.async_wait([self = shared_from_this(), op](const error_code& ec) {
    if (ec || op != self->op_ || !self->done_) return;
    self->abort(errc::timeout, "no answer from PostgreSQL within the timeout");
  });
}

void pg_connection::finish(pg_reply reply) {
  timer_.cancel();
  auto done = std::move(done_);
  done_ = nullptr;
  ++op_;  // waits still pending belong to the finished operation
  std::move(done)(std::move(reply));
}

void pg_connection::fail(errc code, std::string message) {
  close();
  pg_reply r;
  r.ec = code;
  r.message = std::move(message);
  finish(std::move(r));
}

void pg_connection::fail_from_libpq(errc code) {
  fail(code, conn_ ? trimmed(PQerrorMessage(conn_)) : std::string("no connection"));
}

void pg_connection::abort(error_code why, const std::string& message) {
  close();  // cancels the pending wait, which then finds its operation over
  if (!done_) return;
  pg_reply r;
  r.ec = why;
  r.message = message;
  finish(std::move(r));
}

bool pg_connection::still_current(std::uint64_t op, const error_code& ec) {
  if (op != op_ || !done_) return false;
  if (ec) {
    fail(errc::connection_lost, "waiting on the PostgreSQL socket failed: " + ec.message());
    return false;
  }
  return true;
}

void pg_connection::watch_socket() {
  // libpq may change sockets while connecting (another address, a retry
  // without SSL), and a new one can reuse the old number: take it afresh.
  if (socket_.is_open()) socket_.release();
  int fd = PQsocket(conn_);
  if (fd >= 0) socket_.assign(fd);
}

void pg_connection::connect(const pg_conninfo& info, pg_clock::time_point deadline, done_fn done) {
  start(deadline, std::move(done));
  std::vector<const char*> keywords, values;
  for (std::size_t i = 0; i < info.keywords.size(); ++i) {
    keywords.push_back(info.keywords[i].c_str());
    values.push_back(info.values[i].c_str());
  }
  keywords.push_back(nullptr);
  values.push_back(nullptr);
  conn_ = PQconnectStartParams(keywords.data(), values.data(), 0);
  if (!conn_) return fail(errc::not_connected, "libpq could not allocate a connection");
  // Notices (e.g. CREATE TABLE IF NOT EXISTS on a table that exists) are not
  // errors; libpq would print them on stderr.
  PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
  if (PQstatus(conn_) == CONNECTION_BAD) return fail_from_libpq(errc::not_connected);
  polling_ = PGRES_POLLING_WRITING;  // libpq's protocol: as if PQconnectPoll had said so
  connect_step();
}

void pg_connection::connect_step() {
  watch_socket();
  if (!socket_.is_open()) return fail_from_libpq(errc::not_connected);
  auto what = polling_ == PGRES_POLLING_READING ? asio::posix::stream_descriptor::wait_read
                                                : asio::posix::stream_descriptor::wait_write;
  socket_.async_wait(what, [self = shared_from_this(), op = op_](const error_code& ec) {
    if (!self->still_current(op, ec)) return;
    self->polling_ = PQconnectPoll(self->conn_);
    if (self->polling_ == PGRES_POLLING_FAILED) return self->fail_from_libpq(errc::not_connected);
    if (self->polling_ != PGRES_POLLING_OK) return self->connect_step();
    if (PQsetnonblocking(self->conn_, 1) != 0) return self->fail_from_libpq(errc::not_connected);
    self->watch_socket();
    self->finish({});
  });
}

void pg_connection::query(const std::string& sql, pg_clock::time_point deadline, done_fn done) {
  start(deadline, std::move(done));
  if (!connected()) return fail(errc::not_connected, "the connection to PostgreSQL is closed");
  if (!PQsendQuery(conn_, sql.c_str())) return fail_from_libpq(errc::connection_lost);
  flush();
}

void pg_connection::query(const std::string& sql, const std::vector<postgres_param>& params,
                          pg_clock::time_point deadline, done_fn done) {
  start(deadline, std::move(done));
  if (!connected()) return fail(errc::not_connected, "the connection to PostgreSQL is closed");
  std::vector<const char*> values;
  for (auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  // libpq copies the values into its output buffer before returning.
  if (!PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                         nullptr, 0))
    return fail_from_libpq(errc::connection_lost);
  flush();
}

void pg_connection::flush() {
  int pending = PQflush(conn_);
  if (pending < 0) return fail_from_libpq(errc::connection_lost);
  if (pending == 0) return read();
  socket_.async_wait(asio::posix::stream_descriptor::wait_write,
                     [self = shared_from_this(), op = op_](const error_code& ec) {
                       if (!self->still_current(op, ec)) return;
                       // The server may be sending while we send: keep its bytes
                       // moving so that neither side blocks on a full buffer.
                       if (!PQconsumeInput(self->conn_)) return self->fail_from_libpq(errc::connection_lost);
                       self->flush();
                     });
}

void pg_connection::read() {
  while (!PQisBusy(conn_)) {
    PGresult* r = PQgetResult(conn_);
    if (!r) return finish(std::move(reply_));
    if (!collect(r)) return;
  }
  socket_.async_wait(asio::posix::stream_descriptor::wait_read,
                     [self = shared_from_this(), op = op_](const error_code& ec) {
                       if (!self->still_current(op, ec)) return;
                       if (!PQconsumeInput(self->conn_)) return self->fail_from_libpq(errc::connection_lost);
                       self->read();
                     });
}

bool pg_connection::collect(PGresult* r) {
  pg_result_ptr result(r);
  switch (PQresultStatus(r)) {
    case PGRES_COPY_IN:
    case PGRES_COPY_OUT:
    case PGRES_COPY_BOTH:
      // The store has no COPY data to send or take: end the session.
      fail(errc::server_error, "COPY is not supported by postgres_fenced_store");
      return false;
    case PGRES_FATAL_ERROR:
    case PGRES_BAD_RESPONSE:
      if (!reply_.ec) {
        const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        reply_.sqlstate = state ? state : "";
        // No SQLSTATE: libpq's own error (the connection failed mid-query).
        reply_.ec = state ? pg_sql::classify_sqlstate(reply_.sqlstate) : make_error_code(errc::connection_lost);
        const char* primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        reply_.message = primary ? primary : trimmed(PQresultErrorMessage(r));
        if (const char* detail = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL))
          reply_.message += std::string(" (") + detail + ")";
      }
      break;
    default:
      break;
  }
  reply_.results.push_back(std::move(result));
  return true;
}

}  // namespace redlock::detail
