// SPDX-License-Identifier: Apache-2.0
// Fencing in PostgreSQL with redlock::postgres_fenced_store (CMake target
// redlock::postgres): a holder that pauses past its lease cannot commit over
// the work of the holder that came after it.
//
//   example_fenced_postgres LOCK_URI[,LOCK_URI...] CONNINFO
//   example_fenced_postgres redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003 "dbname=scratch"
//
// CONNINFO is a libpq connection string (or postgresql:// URI) of a scratch
// database: the program creates the tables `accounts` and `documents` if
// missing, and the store its fence table `redlock_fences`. It:
//   1. has "process A" take the lock with a fencing token (TTL 1 s) and run
//      a transaction through the store: the fence row first, then a
//      read-modify-write of an account's balance; committed;
//   2. has A stall past its TTL (a GC pause, a SIGSTOP) and prepare its
//      next transaction without noticing;
//   3. has "process B" take the lock (a larger token) and run its own;
//   4. has A run its transaction with its old token: refused with
//      errc::stale_token before any of its statements runs; nothing of it
//      is committed;
//   5. shows the single-statement form (write_row) on a row that carries
//      its own fence column, asynchronously.
// Exit status 0 when all of that happened as described, 1 otherwise.
#include <redlock/postgres_fenced_store.hpp>
#include <redlock/redlock.hpp>

#include <boost/asio/use_future.hpp>

#include <iostream>
#include <sstream>
#include <thread>

namespace {

redlock::client_options options_from(const char* list) {
  redlock::client_options o;
  std::stringstream in(list);
  for (std::string uri; std::getline(in, uri, ',');)
    if (!uri.empty()) o.nodes.push_back(uri);
  return o;
}

// One critical section's transaction: add `amount` to account 42. Returns
// false when the store refused the token (we are a stale holder).
bool deposit(redlock::postgres_fenced_store& store, const std::string& resource, std::uint64_t token, int amount,
             const char* who) {
  try {
    store.transact(resource, token, [&](redlock::postgres_transaction& tx) {
      // Runs only once the fence row took our token, inside its transaction.
      auto balance = std::stol(*tx.exec("SELECT balance FROM accounts WHERE id = 42").rows.at(0).at(0));
      tx.exec("UPDATE accounts SET balance = $1 WHERE id = 42", {std::to_string(balance + amount)});
    });
    std::cout << who << ": transaction with token " << token << " committed\n";
    return true;
  } catch (const redlock::error& e) {
    if (e.code() != redlock::errc::stale_token) throw;  // not a fencing outcome: the database failed
    std::cout << who << ": transaction with token " << token << " REFUSED (" << e.what() << ")\n";
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " LOCK_URI[,LOCK_URI...] CONNINFO\n";
    return 64;
  }
  const std::string resource = "accounts:42";
  try {
    redlock::client process_a(options_from(argv[1]));
    redlock::client process_b(options_from(argv[1]));
    // The store runs on an executor; the sync client's I/O thread will do,
    // and the blocking calls then come from this (another) thread.
    redlock::postgres_fenced_store store(process_a.async().get_executor(), argv[2]);

    // Set-up (a transaction like any other, fenced with token 1).
    store.transact("example:setup", 1, [](redlock::postgres_transaction& tx) {
      tx.exec("CREATE TABLE IF NOT EXISTS accounts (id bigint PRIMARY KEY, balance bigint NOT NULL)");
      tx.exec("INSERT INTO accounts VALUES (42, 0) ON CONFLICT (id) DO UPDATE SET balance = 0");
      tx.exec("CREATE TABLE IF NOT EXISTS documents (id bigint PRIMARY KEY, body text, fence bigint NOT NULL)");
    });

    // 1. A acquires with a fencing token and deposits 100.
    auto a = process_a.acquire(resource, {.ttl = 1s, .wait = 5s, .fenced = true});
    std::cout << "A: acquired '" << resource << "', fencing token " << *a.fence() << "\n";
    bool a_first = deposit(store, resource, *a.fence(), 100, "A");

    // 2. A stalls past its TTL; the lock expires on the masters.
    std::cout << "A: prepares a deposit of 50, then stalls for 1.5 s\n";
    std::this_thread::sleep_for(1500ms);

    // 3. B acquires: a strictly larger token. It deposits 10.
    auto b = process_b.acquire(resource, {.ttl = 10s, .wait = 5s, .fenced = true});
    std::cout << "B: acquired '" << resource << "', fencing token " << *b.fence() << "\n";
    bool b_wrote = deposit(store, resource, *b.fence(), 10, "B");

    // 4. A resumes and runs the transaction it had decided on.
    std::cout << "A: resumes, its lease ended " << -a.remaining_validity().count() << " ms ago (it does not look)\n";
    bool a_late = deposit(store, resource, *a.fence(), 50, "A");

    // 5. One row with its own fence column, one statement, asynchronously:
    //    INSERT ... ON CONFLICT (id) DO UPDATE SET ... WHERE t.fence <= EXCLUDED.fence
    redlock::postgres_row doc{.table = "documents", .key_column = "id", .key = "7", .values = {{"body", "by B"}}};
    store.async_write_row(doc, *b.fence(), boost::asio::use_future).get();
    doc.values[0].second = "late, by A";
    boost::system::error_code doc_refused;
    store.write_row(doc, *a.fence(), doc_refused);
    std::cout << "A: write_row of document 7 with token " << *a.fence() << ": " << doc_refused.message() << "\n";

    // B, still the holder, reads the balance back (equal tokens pass).
    long balance = 0;
    store.transact(resource, *b.fence(), [&](redlock::postgres_transaction& tx) {
      balance = std::stol(*tx.exec("SELECT balance FROM accounts WHERE id = 42").rows.at(0).at(0));
    });
    process_b.release(b);
    std::cout << "balance of account 42: " << balance << " (100 by A, 10 by B; A's late 50 refused)\n";
    bool ok = a_first && b_wrote && !a_late && doc_refused == redlock::errc::stale_token && balance == 110;
    std::cout << (ok ? "the stale transaction was refused and nothing of it was committed\n"
                     : "unexpected outcome (see above)\n");
    return ok ? 0 : 1;
  } catch (const redlock::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
