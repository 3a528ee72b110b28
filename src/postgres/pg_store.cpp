// SPDX-License-Identifier: Apache-2.0
#include "pg_store.hpp"

#include "pg_sql.hpp"

#include <boost/asio/error.hpp>

namespace redlock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

void stop_with(const std::shared_ptr<pg_stopper>& s, std::function<void()> f) {
  if (s) s->stop = std::move(f);
}

// A cancellation drops the connection: the server then rolls back.
std::function<void()> dropping(const std::shared_ptr<pg_connection>& c) {
  return [weak = std::weak_ptr<pg_connection>(c)] {
    if (auto conn = weak.lock()) conn->abort(asio::error::operation_aborted, "cancelled");
  };
}

bool connection_failed(const error_code& ec) { return ec == errc::connection_lost || ec == errc::not_connected; }

std::string describe(const pg_reply& r) {
  return r.sqlstate.empty() ? r.message : r.message + " (SQLSTATE " + r.sqlstate + ")";
}

postgres_result to_result(pg_reply& r) {
  postgres_result out;
  out.sqlstate = r.sqlstate;
  out.message = r.message;
  if (r.results.empty()) return out;
  PGresult* res = r.results.back().get();
  out.command = PQcmdStatus(res);
  out.affected_rows = r.affected(r.results.size() - 1);
  if (PQresultStatus(res) != PGRES_TUPLES_OK) return out;
  int columns = PQnfields(res), rows = PQntuples(res);
  for (int c = 0; c < columns; ++c) out.columns.emplace_back(PQfname(res, c));
  out.rows.reserve(static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i) {
    auto& row = out.rows.emplace_back();
    for (int c = 0; c < columns; ++c)
      if (PQgetisnull(res, i, c))
        row.emplace_back(std::nullopt);
      else
        row.emplace_back(std::string(PQgetvalue(res, i, c), static_cast<std::size_t>(PQgetlength(res, i, c))));
  }
  // A SELECT's tag counts its rows too; keep affected_rows meaningful for it.
  if (out.affected_rows == 0) out.affected_rows = static_cast<std::uint64_t>(rows);
  return out;
}

// Takes a connection, fences the resource inside a new transaction, and
// hands the transaction over; retries what is safe to retry (nothing of the
// caller's has run): a serialization failure of the fence, an idle
// connection the server had closed, a missing fence table once created.
class begin_op : public std::enable_shared_from_this<begin_op> {
 public:
  begin_op(std::shared_ptr<pg_store> store, std::string resource, std::uint64_t token,
           std::shared_ptr<pg_stopper> stopper, pg_done<std::shared_ptr<pg_transaction>> done)
      : store_(std::move(store)), resource_(std::move(resource)), token_(token), stopper_(std::move(stopper)),
        done_(std::move(done)) {}

  void start() {
    retry_until_ = store_->deadline();
    lease();
  }

 private:
  void lease() {
    store_->lease(store_->deadline(), stopper_,
                  [self = shared_from_this()](error_code ec, std::string why, std::shared_ptr<pg_connection> c,
                                              bool reused) {
                    if (ec) return self->complete(ec, "no connection to PostgreSQL: " + why);
                    self->conn_ = std::move(c);
                    self->reused_ = reused;
                    self->fence();
                  });
  }

  void fence() {
    auto resource = conn_->literal(resource_);
    if (!resource)
      return give_up(errc::bad_option, "the resource '" + resource_ + "' is not valid text in the database's encoding");
    stop_with(stopper_, dropping(conn_));
    // BEGIN and the fence in one round trip (simple query protocol, hence
    // the escaped literal rather than a parameter).
    auto sql = pg_sql::begin_statement(store_->options.isolation) + "; " +
               pg_sql::fence_statement(store_->fence_table, *resource, std::to_string(token_));
    conn_->query(sql, store_->deadline(), [self = shared_from_this()](pg_reply r) { self->fenced(std::move(r)); });
  }

  void fenced(pg_reply r) {
    if (!r.ec) {
      if (r.affected(1) == 1)
        return complete({}, {}, std::make_shared<pg_transaction>(store_, std::move(conn_), resource_, token_));
      return give_up(errc::stale_token, "fencing token " + std::to_string(token_) +
                                            " is older than the one resource '" + resource_ +
                                            "' was fenced with: refused, nothing done");
    }
    if (connection_failed(r.ec) && reused_) {
      // An idle connection the server had closed (a restart, a timeout):
      // nothing was committed through it. The other idle ones are likely
      // dead too.
      store_->give_back(std::move(conn_));
      store_->drop_idle();
      return lease();
    }
    if (pg_sql::is_serialization_failure(r.sqlstate) && pg_clock::now() < retry_until_) {
      // REPEATABLE READ or SERIALIZABLE: the fence row changed after our
      // snapshot (we waited for a concurrent holder's transaction). Only the
      // fence ran: begin again, with a new snapshot.
      return roll_back([self = shared_from_this()] { self->fence(); });
    }
    if (pg_sql::is_undefined_table(r.sqlstate) && store_->options.create_fence_table && !created_table_) {
      created_table_ = true;
      return roll_back([self = shared_from_this()] { self->create_table(); });
    }
    give_up(r.ec, "fencing resource '" + resource_ + "' with token " + std::to_string(token_) + ": " + describe(r));
  }

  void create_table() {
    conn_->query(pg_sql::create_fence_table(store_->fence_table), store_->deadline(),
                 [self = shared_from_this()](pg_reply r) {
                   if (r.ec && !pg_sql::is_table_created_concurrently(r.sqlstate))
                     return self->give_up(r.ec, "creating the fence table " + self->store_->fence_table + ": " +
                                                    describe(r));
                   self->fence();
                 });
  }

  // ROLLBACK, keeping the connection for `then`.
  void roll_back(pg_then then) {
    conn_->query("ROLLBACK", store_->deadline(), [self = shared_from_this(), then = std::move(then)](pg_reply r) mutable {
      if (r.ec) return self->give_up(r.ec, "ROLLBACK before trying again failed: " + describe(r));
      std::move(then)();
    });
  }

  // Ends the transaction (ROLLBACK) before reporting, so that when the
  // caller hears of the failure the server has forgotten the attempt.
  void give_up(error_code ec, std::string why) {
    stop_with(stopper_, nullptr);
    store_->roll_back_and_give_back(std::move(conn_), [self = shared_from_this(), ec, why = std::move(why)]() mutable {
      self->complete(ec, std::move(why));
    });
  }

  void complete(error_code ec, std::string why, std::shared_ptr<pg_transaction> tx = nullptr) {
    stop_with(stopper_, nullptr);
    std::move(done_)(ec, std::move(why), std::move(tx));
  }

  std::shared_ptr<pg_store> store_;
  std::string resource_;
  std::uint64_t token_;
  std::shared_ptr<pg_stopper> stopper_;
  pg_done<std::shared_ptr<pg_transaction>> done_;
  std::shared_ptr<pg_connection> conn_;
  bool reused_ = false, created_table_ = false;
  pg_clock::time_point retry_until_;
};

// write_row: one statement in a transaction of its own (autocommit).
class row_op : public std::enable_shared_from_this<row_op> {
 public:
  row_op(std::shared_ptr<pg_store> store, std::string sql, std::vector<postgres_param> params, std::string what,
         std::shared_ptr<pg_stopper> stopper, pg_done<> done)
      : store_(std::move(store)), sql_(std::move(sql)), params_(std::move(params)), what_(std::move(what)),
        stopper_(std::move(stopper)), done_(std::move(done)) {}

  void start() {
    retry_until_ = store_->deadline();
    lease();
  }

 private:
  void lease() {
    store_->lease(store_->deadline(), stopper_,
                  [self = shared_from_this()](error_code ec, std::string why, std::shared_ptr<pg_connection> c,
                                              bool reused) {
                    if (ec) return self->complete(ec, "no connection to PostgreSQL: " + why);
                    self->conn_ = std::move(c);
                    self->reused_ = reused;
                    self->send();
                  });
  }

  void send() {
    stop_with(stopper_, dropping(conn_));
    conn_->query(sql_, params_, store_->deadline(), [self = shared_from_this()](pg_reply r) { self->sent(std::move(r)); });
  }

  void sent(pg_reply r) {
    if (connection_failed(r.ec) && reused_) {
      // Writing the same values with the same token again is harmless if
      // the first one landed after all: the fence column allows equal tokens.
      store_->give_back(std::move(conn_));
      store_->drop_idle();
      return lease();
    }
    if (pg_sql::is_serialization_failure(r.sqlstate) && pg_clock::now() < retry_until_) return send();
    store_->give_back(std::move(conn_));
    if (r.ec) return complete(r.ec, what_ + ": " + describe(r));
    if (r.affected(0) != 1)
      return complete(errc::stale_token, what_ + ": the row holds a newer fencing token: refused, left as it was");
    complete({}, {});
  }

  void complete(error_code ec, std::string why) {
    stop_with(stopper_, nullptr);
    std::move(done_)(ec, std::move(why));
  }

  std::shared_ptr<pg_store> store_;
  std::string sql_;
  std::vector<postgres_param> params_;
  std::string what_;
  std::shared_ptr<pg_stopper> stopper_;
  pg_done<> done_;
  std::shared_ptr<pg_connection> conn_;
  bool reused_ = false;
  pg_clock::time_point retry_until_;
};

}  // namespace

// ---- the store ----------------------------------------------------------------

pg_store::pg_store(asio::any_io_executor ex, pg_conninfo info, const postgres_store_options& o)
    : executor(ex),
      strand(asio::make_strand(ex)),
      conninfo(std::move(info)),
      options(o),
      fence_table(pg_sql::qualified_name(o.fence_table, "postgres_store_options::fence_table")) {}

void pg_store::begin(std::string resource, std::uint64_t token, std::shared_ptr<pg_stopper> stopper,
                     pg_done<std::shared_ptr<pg_transaction>> done) {
  if (auto refused = pg_sql::check_fence_input("resource", resource, token))
    return std::move(done)(refused.code, std::move(refused.message), nullptr);
  std::make_shared<begin_op>(shared_from_this(), std::move(resource), token, std::move(stopper), std::move(done))
      ->start();
}

void pg_store::write_row(postgres_row row, std::uint64_t token, std::shared_ptr<pg_stopper> stopper, pg_done<> done) {
  if (auto refused = pg_sql::check_fence_input("postgres_row::key", row.key, token))
    return std::move(done)(refused.code, std::move(refused.message));
  std::string sql;
  try {
    sql = pg_sql::row_statement(row);
  } catch (const error& e) {
    return std::move(done)(e.code(), e.what());
  }
  std::vector<postgres_param> params;
  params.emplace_back(row.key);
  for (auto& [column, value] : row.values) params.push_back(std::move(value));
  params.emplace_back(std::to_string(token));
  auto what = "writing row '" + row.key + "' of " + row.table + " with token " + std::to_string(token);
  std::make_shared<row_op>(shared_from_this(), std::move(sql), std::move(params), std::move(what), std::move(stopper),
                           std::move(done))
      ->start();
}

void pg_store::lease(pg_clock::time_point deadline, const std::shared_ptr<pg_stopper>& stopper, lease_fn done) {
  if (shut_) return std::move(done)(errc::shutting_down, "the store is being destroyed", nullptr, false);
  while (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    if (c->idle()) return std::move(done)(error_code{}, std::string{}, std::move(c), true);
    --open_;
  }
  if (open_ < options.max_connections) return open(deadline, stopper, std::move(done));
  auto w = std::make_shared<waiter>(waiter{std::move(done), deadline, stopper, asio::steady_timer(strand), false});
  waiters_.push_back(w);
  auto leave = [this, self = shared_from_this(), weak = std::weak_ptr<waiter>(w)](error_code why, std::string text) {
    auto w = weak.lock();
    if (!w || w->served) return;
    w->served = true;
    std::erase(waiters_, w);
    std::move(w->done)(why, std::move(text), nullptr, false);
  };
  w->timer.expires_at(deadline);
  w->timer.async_wait([leave, n = options.max_connections](const error_code& ec) {
    if (!ec)
      leave(errc::timeout, "no connection came free within the timeout (all " + std::to_string(n) + " in use)");
  });
  stop_with(stopper, [leave] { leave(asio::error::operation_aborted, "cancelled"); });
}

void pg_store::open(pg_clock::time_point deadline, const std::shared_ptr<pg_stopper>& stopper, lease_fn done) {
  ++open_;
  auto c = std::make_shared<pg_connection>(strand);
  stop_with(stopper, dropping(c));
  c->connect(conninfo, deadline, [self = shared_from_this(), c, done = std::move(done)](pg_reply r) mutable {
    if (r.ec) {
      --self->open_;
      self->serve_waiters();  // a place came free
      return std::move(done)(r.ec, std::move(r.message), nullptr, false);
    }
    std::move(done)(error_code{}, std::string{}, std::move(c), false);
  });
}

void pg_store::give_back(std::shared_ptr<pg_connection> c) {
  if (!c) return;
  if (shut_ || !c->idle()) {
    c->abort(errc::shutting_down, "closed");
    --open_;
  } else {
    idle_.push_back(std::move(c));
  }
  serve_waiters();
}

void pg_store::serve_waiters() {
  while (!waiters_.empty() && (!idle_.empty() || open_ < options.max_connections)) {
    auto w = waiters_.front();
    waiters_.pop_front();
    w->served = true;
    w->timer.cancel();
    lease(w->deadline, w->stopper, std::move(w->done));
  }
}

void pg_store::roll_back_and_give_back(std::shared_ptr<pg_connection> c, pg_then then) {
  if (!c || !c->in_transaction()) {
    give_back(std::move(c));
    if (then) std::move(then)();
    return;
  }
  auto raw = c.get();
  raw->query("ROLLBACK", deadline(), [self = shared_from_this(), c = std::move(c), then = std::move(then)](pg_reply) mutable {
    self->give_back(std::move(c));  // closed unless the ROLLBACK left it idle
    if (then) std::move(then)();
  });
}

void pg_store::drop_idle() {
  open_ -= idle_.size();
  idle_.clear();  // closed by their destructors
  serve_waiters();
}

void pg_store::shutdown() {
  shut_ = true;
  drop_idle();
  while (!waiters_.empty()) {
    auto w = waiters_.front();
    waiters_.pop_front();
    w->served = true;
    w->timer.cancel();
    std::move(w->done)(errc::shutting_down, "the store is being destroyed", nullptr, false);
  }
}

// ---- a transaction --------------------------------------------------------------

pg_transaction::pg_transaction(std::shared_ptr<pg_store> store, std::shared_ptr<pg_connection> conn,
                               std::string resource, std::uint64_t token)
    : resource(std::move(resource)), token(token), store_(std::move(store)), conn_(std::move(conn)) {}

void pg_transaction::exec(std::string sql, std::vector<postgres_param> params, std::shared_ptr<pg_stopper> stopper,
                          pg_done<postgres_result> done) {
  if (state_ == state::ended) return std::move(done)(errc::bad_option, "the transaction has ended", postgres_result{});
  if (busy_)
    return std::move(done)(errc::bad_option, "another statement of this transaction is still running", postgres_result{});
  if (state_ == state::failed)
    return std::move(done)(failure_, "an earlier statement of this transaction failed: " + failure_message_, postgres_result{});
  busy_ = true;
  stop_with(stopper, dropping(conn_));
  conn_->query(sql, params, store_->deadline(),
               [self = shared_from_this(), stopper, done = std::move(done)](pg_reply r) mutable {
                 stop_with(stopper, nullptr);
                 self->busy_ = false;
                 auto result = to_result(r);
                 std::string why;
                 if (!r.ec && !self->conn_->in_transaction()) {
                   // The statement was a COMMIT or ROLLBACK of its own: what
                   // follows would run unfenced, so nothing may follow.
                   self->ended();
                 } else if (r.ec) {
                   why = describe(r);
                   if (!self->conn_->in_transaction()) {
                     self->ended();  // the connection went with the transaction
                   } else {
                     self->state_ = state::failed;
                     self->failure_ = r.ec;
                     self->failure_message_ = why;
                   }
                 }
                 if (self->abandoned_ && self->open()) self->roll_back_then({});
                 std::move(done)(r.ec, std::move(why), std::move(result));
               });
}

void pg_transaction::end(bool commit, std::shared_ptr<pg_stopper> stopper, pg_done<> done) {
  if (busy_) return std::move(done)(errc::bad_option, "a statement of this transaction is still running");
  if (state_ == state::ended) {
    if (!commit) return std::move(done)(error_code{}, std::string{});  // nothing of it is kept: what rollback promises
    return std::move(done)(errc::bad_option, "the transaction has ended");
  }
  if (!commit || state_ == state::failed) {
    auto failure = commit ? failure_ : error_code{};
    auto why = commit ? "rolled back: an earlier statement failed: " + failure_message_ : std::string();
    return roll_back_then([done = std::move(done), failure, why = std::move(why)]() mutable {
      std::move(done)(failure, std::move(why));
    });
  }
  busy_ = true;
  stop_with(stopper, dropping(conn_));
  conn_->query("COMMIT", store_->deadline(),
               [self = shared_from_this(), stopper, done = std::move(done)](pg_reply r) mutable {
                 stop_with(stopper, nullptr);
                 self->busy_ = false;
                 self->ended();
                 if (r.ec) {
                   // Connection gone or timed out: the COMMIT may or may not have landed.
                   bool unknown = r.sqlstate.empty();
                   return std::move(done)(r.ec, (unknown ? "the COMMIT's outcome is unknown: " : "COMMIT refused: ") +
                                                    describe(r));
                 }
                 // A transaction the server had already aborted answers COMMIT with ROLLBACK.
                 if (r.command(0) != "COMMIT")
                   return std::move(done)(errc::server_error, "the server rolled the transaction back (" +
                                                                  r.command(0) + ")");
                 std::move(done)(error_code{}, std::string{});
               });
}

void pg_transaction::abandon() {
  if (busy_) {
    abandoned_ = true;  // rolled back when the statement in flight completes
    return;
  }
  if (open()) roll_back_then({});
}

void pg_transaction::roll_back_then(pg_then then) {
  state_ = state::ended;
  store_->roll_back_and_give_back(std::move(conn_), std::move(then));
}

void pg_transaction::ended() {
  state_ = state::ended;
  store_->give_back(std::move(conn_));
}

}  // namespace redlock::detail
