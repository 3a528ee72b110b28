// SPDX-License-Identifier: Apache-2.0
// fenced_storage on PostgreSQL through redlock::postgres_fenced_store.
#include "fenced_storage.hpp"

#include <postgres_process.hpp>

#include <redlock/postgres_fenced_store.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <filesystem>
#include <thread>

namespace redlock::fault {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// One server for the whole test program, started at first use.
testing::postgres_process& server() {
  static testing::postgres_process s;
  return s;
}

// The section's read-modify-write, after the fence: read the counter, write
// it back plus one, log the write. The counter's upsert locks its row until
// the commit, so the log's seq, taken after it, follows the commit order of
// the writes to one name (with or without the fence).
asio::awaitable<error_code> increment(std::shared_ptr<postgres_fenced_store> store, std::string name,
                                      std::uint64_t token, std::string sid) {
  // Parameters are built outside co_await: g++ 12 rejects a braced list there.
  auto tuple = asio::as_tuple(asio::use_awaitable);
  auto [ec, tx] = co_await store->async_begin(name, token, tuple);
  if (ec) co_return ec;  // errc::stale_token: a newer token fenced the name
  std::vector<postgres_param> by_name{name};
  auto [read_ec, read] = co_await tx.async_exec("SELECT value FROM counters WHERE name = $1", by_name, tuple);
  if (read_ec) co_return read_ec;  // tx dropped here: rolled back
  long long value = read.rows.empty() || !read.rows[0][0] ? 0 : std::stoll(*read.rows[0][0]);
  std::vector<postgres_param> counter{name, std::to_string(value + 1)};
  auto [write_ec, written] = co_await tx.async_exec(
      "INSERT INTO counters (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
      counter, tuple);
  if (write_ec) co_return write_ec;
  std::vector<postgres_param> entry{name, sid, std::to_string(token)};
  auto [log_ec, logged] =
      co_await tx.async_exec("INSERT INTO writes (name, sid, token) VALUES ($1, $2, $3)", entry, tuple);
  if (log_ec) co_return log_ec;
  auto [commit_ec] = co_await tx.async_commit(tuple);
  co_return commit_ec;
}

class postgres_session final : public fenced_storage::session {
 public:
  postgres_session(asio::any_io_executor ex, const std::string& conninfo, const postgres_store_options& o)
      : executor_(ex), store_(std::make_shared<postgres_fenced_store>(ex, conninfo, o)) {}

  void async_increment(std::string name, std::uint64_t token, std::string sid,
                       asio::any_completion_handler<fenced_storage::done_signature> done) override {
    // The coroutine owns the store with it: the workload may drop this
    // session while a guard-expired increment still runs.
    asio::co_spawn(executor_, increment(store_, std::move(name), token, std::move(sid)),
                   [ex = executor_, done = std::move(done)](std::exception_ptr e, error_code ec) mutable {
                     if (e) ec = make_error_code(errc::server_error);
                     auto to = asio::get_associated_executor(done, ex);  // the caller's strand
                     asio::dispatch(to, [done = std::move(done), ec]() mutable { std::move(done)(ec); });
                   });
  }

 private:
  asio::any_io_executor executor_;
  std::shared_ptr<postgres_fenced_store> store_;
};

class postgres_storage final : public fenced_storage {
 public:
  // The database is made before the thread starts: a failure throws with
  // no thread to join.
  explicit postgres_storage(const postgres_storage_options& o) : options_(o), db_(new_database()) {}

  ~postgres_storage() override {
    work_.reset();
    io_.stop();  // the sessions are gone: what is left is abandoned
    thread_.join();
  }

  std::unique_ptr<session> open(std::size_t client) override {
    postgres_store_options o;
    o.timeout = options_.timeout;
    if (options_.fence_per_client) o.fence_table = "redlock_fences_c" + std::to_string(client);
    return std::make_unique<postgres_session>(io_.get_executor(), server().conninfo(db_), o);
  }

  fenced_table read() override {
    fenced_table t;
    for (auto& row : server().query("SELECT name, sid, token FROM writes ORDER BY seq", db_))
      t.writes[row.at(0)].push_back({row.at(1), std::stoull(row.at(2))});
    for (auto& row : server().query("SELECT name, value FROM counters", db_)) t.counters[row.at(0)] = std::stoll(row.at(1));
    return t;
  }

  std::string describe() const override {
    return std::string("PostgreSQL ") + (options_.fence_per_client ? "(UNSAFE: a fence table per client)" : "fenced");
  }

 private:
  static std::string new_database() {
    auto db = server().create_database("nemesis");
    server().query(
        "CREATE TABLE counters (name text PRIMARY KEY, value bigint NOT NULL);"
        "CREATE TABLE writes (seq bigserial PRIMARY KEY, name text NOT NULL, sid text NOT NULL, token bigint NOT NULL)",
        db);
    return db;
  }

  postgres_storage_options options_;
  std::string db_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  std::thread thread_{[this] { io_.run(); }};
};

}  // namespace

std::shared_ptr<fenced_storage> open_postgres_storage(const postgres_storage_options& options, std::string& why_not) {
  for (const char* program : {"initdb", "postgres"}) {
    auto path = testing::postgres_bindir() / program;
    if (!std::filesystem::exists(path)) {
      why_not = path.string() + " not found: install Debian's postgresql-15 (scripts/setup does)";
      return nullptr;
    }
  }
  return std::make_shared<postgres_storage>(options);
}

}  // namespace redlock::fault
