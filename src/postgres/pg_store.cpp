// SPDX-License-Identifier: Apache-2.0
// The store: a pool of connections to PostgreSQL, leased to one operation
// at a time on the store's strand (pg_store_ops.cpp starts the operations,
// pg_transaction.cpp is a leased connection inside a fenced transaction).
#include "pg_store.hpp"

#include "pg_sql.hpp"

#include <boost/asio/error.hpp>

namespace redlock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

void stop_with(const std::shared_ptr<pg_stopper>& s, std::function<void()> f) {
  if (s) s->stop = std::move(f);
}

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

// ---- the store ----------------------------------------------------------------

pg_store::pg_store(asio::any_io_executor ex, pg_conninfo info, const postgres_store_options& o)
    : executor(ex),
      strand(asio::make_strand(ex)),
      conninfo(std::move(info)),
      options(o),
      fence_table(pg_sql::qualified_name(o.fence_table, "postgres_store_options::fence_table")) {}

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

}  // namespace redlock::detail
