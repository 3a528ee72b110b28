// SPDX-License-Identifier: Apache-2.0
// A real PostgreSQL server for the tests and the demo: initdb in a fresh
// temporary directory, then `postgres` on a free loopback port with its Unix
// socket in that directory, fsync off. Run as an unprivileged user (the
// server refuses root): as root, the `postgres` user Debian's package makes.
// Killed with the process that started it (PR_SET_PDEATHSIG), stopped and
// removed by the destructor; a directory left by a killed test is removed
// by the next start. Never touches a system cluster (port 5432 and
// /var/run/postgresql are not used).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>
#include <sys/types.h>

namespace redlock::testing {

struct postgres_options {
  /// Server settings added to the command line, "name=value" each.
  std::vector<std::string> settings;
};

class postgres_process {
 public:
  /// Throws std::runtime_error naming what is missing (the server programs,
  /// the postgres user) or the log of a server that would not start.
  explicit postgres_process(postgres_options options = {});
  ~postgres_process();
  postgres_process(const postgres_process&) = delete;
  postgres_process& operator=(const postgres_process&) = delete;

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::filesystem::path& dir() const { return dir_; }

  /// libpq connection string for `db` over TCP loopback, superuser postgres.
  std::string conninfo(const std::string& db = "postgres") const;
  /// A new empty database (CREATE DATABASE), named after `prefix`: its name.
  std::string create_database(const std::string& prefix = "test");

  /// Runs `sql` (simple query protocol: several statements allowed) on its
  /// own connection; returns the last statement's rows, NULL as "(null)".
  /// Throws std::runtime_error with the server's message on an error.
  std::vector<std::vector<std::string>> query(const std::string& sql, const std::string& db = "postgres") const;
  /// The first column of the first row, or "" when there is no row.
  std::string scalar(const std::string& sql, const std::string& db = "postgres") const;
  /// The server's log (its standard error) so far.
  std::string log() const;

  void stop();   // fast shutdown (SIGINT), then SIGKILL if it lingers
  void kill9();  // SIGKILL; its backends exit when they see it gone

 private:
  void spawn();
  void wait_ready(std::chrono::milliseconds limit);
  std::filesystem::path data() const { return dir_ / "data"; }

  postgres_options options_;
  std::filesystem::path dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  int database_counter_ = 0;
};

/// Where initdb and postgres are: $REDLOCK_POSTGRES_BINDIR, else the
/// directory the build was configured with (/usr/lib/postgresql/15/bin).
std::filesystem::path postgres_bindir();

}  // namespace redlock::testing
