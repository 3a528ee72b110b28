// SPDX-License-Identifier: Apache-2.0
// What the PostgreSQL tests share: one server per test program, an
// io_context on a thread of its own for a store, and a plain blocking libpq
// session for the test's own transactions.
#pragma once

#include "masters.hpp"

#include <postgres_process.hpp>

#include <libpq-fe.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace redlock::testing {

/// Started at first use (initdb takes a second or two), stopped at exit.
/// client_connection_check_interval: a session whose client vanished ends
/// within 100 ms even while its statement runs, so the tests can see that
/// what it did was rolled back.
inline postgres_process& postgres_server() {
  static postgres_process server({.settings = {"client_connection_check_interval=100"}});
  return server;
}

/// An io_context run by one thread of its own (a store's executor).
class io_thread {
 public:
  io_thread() : work_(boost::asio::make_work_guard(ioc_)), thread_([this] { ioc_.run(); }) {}
  ~io_thread() {
    work_.reset();  // the stores are gone by now: nothing may be left waiting
    thread_.join();
  }
  boost::asio::any_io_executor executor() { return ioc_.get_executor(); }

 private:
  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

/// One blocking libpq session.
class raw_session {
 public:
  struct outcome {
    std::string sqlstate, message;  // set on an error
    std::uint64_t affected = 0;
  };

  explicit raw_session(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) {
      std::string why = PQerrorMessage(conn_);
      PQfinish(conn_);
      throw std::runtime_error("raw_session: " + why);
    }
  }
  ~raw_session() { PQfinish(conn_); }
  raw_session(const raw_session&) = delete;
  raw_session& operator=(const raw_session&) = delete;

  /// Runs `sql`; throws on an error.
  outcome exec(const std::string& sql) {
    send(sql);
    auto r = result();
    if (!r.sqlstate.empty()) throw std::runtime_error("raw_session: " + sql + ": " + r.message);
    return r;
  }
  /// Sends `sql` without waiting; result() waits for its outcome.
  void send(const std::string& sql) {
    if (!PQsendQuery(conn_, sql.c_str())) throw std::runtime_error("raw_session: " + std::string(PQerrorMessage(conn_)));
  }
  outcome result() {
    outcome out;
    while (PGresult* r = PQgetResult(conn_)) {
      if (PQresultStatus(r) == PGRES_FATAL_ERROR) {
        const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        out.sqlstate = state ? state : "?";
        out.message = PQresultErrorMessage(r);
      } else if (const char* n = PQcmdTuples(r); *n) {
        out.affected = std::stoull(n);
      }
      PQclear(r);
    }
    return out;
  }

 private:
  PGconn* conn_;
};

}  // namespace redlock::testing
