// SPDX-License-Identifier: Apache-2.0
// The public API over pg_store: argument checks, completion tokens and
// cancellation slots for the async forms, promises for the blocking ones.
#include <redlock/postgres_fenced_store.hpp>

#include "pg_sql.hpp"
#include "pg_store.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>

#include <future>
#include <tuple>

namespace redlock {

namespace asio = boost::asio;
using boost::system::error_code;
using detail::pg_done;
using detail::pg_stopper;

namespace {

// A stopper the handler's cancellation slot (if it has one) triggers on the strand.
template <typename Handler>
std::shared_ptr<pg_stopper> stopper_for(Handler& handler, const detail::pg_strand& strand) {
  auto slot = asio::get_associated_cancellation_slot(handler);
  if (!slot.is_connected()) return nullptr;
  auto stopper = std::make_shared<pg_stopper>();
  slot.assign([stopper, strand](asio::cancellation_type) {
    asio::post(strand, [stopper] {
      if (!stopper->stop) return;  // finished meanwhile
      auto stop = stopper->stop;   // it may replace itself while it runs
      stop();
    });
  });
  return stopper;
}

// Completes an async caller's handler on the store's executor.
template <typename Handler, typename... Values>
void complete(const asio::any_io_executor& ex, Handler handler, error_code ec, Values&&... values) {
  auto slot = asio::get_associated_cancellation_slot(handler);
  if (slot.is_connected()) slot.clear();
  asio::dispatch(ex, asio::append(std::move(handler), ec, std::forward<Values>(values)...));
}

template <typename... Values>
struct outcome {
  error_code ec;
  std::string why;
  std::tuple<Values...> values;
};

// The blocking forms: start the operation on the strand and wait for it
// (from a thread that is not running the executor).
template <typename... Values, typename Start>
outcome<Values...> wait_for(const detail::pg_strand& strand, Start start) {
  std::promise<outcome<Values...>> promise;
  auto result = promise.get_future();
  asio::dispatch(strand, [&promise, start = std::move(start)]() mutable {
    start(pg_done<Values...>([&promise](error_code ec, std::string why, Values... values) {
      promise.set_value({ec, std::move(why), {std::move(values)...}});
    }));
  });
  return result.get();
}

[[noreturn]] void throw_error(const error_code& ec, const std::string& why) {
  throw error(ec, "postgres_fenced_store: " + (why.empty() ? ec.message() : why));
}

}  // namespace

// ---- postgres_fenced_store ------------------------------------------------------

postgres_fenced_store::postgres_fenced_store(asio::any_io_executor executor, const std::string& conninfo,
                                             const postgres_store_options& options) {
  if (options.timeout <= milliseconds(0))
    throw error(errc::bad_option, "postgres_store_options::timeout must be > 0 (got " +
                                      std::to_string(options.timeout.count()) + " ms)");
  if (options.max_connections == 0) throw error(errc::bad_option, "postgres_store_options::max_connections must be >= 1");
  if (options.idle_in_transaction_timeout < milliseconds(0))
    throw error(errc::bad_option, "postgres_store_options::idle_in_transaction_timeout must be >= 0 (got " +
                                      std::to_string(options.idle_in_transaction_timeout.count()) + " ms)");
  // Both throw naming the problem (bad_uri, bad_option) before anything is opened.
  auto info = detail::parse_conninfo(conninfo, options.idle_in_transaction_timeout);
  impl_ = std::make_shared<detail::pg_store>(std::move(executor), std::move(info), options);
}

postgres_fenced_store::~postgres_fenced_store() {
  asio::dispatch(impl_->strand, [impl = impl_] { impl->shutdown(); });
}

void postgres_fenced_store::start_begin(std::string resource, std::uint64_t token,
                                        asio::any_completion_handler<begin_signature> handler) {
  auto stopper = stopper_for(handler, impl_->strand);
  asio::dispatch(impl_->strand, [impl = impl_, resource = std::move(resource), token, stopper,
                                 handler = std::move(handler)]() mutable {
    impl->begin(std::move(resource), token, stopper,
                [ex = impl->executor, handler = std::move(handler)](
                    error_code ec, std::string, std::shared_ptr<detail::pg_transaction> tx) mutable {
                  complete(ex, std::move(handler), ec, postgres_transaction(std::move(tx)));
                });
  });
}

namespace {
outcome<std::shared_ptr<detail::pg_transaction>> begin_and_wait(const std::shared_ptr<detail::pg_store>& impl,
                                                                const std::string& resource, std::uint64_t token) {
  return wait_for<std::shared_ptr<detail::pg_transaction>>(
      impl->strand, [impl, resource, token](auto done) mutable { impl->begin(resource, token, nullptr, std::move(done)); });
}
}  // namespace

postgres_transaction postgres_fenced_store::begin(const std::string& resource, std::uint64_t token,
                                                  error_code& ec) {
  auto r = begin_and_wait(impl_, resource, token);
  ec = r.ec;
  return postgres_transaction(std::move(std::get<0>(r.values)));
}

postgres_transaction postgres_fenced_store::begin(const std::string& resource, std::uint64_t token) {
  auto r = begin_and_wait(impl_, resource, token);
  if (r.ec) throw_error(r.ec, r.why);
  return postgres_transaction(std::move(std::get<0>(r.values)));
}

void postgres_fenced_store::start_write_row(postgres_row row, std::uint64_t token,
                                            asio::any_completion_handler<done_signature> handler) {
  auto stopper = stopper_for(handler, impl_->strand);
  asio::dispatch(impl_->strand, [impl = impl_, row = std::move(row), token, stopper,
                                 handler = std::move(handler)]() mutable {
    impl->write_row(std::move(row), token, stopper,
                    [ex = impl->executor, handler = std::move(handler)](error_code ec, std::string) mutable {
                      complete(ex, std::move(handler), ec);
                    });
  });
}

namespace {
outcome<> write_row_and_wait(const std::shared_ptr<detail::pg_store>& impl, const postgres_row& row,
                             std::uint64_t token) {
  return wait_for<>(impl->strand, [impl, row, token](auto done) mutable {
    impl->write_row(std::move(row), token, nullptr, std::move(done));
  });
}
}  // namespace

void postgres_fenced_store::write_row(const postgres_row& row, std::uint64_t token, error_code& ec) {
  ec = write_row_and_wait(impl_, row, token).ec;
}

void postgres_fenced_store::write_row(const postgres_row& row, std::uint64_t token) {
  auto r = write_row_and_wait(impl_, row, token);
  if (r.ec) throw_error(r.ec, r.why);
}

std::string postgres_fenced_store::fence_statement() const { return detail::pg_sql::fence_statement(impl_->fence_table); }

std::string postgres_fenced_store::row_statement(const postgres_row& row) { return detail::pg_sql::row_statement(row); }

// ---- postgres_transaction -------------------------------------------------------

postgres_transaction::postgres_transaction() noexcept = default;
postgres_transaction::postgres_transaction(std::shared_ptr<detail::pg_transaction> impl) noexcept
    : impl_(std::move(impl)) {}
postgres_transaction::postgres_transaction(postgres_transaction&& other) noexcept = default;

postgres_transaction& postgres_transaction::operator=(postgres_transaction&& other) noexcept {
  if (this != &other) {
    abandon();
    impl_ = std::move(other.impl_);
  }
  return *this;
}

postgres_transaction::~postgres_transaction() { abandon(); }

void postgres_transaction::abandon() noexcept {
  if (!impl_) return;
  if (impl_->open()) asio::dispatch(impl_->strand(), [t = impl_] { t->abandon(); });
  impl_.reset();
}

bool postgres_transaction::is_open() const noexcept { return impl_ && impl_->open(); }

const std::string& postgres_transaction::resource() const noexcept {
  static const std::string none;
  return impl_ ? impl_->resource : none;
}

std::uint64_t postgres_transaction::token() const noexcept { return impl_ ? impl_->token : 0; }

void postgres_transaction::start_exec(std::string sql, std::vector<postgres_param> params,
                                      asio::any_completion_handler<exec_signature> handler) {
  if (!impl_) {
    postgres_result empty;
    empty.message = "empty transaction handle (moved from, or its begin failed)";
    return asio::post(asio::system_executor(), asio::append(std::move(handler), make_error_code(errc::bad_option), std::move(empty)));
  }
  auto stopper = stopper_for(handler, impl_->strand());
  asio::dispatch(impl_->strand(), [t = impl_, sql = std::move(sql), params = std::move(params), stopper,
                                   handler = std::move(handler)]() mutable {
    t->exec(std::move(sql), std::move(params), stopper,
            [ex = t->executor(), handler = std::move(handler)](error_code ec, std::string why,
                                                                postgres_result result) mutable {
              if (ec && result.message.empty()) result.message = std::move(why);
              complete(ex, std::move(handler), ec, std::move(result));
            });
  });
}

namespace {
outcome<postgres_result> exec_and_wait(const std::shared_ptr<detail::pg_transaction>& t, const std::string& sql,
                                       const std::vector<postgres_param>& params) {
  return wait_for<postgres_result>(t->strand(), [t, sql, params](auto done) mutable {
    t->exec(std::move(sql), std::move(params), nullptr, std::move(done));
  });
}
outcome<> end_and_wait(const std::shared_ptr<detail::pg_transaction>& t, bool commit) {
  return wait_for<>(t->strand(), [t, commit](auto done) mutable { t->end(commit, nullptr, std::move(done)); });
}
}  // namespace

postgres_result postgres_transaction::exec(const std::string& sql, const std::vector<postgres_param>& params,
                                           error_code& ec) {
  if (!impl_) {
    ec = errc::bad_option;
    return {};
  }
  auto r = exec_and_wait(impl_, sql, params);
  ec = r.ec;
  auto result = std::move(std::get<0>(r.values));
  if (ec && result.message.empty()) result.message = r.why;
  return result;
}

postgres_result postgres_transaction::exec(const std::string& sql, const std::vector<postgres_param>& params) {
  if (!impl_) throw error(errc::bad_option, "postgres_transaction::exec on an empty transaction handle");
  auto r = exec_and_wait(impl_, sql, params);
  if (r.ec) throw_error(r.ec, "statement in the transaction fenced for '" + impl_->resource + "': " + r.why);
  return std::move(std::get<0>(r.values));
}

void postgres_transaction::start_end(bool commit, asio::any_completion_handler<done_signature> handler) {
  if (!impl_) {
    auto ec = commit ? make_error_code(errc::bad_option) : error_code{};  // nothing to roll back
    return asio::post(asio::system_executor(), asio::append(std::move(handler), ec));
  }
  auto stopper = stopper_for(handler, impl_->strand());
  asio::dispatch(impl_->strand(), [t = impl_, commit, stopper, handler = std::move(handler)]() mutable {
    t->end(commit, stopper, [ex = t->executor(), handler = std::move(handler)](error_code ec, std::string) mutable {
      complete(ex, std::move(handler), ec);
    });
  });
}

void postgres_transaction::commit(error_code& ec) {
  if (!impl_) {
    ec = errc::bad_option;
    return;
  }
  ec = end_and_wait(impl_, true).ec;
}

void postgres_transaction::commit() {
  if (!impl_) throw error(errc::bad_option, "postgres_transaction::commit on an empty transaction handle");
  auto r = end_and_wait(impl_, true);
  if (r.ec) throw_error(r.ec, "COMMIT of the transaction fenced for '" + impl_->resource + "': " + r.why);
}

void postgres_transaction::rollback() {
  if (!impl_) return;
  auto r = end_and_wait(impl_, false);
  if (r.ec) throw_error(r.ec, "ROLLBACK of the transaction fenced for '" + impl_->resource + "': " + r.why);
}

}  // namespace redlock
