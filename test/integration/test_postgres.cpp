// SPDX-License-Identifier: Apache-2.0
// redlock::postgres_fenced_store against a real PostgreSQL server the
// fixture starts (test/support/postgres_process): accepted and refused
// writes in both forms, bad input, a connection dropped or cut short
// mid-transaction, REPEATABLE READ and SERIALIZABLE as docs/fencing.md says.
// The two-process test (a holder stopped with SIGSTOP) is in
// test_postgres_processes.cpp.
#define BOOST_TEST_MODULE integration_postgres
#include <boost/test/unit_test.hpp>

#include "postgres_fixture.hpp"

#include <redlock/postgres_fenced_store.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/use_future.hpp>

#include <dirent.h>

#include <future>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::postgres_fenced_store;
using redlock::postgres_isolation;
using redlock::postgres_row;
using redlock::postgres_store_options;
using redlock::postgres_transaction;
using redlock::testing::code_of;
using redlock::testing::eventually;
using redlock::testing::io_thread;
using redlock::testing::postgres_server;
using redlock::testing::raw_session;
namespace asio = boost::asio;

namespace {

// The message of the redlock::error `f` throws ("" if none).
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const redlock::error& e) {
    return e.what();
  }
  return "";
}

// The completion of one async operation, errors included, for a blocking
// look (use_future turns errors into exceptions, and Boost 1.81 has no
// as_tuple for it).
template <typename... Values>
class reported {
 public:
  auto handler() {
    return [this](boost::system::error_code ec, Values... values) { promise_.set_value({ec, std::move(values)...}); };
  }
  std::tuple<boost::system::error_code, Values...> get() { return future_.get(); }

 private:
  std::promise<std::tuple<boost::system::error_code, Values...>> promise_;
  std::future<std::tuple<boost::system::error_code, Values...>> future_ = promise_.get_future();
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string count_of(const std::string& db, const std::string& from_where) {
  return postgres_server().scalar("SELECT count(*) FROM " + from_where, db);
}

// Connections the store opened to `db` (application_name is the store's fallback).
std::string store_sessions(const std::string& db) {
  return count_of(db, "pg_stat_activity WHERE datname = '" + db + "' AND application_name = 'redlock-fenced-store'");
}

std::string fence_of(const std::string& db, const std::string& resource) {
  return postgres_server().scalar("SELECT token FROM redlock_fences WHERE resource = '" + resource + "'", db);
}

postgres_store_options with(postgres_isolation level) {
  postgres_store_options o;
  o.isolation = level;
  return o;
}

std::size_t threads_of_this_process() {
  std::size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (auto* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(bad_input_is_refused_naming_the_problem_and_nothing_is_sent) {
  io_thread io;
  auto db = postgres_server().create_database("bad_input");
  auto info = postgres_server().conninfo(db);
  // Connection strings libpq cannot parse: bad_uri, with libpq's reason.
  for (std::string bad : {"host=127.0.0.1 port", "nonsense", "postgresql://[::1", "host=a nosuchkeyword=1"}) {
    auto why = message_of([&] { postgres_fenced_store s(io.executor(), bad); });
    BOOST_TEST(code_of([&] { postgres_fenced_store s(io.executor(), bad); }) == errc::bad_uri, bad);
    BOOST_TEST(contains(why, "libpq cannot parse the connection string"), why);
  }
  auto option_refused = [&](postgres_store_options o, const std::string& named) {
    auto why = message_of([&] { postgres_fenced_store s(io.executor(), info, o); });
    BOOST_TEST(code_of([&] { postgres_fenced_store s(io.executor(), info, o); }) == errc::bad_option, named);
    BOOST_TEST(contains(why, named), why);
  };
  option_refused({.timeout = 0ms}, "timeout");
  option_refused({.fence_table = ""}, "fence_table");
  option_refused({.fence_table = "app."}, "fence_table");
  option_refused({.max_connections = 0}, "max_connections");
  option_refused({.idle_in_transaction_timeout = -1ms}, "idle_in_transaction_timeout");

  postgres_fenced_store store(io.executor(), info);
  boost::system::error_code ec;
  BOOST_TEST(!store.begin("", 5, ec));
  BOOST_TEST(ec == errc::empty_name);
  BOOST_TEST(contains(message_of([&] { store.begin("", 5); }), "resource is empty"));
  BOOST_TEST(contains(message_of([&] { store.begin("r", 0); }), "token 0"));
  BOOST_TEST(code_of([&] { store.begin("r", 0); }) == errc::bad_option);
  BOOST_TEST(contains(message_of([&] { store.begin("r", 1ull << 63); }), "bigint"));
  // The async form says the same through its code.
  reported<postgres_transaction> begun;
  store.async_begin("", 1, begun.handler());
  auto [async_ec, tx] = begun.get();
  BOOST_TEST(async_ec == errc::empty_name);
  BOOST_TEST(!tx.is_open());

  postgres_row row{.table = "documents", .key_column = "id", .key = "1", .values = {{"body", "x"}}};
  BOOST_TEST(code_of([&] { store.write_row(row, 0); }) == errc::bad_option);
  auto no_key = row;
  no_key.key = "";
  BOOST_TEST(code_of([&] { store.write_row(no_key, 3); }) == errc::empty_name);
  auto no_table = row;
  no_table.table = "";
  BOOST_TEST(contains(message_of([&] { store.write_row(no_table, 3); }), "postgres_row::table is empty"));
  auto fence_as_value = row;
  fence_as_value.values.emplace_back("fence", "9");
  BOOST_TEST(contains(message_of([&] { store.write_row(fence_as_value, 3); }), "names the fence column"));
  // Nothing reached the server: no session opened, no fence table made.
  BOOST_TEST(store_sessions(db) == "0");
  BOOST_TEST(postgres_server().scalar("SELECT to_regclass('redlock_fences') IS NULL", db) == "t");
}

BOOST_AUTO_TEST_CASE(a_fenced_transaction_commits_and_a_stale_token_rolls_back_all_of_it) {
  io_thread io;
  auto db = postgres_server().create_database("transact");
  postgres_server().query("CREATE TABLE ledger (token bigint, note text)", db);
  postgres_fenced_store store(io.executor(), postgres_server().conninfo(db));
  auto book = [](std::uint64_t token) {
    return [token](postgres_transaction& tx) {
      tx.exec("INSERT INTO ledger VALUES ($1, $2)", {std::to_string(token), "by " + std::to_string(token)});
    };
  };
  store.transact("account:17", 5, book(5));  // creates the fence table and the resource's row
  BOOST_TEST(fence_of(db, "account:17") == "5");
  store.transact("account:17", 7, book(7));
  BOOST_TEST(fence_of(db, "account:17") == "7");

  bool ran = false;
  auto stale = [&] { store.transact("account:17", 6, [&](postgres_transaction& tx) { ran = true; book(6)(tx); }); };
  BOOST_TEST(code_of(stale) == errc::stale_token);
  BOOST_TEST(contains(message_of(stale), "token 6 is older"));
  BOOST_TEST(!ran, "the body of a refused transaction ran");
  BOOST_TEST(count_of(db, "ledger WHERE token = 6") == "0");
  BOOST_TEST(fence_of(db, "account:17") == "7");

  store.transact("account:17", 7, book(7));  // the same holder again: equal tokens pass
  boost::system::error_code ec;
  auto refused = store.begin("account:17", 3, ec);
  BOOST_TEST(ec == errc::stale_token);
  BOOST_TEST(!refused.is_open());
  store.transact("account:42", 1, book(1));  // each resource has its own fence
  BOOST_TEST(count_of(db, "ledger") == "4");

  // A body that throws rolls back what it did.
  BOOST_CHECK_THROW(store.transact("account:17", 8,
                                   [&](postgres_transaction& tx) {
                                     book(8)(tx);
                                     throw std::runtime_error("changed its mind");
                                   }),
                    std::runtime_error);
  BOOST_TEST(eventually([&] { return store_sessions(db) == "1"; }));  // its connection came back, idle
  BOOST_TEST(count_of(db, "ledger WHERE token = 8") == "0");
  BOOST_TEST(fence_of(db, "account:17") == "7");

  // A failed statement: commit rolls back and reports it.
  auto tx = store.begin("account:17", 9);
  BOOST_TEST(tx.resource() == "account:17");
  BOOST_TEST(tx.token() == 9u);
  book(9)(tx);
  auto bad = tx.exec("INSERT INTO no_such_table VALUES (1)", {}, ec);
  BOOST_TEST(ec == errc::server_error);
  BOOST_TEST(bad.sqlstate == "42P01");
  BOOST_TEST(contains(bad.message, "no_such_table"), bad.message);
  BOOST_TEST(tx.is_open());  // to be ended
  tx.commit(ec);
  BOOST_TEST(ec == errc::server_error);
  BOOST_TEST(!tx.is_open());
  BOOST_TEST(count_of(db, "ledger WHERE token = 9") == "0");
  BOOST_TEST(fence_of(db, "account:17") == "7");

  // A COMMIT of the caller's own ends the transaction: nothing may run unfenced after it.
  auto own = store.begin("account:17", 10);
  own.exec("COMMIT");
  BOOST_TEST(!own.is_open());
  BOOST_TEST(code_of([&] { own.exec("INSERT INTO ledger VALUES (10, 'unfenced')"); }) == errc::bad_option);
  BOOST_TEST(fence_of(db, "account:17") == "10");

  // Reads return rows as text.
  auto rows = store.begin("account:42", 1).exec("SELECT token, note, NULL::text FROM ledger WHERE token = 1");
  BOOST_TEST(rows.columns.size() == 3u);
  BOOST_TEST_REQUIRE(rows.rows.size() == 1u);
  BOOST_TEST(*rows.rows[0][1] == "by 1");
  BOOST_TEST(!rows.rows[0][2].has_value());
}

BOOST_AUTO_TEST_CASE(write_row_upserts_one_row_and_refuses_a_stale_token) {
  io_thread io;
  auto db = postgres_server().create_database("rows");
  postgres_server().query("CREATE TABLE documents (id bigint PRIMARY KEY, body text, fence bigint NOT NULL)", db);
  postgres_fenced_store store(io.executor(), postgres_server().conninfo(db));
  auto doc = [](std::string body) {
    return postgres_row{.table = "documents", .key_column = "id", .key = "42", .values = {{"body", std::move(body)}}};
  };
  auto stored = [&] { return postgres_server().query("SELECT body, fence FROM documents WHERE id = 42", db); };
  store.write_row(doc("created by 33"), 33);
  BOOST_TEST(stored()[0][0] == "created by 33");
  store.write_row(doc("written by 34"), 34);
  BOOST_TEST(code_of([&] { store.write_row(doc("late write by 33"), 33); }) == errc::stale_token);
  BOOST_TEST(stored()[0][0] == "written by 34");
  BOOST_TEST(stored()[0][1] == "34");
  store.write_row(doc("again by 34"), 34);
  BOOST_TEST(stored()[0][0] == "again by 34");
  auto nulled = doc("");
  nulled.values[0].second = std::nullopt;
  store.write_row(nulled, 35);
  BOOST_TEST(stored()[0][0] == "(null)");
  // The statement is the one docs/fencing.md shows.
  BOOST_TEST(postgres_fenced_store::row_statement(doc("")) ==
             "INSERT INTO \"documents\" AS t (\"id\", \"body\", \"fence\") VALUES ($1, $2, $3) ON CONFLICT (\"id\") DO "
             "UPDATE SET \"body\" = EXCLUDED.\"body\", \"fence\" = EXCLUDED.\"fence\" WHERE t.\"fence\" <= "
             "EXCLUDED.\"fence\"");
  // A server error names itself.
  auto wrong = doc("x");
  wrong.table = "no_such_table";
  auto why = message_of([&] { store.write_row(wrong, 36); });
  BOOST_TEST((contains(why, "no_such_table") && contains(why, "42P01")), why);
  BOOST_TEST(code_of([&] { store.write_row(wrong, 36); }) == errc::server_error);
}

BOOST_AUTO_TEST_CASE(async_forms_run_on_the_executor_without_a_thread_per_call) {
  io_thread io;
  auto db = postgres_server().create_database("async");
  postgres_server().query("CREATE TABLE counters (id int PRIMARY KEY, body text, fence bigint NOT NULL)", db);
  postgres_fenced_store store(io.executor(), postgres_server().conninfo(db), {.max_connections = 3});
  auto tx = store.async_begin("orders:1", 4, asio::use_future).get();
  BOOST_TEST(tx.is_open());
  auto r = tx.async_exec("INSERT INTO counters VALUES (1, 'a', $1)", {"4"}, asio::use_future).get();
  BOOST_TEST(r.affected_rows == 1u);
  BOOST_TEST(r.command == "INSERT 0 1");
  tx.async_commit(asio::use_future).get();
  BOOST_TEST(!tx.is_open());

  // 40 writes at once (of different rows: they may land in any order)
  // through 3 connections: all complete, no thread started for them.
  const auto threads_before = threads_of_this_process();
  std::vector<std::future<void>> writes;
  for (int i = 0; i < 40; ++i)
    writes.push_back(store.async_write_row(
        postgres_row{.table = "counters", .key_column = "id", .key = std::to_string(100 + i), .values = {{"body", "w"}}},
        static_cast<std::uint64_t>(10 + i), asio::use_future));
  std::size_t most_threads = 0;
  for (auto& w : writes) {
    most_threads = std::max(most_threads, threads_of_this_process());
    w.get();
  }
  BOOST_TEST(most_threads == threads_before);
  BOOST_TEST(count_of(db, "counters") == "41");
  BOOST_TEST(postgres_server().scalar("SELECT max(fence) FROM counters", db) == "49");
  BOOST_TEST(std::stoi(store_sessions(db)) <= 3);

  // Without a token: a deferred operation, started when given one.
  auto deferred = store.async_write_row(
      postgres_row{.table = "counters", .key_column = "id", .key = "2", .values = {{"body", "d"}}}, 50);
  std::move(deferred)(asio::use_future).get();
  BOOST_TEST(postgres_server().scalar("SELECT body FROM counters WHERE id = 2", db) == "d");

  // An error through the async form: the code, and the server's words in the result.
  auto t2 = store.async_begin("orders:1", 5, asio::use_future).get();
  reported<redlock::postgres_result> executed;
  t2.async_exec("SELEC 1", {}, executed.handler());
  auto [ec, bad] = executed.get();
  BOOST_TEST(ec == errc::server_error);
  BOOST_TEST(bad.sqlstate == "42601");
  reported<> committed;
  t2.async_commit(committed.handler());
  auto [commit_ec] = committed.get();
  BOOST_TEST(commit_ec == errc::server_error);
  BOOST_TEST(fence_of(db, "orders:1") == "4");
  BOOST_TEST(count_of(db, "counters") == "42");
}

BOOST_AUTO_TEST_CASE(a_statement_cut_short_ends_the_transaction_and_commits_nothing) {
  io_thread io;
  auto db = postgres_server().create_database("cut_short");
  postgres_server().query("CREATE TABLE ledger (token bigint)", db);
  postgres_fenced_store store(io.executor(), postgres_server().conninfo(db), {.timeout = 400ms});
  store.transact("r", 1, [](postgres_transaction&) {});
  // Timeout: the connection is dropped; the server ends the session.
  {
    auto tx = store.begin("r", 2);
    tx.exec("INSERT INTO ledger VALUES (2)");
    auto started = std::chrono::steady_clock::now();
    boost::system::error_code ec;
    tx.exec("SELECT pg_sleep(30)", {}, ec);
    BOOST_TEST(ec == errc::timeout);
    BOOST_TEST((std::chrono::steady_clock::now() - started < 10s));
    BOOST_TEST(!tx.is_open());
    BOOST_TEST(code_of([&] { tx.commit(); }) == errc::bad_option);
  }
  // Cancellation through a bound slot: the same.
  {
    auto tx = store.begin("r", 3);
    tx.exec("INSERT INTO ledger VALUES (3)");
    asio::cancellation_signal cancel;
    reported<redlock::postgres_result> sleeping;
    tx.async_exec("SELECT pg_sleep(30)", {}, asio::bind_cancellation_slot(cancel.slot(), sleeping.handler()));
    BOOST_TEST(eventually([&] { return count_of(db, "pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'") == "1"; }));
    cancel.emit(asio::cancellation_type::terminal);
    auto [ec, result] = sleeping.get();
    BOOST_TEST(ec == asio::error::operation_aborted);
    BOOST_TEST(!tx.is_open());
  }
  // The server notices the dropped sessions (client_connection_check_interval)
  // and rolls them back: neither insert, nor the fences 2 and 3, remain.
  BOOST_TEST(eventually([&] { return count_of(db, "pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'") == "0"; }, 10s));
  BOOST_TEST(count_of(db, "ledger") == "0");
  BOOST_TEST(fence_of(db, "r") == "1");
  store.transact("r", 2, [](postgres_transaction& tx) { tx.exec("INSERT INTO ledger VALUES (2)"); });
  BOOST_TEST(count_of(db, "ledger") == "1");
}

BOOST_AUTO_TEST_CASE(a_connection_dropped_mid_transaction_commits_nothing) {
  io_thread io;
  auto db = postgres_server().create_database("dropped");
  postgres_server().query("CREATE TABLE ledger (token bigint)", db);
  postgres_fenced_store store(io.executor(), postgres_server().conninfo(db));
  store.transact("r", 1, [](postgres_transaction&) {});
  auto tx = store.begin("r", 2);
  tx.exec("INSERT INTO ledger VALUES (2)");
  auto backend = tx.exec("SELECT pg_backend_pid()").rows.at(0).at(0).value();
  postgres_server().query("SELECT pg_terminate_backend(" + backend + ")");
  boost::system::error_code ec;
  tx.commit(ec);
  BOOST_TEST(ec == errc::connection_lost, ec.message());
  BOOST_TEST(!tx.is_open());
  BOOST_TEST(count_of(db, "ledger") == "0");
  BOOST_TEST(fence_of(db, "r") == "1");  // the fence was part of what rolled back

  // Idle connections the server dropped are replaced without a word: nothing
  // had been sent through them that could have committed.
  store.transact("r", 2, [](postgres_transaction& tx) { tx.exec("INSERT INTO ledger VALUES (2)"); });
  postgres_server().query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'redlock-fenced-store' AND "
      "datname = '" + db + "'");
  BOOST_TEST(eventually([&] { return store_sessions(db) == "0"; }));
  store.transact("r", 3, [](postgres_transaction& tx) { tx.exec("INSERT INTO ledger VALUES (3)"); });
  store.write_row({.table = "ledger_rows", .key_column = "id", .key = "1", .values = {}}, 3, ec);  // no such table: a server error
  BOOST_TEST(ec == errc::server_error);
  BOOST_TEST(count_of(db, "ledger") == "2");
  BOOST_TEST(fence_of(db, "r") == "3");
}

// A holder paused inside its transaction keeps the fence row locked; with
// idle_in_transaction_timeout the server ends that transaction (and its
// writes) so that the next holder gets in.
BOOST_AUTO_TEST_CASE(the_server_ends_a_transaction_left_idle_and_the_next_holder_gets_in) {
  io_thread io;
  auto db = postgres_server().create_database("idle");
  postgres_server().query("CREATE TABLE ledger (token bigint)", db);
  postgres_fenced_store paused(io.executor(), postgres_server().conninfo(db) + " options='-c work_mem=8MB'",
                               {.idle_in_transaction_timeout = 300ms});
  postgres_fenced_store next(io.executor(), postgres_server().conninfo(db));
  auto stalled = paused.begin("r", 5);
  // The caller's own options stay, next to ours.
  BOOST_TEST(stalled.exec("SHOW work_mem").rows.at(0).at(0).value_or("") == "8MB");
  BOOST_TEST(stalled.exec("SHOW idle_in_transaction_session_timeout").rows.at(0).at(0).value_or("") == "300ms");
  stalled.exec("INSERT INTO ledger VALUES (5)");
  next.transact("r", 6, [](postgres_transaction& tx) { tx.exec("INSERT INTO ledger VALUES (6)"); });  // waits ~300 ms
  boost::system::error_code ec;
  stalled.exec("INSERT INTO ledger VALUES (5)", {}, ec);
  BOOST_TEST(ec == errc::connection_lost, ec.message());
  BOOST_TEST(!stalled.is_open());
  BOOST_TEST(postgres_server().scalar("SELECT string_agg(token::text, ',') FROM ledger", db) == "6");
  BOOST_TEST(fence_of(db, "r") == "6");
}

BOOST_AUTO_TEST_CASE(transactions_wait_for_a_free_connection_within_the_timeout) {
  io_thread io;
  auto db = postgres_server().create_database("pool");
  postgres_fenced_store store(io.executor(), postgres_server().conninfo(db), {.timeout = 300ms, .max_connections = 1});
  auto held = store.begin("a", 1);
  auto why = message_of([&] { store.begin("b", 1); });
  BOOST_TEST(code_of([&] { store.begin("b", 1); }) == errc::timeout);
  BOOST_TEST(contains(why, "no connection came free"), why);
  auto waiting = store.async_begin("b", 1, asio::use_future);
  held.commit();
  auto next = waiting.get();  // served by the connection given back
  BOOST_TEST(next.is_open());
  next.rollback();
  BOOST_TEST(store_sessions(db) == "1");
}

BOOST_AUTO_TEST_CASE(the_fence_table_is_made_when_missing_or_reported_when_not_allowed_to) {
  io_thread io;
  auto db = postgres_server().create_database("tables");
  {
    postgres_fenced_store store(io.executor(), postgres_server().conninfo(db), {.create_fence_table = false});
    auto why = message_of([&] { store.begin("r", 1); });
    BOOST_TEST((contains(why, "redlock_fences") && contains(why, "42P01")), why);
  }
  postgres_server().query("CREATE SCHEMA app", db);
  postgres_fenced_store store(io.executor(), postgres_server().conninfo(db), {.fence_table = "app.Fences"});
  BOOST_TEST(store.fence_statement() ==
             "INSERT INTO \"app\".\"Fences\" AS f (resource, token) VALUES ($1, $2) ON CONFLICT (resource) DO UPDATE "
             "SET token = EXCLUDED.token WHERE f.token <= EXCLUDED.token");
  // Several stores making it at once (CREATE TABLE IF NOT EXISTS races on
  // the catalog): all succeed.
  std::vector<std::unique_ptr<postgres_fenced_store>> stores;
  for (int i = 0; i < 4; ++i)
    stores.push_back(std::make_unique<postgres_fenced_store>(io.executor(), postgres_server().conninfo(db),
                                                             postgres_store_options{.fence_table = "app.Fences"}));
  std::vector<std::string> failures(stores.size());
  std::vector<std::thread> racers;
  for (std::size_t i = 0; i < stores.size(); ++i)
    racers.emplace_back([&, i] {
      failures[i] = message_of([&] { stores[i]->begin("x" + std::to_string(i), 1).commit(); });
    });
  for (auto& t : racers) t.join();
  for (auto& f : failures) BOOST_TEST(f.empty(), f);
  BOOST_TEST(postgres_server().scalar("SELECT count(*) FROM app.\"Fences\"", db) == "4");
}

BOOST_AUTO_TEST_CASE(the_single_statement_check_behaves_as_the_docs_say_at_each_isolation_level) {
  auto db = postgres_server().create_database("docs_claim");
  postgres_server().query("CREATE TABLE documents (id bigint PRIMARY KEY, body text, fence bigint NOT NULL);"
                          "INSERT INTO documents VALUES (42, 'by 32', 32)",
                          db);
  const std::string update = "UPDATE documents SET body = 'by %1', fence = %1 WHERE id = 42 AND fence <= %1";
  auto with_token = [&](int token) {
    auto s = update;
    for (auto at = s.find("%1"); at != std::string::npos; at = s.find("%1")) s.replace(at, 2, std::to_string(token));
    return s;
  };
  const auto waiting_for_a_lock = "pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = '" + db + "'";
  int newer = 33;
  for (std::string level : {"READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"}) {
    const int stale = newer++;  // the newer token of the previous round is this round's stale one
    raw_session first(postgres_server().conninfo(db)), second(postgres_server().conninfo(db));
    first.exec("BEGIN ISOLATION LEVEL " + level);
    BOOST_TEST(first.exec(with_token(newer)).affected == 1u, level);
    second.exec("BEGIN ISOLATION LEVEL " + level);
    second.send(with_token(stale));  // waits for the first one's row lock
    BOOST_TEST(eventually([&] { return count_of(db, waiting_for_a_lock) == "1"; }));
    first.exec("COMMIT");
    auto outcome = second.result();
    if (level == "READ COMMITTED") {
      BOOST_TEST(outcome.sqlstate.empty(), level << ": " << outcome.message);
      BOOST_TEST(outcome.affected == 0u, level << ": the stale writer passed the check");
    } else {
      BOOST_TEST(outcome.sqlstate == "40001", level << ": " << outcome.message);
      second.exec("ROLLBACK");
      second.exec("BEGIN ISOLATION LEVEL " + level);
      BOOST_TEST(second.exec(with_token(stale)).affected == 0u, level << ": its retry passed the check");
    }
    second.exec("ROLLBACK");
    BOOST_TEST(postgres_server().scalar("SELECT fence FROM documents WHERE id = 42", db) == std::to_string(newer));
  }
}

// The fenced transaction at each level: a stale holder that waited behind a
// newer one is refused; a newer holder that waited behind a stale one gets
// in (at REPEATABLE READ and SERIALIZABLE through a serialization failure of
// the fence, which begin retries) and reads what the stale one committed.
BOOST_AUTO_TEST_CASE(the_fenced_transaction_behaves_the_same_at_each_isolation_level) {
  io_thread io;
  for (auto level : {postgres_isolation::read_committed, postgres_isolation::repeatable_read,
                     postgres_isolation::serializable}) {
    auto db = postgres_server().create_database("levels");
    postgres_server().query("CREATE TABLE ledger (token bigint)", db);
    postgres_fenced_store store(io.executor(), postgres_server().conninfo(db), with(level));
    store.transact("r", 10, [](postgres_transaction&) {});
    auto blocked = [&] {
      return count_of(db, "pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = '" + db + "'") == "1";
    };
    const auto log_before = postgres_server().log().size();

    // The newer holder first; the stale one waits on the fence row, then is refused.
    auto newer = store.begin("r", 12);
    newer.exec("INSERT INTO ledger VALUES (12)");
    reported<postgres_transaction> stale;
    store.async_begin("r", 11, stale.handler());
    BOOST_TEST(eventually(blocked));
    newer.commit();
    auto [stale_ec, stale_tx] = stale.get();
    BOOST_TEST(stale_ec == errc::stale_token, stale_ec.message());

    // The stale holder fenced first (before the newer one's lease began):
    // the newer one waits, then fences, and reads what the stale one wrote.
    store.transact("s", 10, [](postgres_transaction&) {});
    auto early = store.begin("s", 20);
    early.exec("INSERT INTO ledger VALUES (20)");
    auto late = store.async_begin("s", 21, asio::use_future);
    BOOST_TEST(eventually(blocked));
    early.commit();
    auto later = late.get();
    BOOST_TEST(later.is_open());
    BOOST_TEST(later.exec("SELECT count(*) FROM ledger WHERE token = 20").rows.at(0).at(0).value_or("") == "1");
    later.commit();
    BOOST_TEST(fence_of(db, "s") == "21");
    BOOST_TEST(count_of(db, "ledger") == "2");
    bool retried = contains(postgres_server().log().substr(log_before), "could not serialize access");
    BOOST_TEST(retried == (level != postgres_isolation::read_committed), "serialization failure seen: " << retried);
  }
}
