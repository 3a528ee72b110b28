// SPDX-License-Identifier: Apache-2.0
// The store's two operations: begin (a connection, the fence, a
// transaction handed over) and write_row (one fenced statement).
#include "pg_store.hpp"

#include "pg_sql.hpp"

#include <boost/asio/error.hpp>

namespace redlock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// What both operations share: a connection leased from the store (then
// Derived::leased()), leased again when a reused idle one turns out closed,
// and the deadline for retrying.
template <typename Derived>
class leased_op : public std::enable_shared_from_this<Derived> {
 public:
  void start() {
    retry_until_ = store_->deadline();
    lease();
  }

 protected:
  leased_op(std::shared_ptr<pg_store> store, std::shared_ptr<pg_stopper> stopper)
      : store_(std::move(store)), stopper_(std::move(stopper)) {}

  void lease() {
    store_->lease(store_->deadline(), stopper_,
                  [self = this->shared_from_this()](error_code ec, std::string why, std::shared_ptr<pg_connection> c,
                                                    bool reused) {
                    if (ec) return self->complete(ec, "no connection to PostgreSQL: " + why);
                    self->conn_ = std::move(c);
                    self->reused_ = reused;
                    self->leased();
                  });
  }

  // An idle connection the server had closed (a restart, a timeout): the
  // other idle ones are likely dead too. True when it leased again.
  bool leased_again_if_closed(const pg_reply& r) {
    if (!connection_failed(r.ec) || !reused_) return false;
    store_->give_back(std::move(conn_));
    store_->drop_idle();
    lease();
    return true;
  }

  std::shared_ptr<pg_store> store_;
  std::shared_ptr<pg_stopper> stopper_;
  std::shared_ptr<pg_connection> conn_;
  bool reused_ = false;
  pg_clock::time_point retry_until_;
};

// Takes a connection, fences the resource inside a new transaction, and
// hands the transaction over; retries what is safe to retry (nothing of the
// caller's has run): a serialization failure of the fence, an idle
// connection the server had closed, a missing fence table once created.
class begin_op : public leased_op<begin_op> {
 public:
  begin_op(std::shared_ptr<pg_store> store, std::string resource, std::uint64_t token,
           std::shared_ptr<pg_stopper> stopper, pg_done<std::shared_ptr<pg_transaction>> done)
      : leased_op(std::move(store), std::move(stopper)), resource_(std::move(resource)), token_(token),
        done_(std::move(done)) {}

 private:
  friend leased_op;
  void leased() { fence(); }

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
    // Closed while idle: nothing was committed through it.
    if (leased_again_if_closed(r)) return;
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

  std::string resource_;
  std::uint64_t token_;
  pg_done<std::shared_ptr<pg_transaction>> done_;
  bool created_table_ = false;
};

// write_row: one statement in a transaction of its own (autocommit).
class row_op : public leased_op<row_op> {
 public:
  row_op(std::shared_ptr<pg_store> store, std::string sql, std::vector<postgres_param> params, std::string what,
         std::shared_ptr<pg_stopper> stopper, pg_done<> done)
      : leased_op(std::move(store), std::move(stopper)), sql_(std::move(sql)), params_(std::move(params)),
        what_(std::move(what)), done_(std::move(done)) {}

 private:
  friend leased_op;
  void leased() { send(); }

  void send() {
    stop_with(stopper_, dropping(conn_));
    conn_->query(sql_, params_, store_->deadline(), [self = shared_from_this()](pg_reply r) { self->sent(std::move(r)); });
  }

  void sent(pg_reply r) {
    // Closed while idle: writing the same values with the same token again
    // is harmless if the first one landed after all (the fence column
    // allows equal tokens).
    if (leased_again_if_closed(r)) return;
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

  std::string sql_;
  std::vector<postgres_param> params_;
  std::string what_;
  pg_done<> done_;
};

}  // namespace

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

}  // namespace redlock::detail
