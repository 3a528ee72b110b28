// SPDX-License-Identifier: Apache-2.0
// Part 2, in PostgreSQL: the same two holders, each running a transaction
// through redlock::postgres_fenced_store (the fence row first, then a
// read-modify-write of a balance). A's, with its old token, must be refused
// with nothing of it committed. The demo starts its own server
// (initdb + postgres of Debian's postgresql-15, on a free port in a
// temporary directory) when it is installed; otherwise the part is skipped,
// saying why.
#include "demo.hpp"

#include <iostream>

#ifdef REDLOCK_DEMO_POSTGRES
#include <postgres_process.hpp>
#include <redlock/postgres_fenced_store.hpp>
#include <unistd.h>
#endif

namespace demo {

#ifdef REDLOCK_DEMO_POSTGRES
namespace {

// Adds `amount` to the balance in one fenced transaction; the refusal of a
// stale token is returned, any other error thrown.
boost::system::error_code deposit(redlock::postgres_fenced_store& store, const std::string& resource,
                                  std::uint64_t token, int amount) {
  try {
    store.transact(resource, token, [&](redlock::postgres_transaction& tx) {
      auto balance = std::stol(*tx.exec("SELECT balance FROM accounts WHERE id = 1").rows.at(0).at(0));
      tx.exec("UPDATE accounts SET balance = $1 WHERE id = 1", {std::to_string(balance + amount)});
    });
    return {};
  } catch (const redlock::error& e) {
    if (e.code() != redlock::errc::stale_token) throw;
    return e.code();
  }
}

std::string outcome(const boost::system::error_code& ec) {
  return ec ? "REFUSED (" + ec.message() + ")" : std::string("committed");
}

}  // namespace
#endif

void fencing_in_postgres(report& r, const boost::asio::any_io_executor& executor, const std::string& resource,
                         std::uint64_t token_a, std::uint64_t token_b) {
#ifndef REDLOCK_DEMO_POSTGRES
  (void)executor, (void)resource, (void)token_a, (void)token_b;
  r.skip("fencing in PostgreSQL: this build has no redlock::postgres (install libpq-dev and configure again)");
#else
  if (::access((redlock::testing::postgres_bindir() / "postgres").c_str(), X_OK) != 0) {
    r.skip("fencing in PostgreSQL: no PostgreSQL server in " + redlock::testing::postgres_bindir().string() +
           " (scripts/setup installs postgresql-15)");
    return;
  }
  std::cout << "\nThe same in PostgreSQL (redlock::postgres_fenced_store): starting a local server...\n";
  redlock::testing::postgres_process server;
  auto db = server.create_database("redlock_demo");
  server.query("CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL); INSERT INTO accounts VALUES (1, 0)",
               db);
  std::cout << "  on " << server.conninfo(db) << "; each transaction runs\n"
            << "    BEGIN; INSERT INTO redlock_fences ... ON CONFLICT (resource) DO UPDATE SET token = ... "
               "WHERE token <= ...;\n"
            << "    SELECT balance ...; UPDATE accounts SET balance = ...; COMMIT\n"
            << "  and a token older than the fence row's refuses it before the SELECT.\n";
  redlock::postgres_fenced_store store(executor, server.conninfo(db));
  auto b_result = deposit(store, resource, token_b, 10);
  std::cout << "B: deposits 10 with token " << token_b << ": " << outcome(b_result) << "\n";
  auto a_result = deposit(store, resource, token_a, 100);
  std::cout << "A: deposits 100 with its old token " << token_a << ": " << outcome(a_result) << "\n";
  auto balance = server.scalar("SELECT balance FROM accounts WHERE id = 1", db);
  std::cout << "PostgreSQL holds: balance " << balance << "\n";
  r.check(!b_result && a_result == redlock::errc::stale_token && balance == "10",
          "fencing in PostgreSQL: A's stale transaction (token " + std::to_string(token_a) +
              ") refused with nothing of it committed, B's kept");
#endif
}

}  // namespace demo
