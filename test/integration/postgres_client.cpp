// SPDX-License-Identifier: Apache-2.0
// A lock holder as a process of its own, for test_postgres_processes.cpp:
// N critical sections, each under a fenced lock, each one transaction in
// PostgreSQL that reads a counter, writes it back plus one, and journals
// (writer, section, token). Fenced: through postgres_fenced_store::transact
// (the fence row first). --unfenced: the same transaction over plain libpq,
// without the fence. Before the transaction of section --stop-before K it
// stops ITSELF with SIGSTOP (the whole process, the library's threads too),
// holding a lock whose lease then ends; the test resumes it with SIGCONT.
//
//   integration_postgres_client --masters U1,U2,U3 --conninfo STRING --lock NAME --writer NAME
//       --sections N --ttl MS [--unfenced] [--stop-before K]
//
// Prints one line per section: "section I ok token T" or
// "section I fail <errc name> token T: <why>".
#include <redlock/postgres_fenced_store.hpp>
#include <redlock/redlock.hpp>

#include <libpq-fe.h>

#include <csignal>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct args {
  std::vector<std::string> masters;
  std::string conninfo, lock, writer;
  int sections = 1, stop_before = -1;
  long ttl_ms = 1000;
  bool fenced = true;
};

args parse(int argc, char** argv) {
  args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + k);
      return argv[++i];
    };
    if (k == "--masters") {
      std::istringstream list(value());
      for (std::string u; std::getline(list, u, ',');) a.masters.push_back(u);
    } else if (k == "--conninfo") a.conninfo = value();
    else if (k == "--lock") a.lock = value();
    else if (k == "--writer") a.writer = value();
    else if (k == "--sections") a.sections = std::stoi(value());
    else if (k == "--ttl") a.ttl_ms = std::stol(value());
    else if (k == "--stop-before") a.stop_before = std::stoi(value());
    else if (k == "--unfenced") a.fenced = false;
    else throw std::invalid_argument("unknown argument " + k);
  }
  return a;
}

std::vector<std::optional<std::string>> journal_entry(const args& a, int section, std::uint64_t token) {
  return {a.writer, std::to_string(section), std::to_string(token)};
}

const char* const read_counter = "SELECT v FROM counter WHERE id = 1";
const char* const write_counter = "UPDATE counter SET v = $1 WHERE id = 1";
const char* const journal = "INSERT INTO journal (writer, section, token) VALUES ($1, $2, $3)";

// The unfenced transaction, over plain libpq: what a user without the
// store would write.
void unfenced_section(PGconn* c, const args& a, int section, std::uint64_t token) {
  auto run = [c](const char* sql, const std::vector<std::optional<std::string>>& params) {
    std::vector<const char*> values;
    for (auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    PGresult* r = PQexecParams(c, sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0);
    auto status = PQresultStatus(r);
    std::string value = status == PGRES_TUPLES_OK && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "";
    std::string why = PQresultErrorMessage(r);
    PQclear(r);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) throw std::runtime_error(why);
    return value;
  };
  run("BEGIN", {});
  auto v = std::stoll(run(read_counter, {}));
  run(write_counter, {std::to_string(v + 1)});
  run(journal, journal_entry(a, section, token));
  run("COMMIT", {});
}

}  // namespace

int main(int argc, char** argv) {
  try {
    auto a = parse(argc, argv);
    redlock::client_options co;
    co.nodes = a.masters;
    co.node_timeout = std::chrono::milliseconds(50);
    redlock::client client(co);
    // On the client's own I/O thread; the blocking calls come from this one.
    redlock::postgres_fenced_store store(client.async().get_executor(), a.conninfo);
    std::unique_ptr<PGconn, void (*)(PGconn*)> plain(PQconnectdb(a.conninfo.c_str()), PQfinish);
    if (PQstatus(plain.get()) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(plain.get()));
    for (int i = 0; i < a.sections; ++i) {
      redlock::acquire_options o;
      o.ttl = std::chrono::milliseconds(a.ttl_ms);
      o.wait = std::chrono::milliseconds(5000);
      o.retry_delay = std::chrono::milliseconds(20);
      o.retry_jitter = std::chrono::milliseconds(10);
      o.fenced = true;  // unfenced sections journal their token too, for the checker
      auto l = client.try_acquire(a.lock, o);
      if (!l) {
        std::cout << "section " << i << " fail not_acquired token 0" << std::endl;
        continue;
      }
      const auto token = *l->fence();
      if (i == a.stop_before) std::raise(SIGSTOP);  // holding the lock, before the transaction
      std::string failure, why;  // the errc name and message of a failed section
      try {
        if (a.fenced) {
          store.transact(a.lock, token, [&](redlock::postgres_transaction& tx) {
            auto v = std::stoll(*tx.exec(read_counter).rows.at(0).at(0));
            tx.exec(write_counter, {std::to_string(v + 1)});
            tx.exec(journal, journal_entry(a, i, token));
          });
        } else {
          unfenced_section(plain.get(), a, i, token);
        }
      } catch (const redlock::error& e) {
        failure = redlock::errc_name(static_cast<redlock::errc>(e.code().value()));
        why = e.what();
      }
      try {
        client.release(*l);
      } catch (const redlock::error&) {
        // An expired lock: the section's outcome is its transaction's.
      }
      std::cout << "section " << i << (failure.empty() ? " ok" : " fail " + failure) << " token " << token
                << (why.empty() ? "" : ": " + why) << std::endl;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "postgres_client: " << e.what() << std::endl;
    return 2;
  }
}
