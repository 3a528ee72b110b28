// SPDX-License-Identifier: Apache-2.0
#include "pg_sql.hpp"

#include <limits>

namespace redlock::detail::pg_sql {

std::string identifier(std::string_view name, std::string_view what) {
  if (name.empty()) throw error(errc::bad_option, std::string(what) + " is empty");
  if (name.find('\0') != std::string_view::npos)
    throw error(errc::bad_option, std::string(what) + " contains a NUL character");
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

std::string qualified_name(std::string_view name, std::string_view what) {
  auto dot = name.find('.');
  if (dot == std::string_view::npos) return identifier(name, what);
  return identifier(name.substr(0, dot), std::string(what) + "'s schema") + "." +
         identifier(name.substr(dot + 1), std::string(what) + "'s table name");
}

std::string begin_statement(postgres_isolation level) {
  switch (level) {
    case postgres_isolation::repeatable_read: return "BEGIN ISOLATION LEVEL REPEATABLE READ";
    case postgres_isolation::serializable: return "BEGIN ISOLATION LEVEL SERIALIZABLE";
    case postgres_isolation::read_committed: break;
  }
  return "BEGIN ISOLATION LEVEL READ COMMITTED";
}

std::string fence_statement(const std::string& table, std::string_view resource, std::string_view token) {
  // ON CONFLICT ... DO UPDATE locks the existing row and evaluates the WHERE
  // against its newest committed version (READ COMMITTED), or fails with a
  // serialization error if that version is newer than our snapshot.
  return "INSERT INTO " + table + " AS f (resource, token) VALUES (" + std::string(resource) + ", " +
         std::string(token) +
         ") ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token WHERE f.token <= EXCLUDED.token";
}

std::string create_fence_table(const std::string& table) {
  return "CREATE TABLE IF NOT EXISTS " + table + " (resource text PRIMARY KEY, token bigint NOT NULL)";
}

std::string row_statement(const postgres_row& row) {
  const auto table = qualified_name(row.table, "postgres_row::table");
  const auto key = identifier(row.key_column, "postgres_row::key_column");
  const auto fence = identifier(row.fence_column, "postgres_row::fence_column");
  if (key == fence) throw error(errc::bad_option, "postgres_row: key_column and fence_column are the same column");
  std::string columns = key, values = "$1", updates;
  int n = 1;
  for (auto& [column, value] : row.values) {
    auto c = identifier(column, "a postgres_row::values column");
    if (c == key || c == fence)
      throw error(errc::bad_option, "postgres_row::values names the " + std::string(c == key ? "key" : "fence") +
                                        " column '" + column + "': it is written by write_row itself");
    columns += ", " + c;
    values += ", $" + std::to_string(++n);
    updates += c + " = EXCLUDED." + c + ", ";
  }
  columns += ", " + fence;
  values += ", $" + std::to_string(++n);
  updates += fence + " = EXCLUDED." + fence;
  return "INSERT INTO " + table + " AS t (" + columns + ") VALUES (" + values + ") ON CONFLICT (" + key +
         ") DO UPDATE SET " + updates + " WHERE t." + fence + " <= EXCLUDED." + fence;
}

refusal check_fence_input(std::string_view what, std::string_view value, std::uint64_t token) {
  if (value.empty()) return {errc::empty_name, "the " + std::string(what) + " is empty"};
  if (token == 0)
    return {errc::bad_option, "fencing token 0 is no token: tokens start at 1 (lock::fence() of a fenced acquisition)"};
  if (token > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return {errc::bad_option, "fencing token " + std::to_string(token) + " does not fit PostgreSQL's bigint"};
  return {};
}

errc classify_sqlstate(std::string_view s) {
  if (is_serialization_failure(s)) return errc::serialization_failure;
  if (s == "28P01" || s == "28000") return errc::auth_failed;
  if (s == "57014") return errc::timeout;  // query_canceled: statement_timeout or a cancel request
  // connection_exception class, admin/crash shutdown, idle-in-transaction timeout: the session is gone.
  if (s.starts_with("08") || s == "57P01" || s == "57P02" || s == "57P03" || s == "25P03")
    return errc::connection_lost;
  return errc::server_error;
}

bool is_serialization_failure(std::string_view s) { return s == "40001" || s == "40P01"; }
bool is_undefined_table(std::string_view s) { return s == "42P01"; }
bool is_table_created_concurrently(std::string_view s) { return s == "42P07" || s == "42710" || s == "23505"; }

}  // namespace redlock::detail::pg_sql
