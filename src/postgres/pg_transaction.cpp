// SPDX-License-Identifier: Apache-2.0
// A fenced transaction on a leased connection: statements one at a time,
// then COMMIT or a rollback, and the connection back to the store.
#include "pg_store.hpp"

namespace redlock::detail {

using boost::system::error_code;

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
