// SPDX-License-Identifier: Apache-2.0
// The SQL postgres_fenced_store sends and how it reads SQLSTATEs, without a
// server (integration_postgres runs them against one).
#define BOOST_TEST_MODULE unit_postgres_sql
#include <boost/test/unit_test.hpp>

#include "postgres/pg_sql.hpp"

using redlock::errc;
namespace pg_sql = redlock::detail::pg_sql;

namespace {
errc code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const redlock::error& e) {
    return static_cast<errc>(e.code().value());
  }
  return errc{};
}
}  // namespace

BOOST_AUTO_TEST_CASE(names_are_quoted_exactly_as_written) {
  BOOST_TEST(pg_sql::identifier("documents", "t") == "\"documents\"");
  BOOST_TEST(pg_sql::identifier("Odd\"Name", "t") == "\"Odd\"\"Name\"");
  BOOST_TEST(pg_sql::qualified_name("app.Fences", "t") == "\"app\".\"Fences\"");
  BOOST_TEST(pg_sql::qualified_name("Robert'); DROP TABLE x;--", "t") == "\"Robert'); DROP TABLE x;--\"");
  for (const std::string& bad : std::vector<std::string>{"", ".t", "s.", std::string("a\0b", 3)})
    BOOST_TEST(code_of([&] { pg_sql::qualified_name(bad, "t"); }) == errc::bad_option, bad);
}

BOOST_AUTO_TEST_CASE(the_fence_and_row_statements) {
  BOOST_TEST(pg_sql::fence_statement("\"f\"") ==
             "INSERT INTO \"f\" AS f (resource, token) VALUES ($1, $2) ON CONFLICT (resource) DO UPDATE SET token = "
             "EXCLUDED.token WHERE f.token <= EXCLUDED.token");
  BOOST_TEST(pg_sql::fence_statement("\"f\"", "'r'", "7").find("VALUES ('r', 7)") != std::string::npos);
  BOOST_TEST(pg_sql::begin_statement(redlock::postgres_isolation::serializable) ==
             "BEGIN ISOLATION LEVEL SERIALIZABLE");
  redlock::postgres_row row{.table = "docs", .key_column = "id", .key = "1", .values = {{"a", "x"}, {"b", std::nullopt}}};
  BOOST_TEST(pg_sql::row_statement(row) ==
             "INSERT INTO \"docs\" AS t (\"id\", \"a\", \"b\", \"fence\") VALUES ($1, $2, $3, $4) ON CONFLICT (\"id\") "
             "DO UPDATE SET \"a\" = EXCLUDED.\"a\", \"b\" = EXCLUDED.\"b\", \"fence\" = EXCLUDED.\"fence\" WHERE "
             "t.\"fence\" <= EXCLUDED.\"fence\"");
  row.values.clear();  // a claim of the row: only its fence
  BOOST_TEST(pg_sql::row_statement(row).find("DO UPDATE SET \"fence\" = EXCLUDED.\"fence\" WHERE") != std::string::npos);
  auto same = row;
  same.fence_column = "id";
  BOOST_TEST(code_of([&] { pg_sql::row_statement(same); }) == errc::bad_option);
  auto key_as_value = row;
  key_as_value.values.emplace_back("id", "2");
  BOOST_TEST(code_of([&] { pg_sql::row_statement(key_as_value); }) == errc::bad_option);
}

BOOST_AUTO_TEST_CASE(fence_input_checks) {
  BOOST_TEST(!pg_sql::check_fence_input("resource", "r", 1));
  BOOST_TEST(pg_sql::check_fence_input("resource", "", 1).code == errc::empty_name);
  BOOST_TEST(pg_sql::check_fence_input("resource", "r", 0).code == errc::bad_option);
  BOOST_TEST(!pg_sql::check_fence_input("resource", "r", (1ull << 63) - 1));
  BOOST_TEST(pg_sql::check_fence_input("resource", "r", 1ull << 63).code == errc::bad_option);
}

BOOST_AUTO_TEST_CASE(sqlstates_map_to_codes) {
  BOOST_TEST(pg_sql::classify_sqlstate("40001") == errc::serialization_failure);
  BOOST_TEST(pg_sql::classify_sqlstate("40P01") == errc::serialization_failure);
  BOOST_TEST(pg_sql::classify_sqlstate("28P01") == errc::auth_failed);
  BOOST_TEST(pg_sql::classify_sqlstate("57P01") == errc::connection_lost);
  BOOST_TEST(pg_sql::classify_sqlstate("08006") == errc::connection_lost);
  BOOST_TEST(pg_sql::classify_sqlstate("57014") == errc::timeout);
  BOOST_TEST(pg_sql::classify_sqlstate("42P01") == errc::server_error);
  BOOST_TEST(pg_sql::classify_sqlstate("23505") == errc::server_error);
}

BOOST_AUTO_TEST_CASE(what_a_concurrent_create_table_raises_means_the_table_is_there) {
  for (auto s : {"42P07", "42710", "23505"}) BOOST_TEST(pg_sql::is_table_created_concurrently(s), s);
  BOOST_TEST(!pg_sql::is_table_created_concurrently("42501"));  // no CREATE privilege: reported
}
