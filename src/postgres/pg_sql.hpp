// SPDX-License-Identifier: Apache-2.0
// The SQL postgres_fenced_store sends, and how it reads PostgreSQL's errors.
// Pure text: no connection needed (unit-tested in test/unit/test_postgres_sql.cpp).
#pragma once

#include <redlock/error.hpp>
#include <redlock/postgres_fenced_store.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace redlock::detail::pg_sql {

/// "name" or "schema.name" as a quoted SQL identifier ("schema"."name"),
/// quotes doubled. Throws redlock::error(bad_option) naming `what` for an
/// empty name or part, or a NUL character.
std::string qualified_name(std::string_view name, std::string_view what);
/// One quoted identifier (no schema part); the same checks.
std::string identifier(std::string_view name, std::string_view what);

/// "BEGIN ISOLATION LEVEL ..." for the level.
std::string begin_statement(postgres_isolation level);

/// The fence upsert on `table` (quoted), for the resource and token given
/// as SQL text (parameters "$1", "$2", or literals). Affects one row when
/// the token is accepted, none when a newer one fenced already.
std::string fence_statement(const std::string& table, std::string_view resource = "$1",
                            std::string_view token = "$2");
/// CREATE TABLE IF NOT EXISTS for the fence rows.
std::string create_fence_table(const std::string& table);

/// write_row's upsert: $1 key, $2.. the values in order, then the token.
/// Throws redlock::error(bad_option) naming a bad table or column.
std::string row_statement(const postgres_row& row);

/// Why an operation is refused before anything is sent (no code: fine).
struct refusal {
  boost::system::error_code code;
  std::string message;
  explicit operator bool() const noexcept { return static_cast<bool>(code); }
};
/// errc::empty_name for an empty resource (or key; `what` names it),
/// errc::bad_option for token 0 or one beyond PostgreSQL's bigint.
refusal check_fence_input(std::string_view what, std::string_view value, std::uint64_t token);

/// The code for an error the server reported with this SQLSTATE.
errc classify_sqlstate(std::string_view sqlstate);
/// The SQLSTATEs of a serialization failure or deadlock: the transaction
/// was rolled back, and running it again may succeed.
bool is_serialization_failure(std::string_view sqlstate);
/// undefined_table (42P01).
bool is_undefined_table(std::string_view sqlstate);
/// What a concurrent CREATE TABLE IF NOT EXISTS of the same table may raise
/// (duplicate_table 42P07, duplicate_object 42710 for its row type,
/// unique_violation 23505 on the catalog): the table is there.
bool is_table_created_concurrently(std::string_view sqlstate);

}  // namespace redlock::detail::pg_sql
