// SPDX-License-Identifier: Apache-2.0
// Error codes and the conditions callers test for instead of listing codes.
#define BOOST_TEST_MODULE unit_errors
#include <boost/test/unit_test.hpp>

#include <redlock/error.hpp>

using redlock::condition;
using redlock::errc;

BOOST_AUTO_TEST_CASE(every_code_has_a_message_and_its_group) {
  struct row {
    errc code;
    condition group;
  };
  const row rows[] = {
      {errc::empty_node_list, condition::invalid_argument}, {errc::bad_uri, condition::invalid_argument},
      {errc::bad_ttl, condition::invalid_argument},         {errc::node_timeout_too_large, condition::invalid_argument},
      {errc::empty_name, condition::invalid_argument},      {errc::bad_drift_factor, condition::invalid_argument},
      {errc::bad_option, condition::invalid_argument},      {errc::empty_lock, condition::invalid_argument},
      {errc::wrong_type, condition::invalid_argument},      {errc::unfenced_hold, condition::invalid_argument},
      {errc::not_acquired, condition::contended},           {errc::validity_expired, condition::contended},
      {errc::serialization_failure, condition::contended},
      {errc::timeout, condition::node_failure},             {errc::not_connected, condition::node_failure},
      {errc::connection_lost, condition::node_failure},     {errc::auth_failed, condition::node_failure},
      {errc::bad_database, condition::node_failure},
      {errc::out_of_memory, condition::node_failure},       {errc::read_only, condition::node_failure},
      {errc::server_error, condition::node_failure},        {errc::protocol_error, condition::node_failure},
      {errc::reply_too_large, condition::node_failure},     {errc::too_many_pending, condition::node_failure},
      {errc::not_held, condition::lost},                    {errc::stale_token, condition::lost},
  };
  for (auto& r : rows) {
    boost::system::error_code ec = r.code;
    BOOST_TEST(ec.message() != "unknown redlock error");
    BOOST_TEST(ec == r.group, ec.message());
    for (auto other : {condition::invalid_argument, condition::contended, condition::node_failure, condition::lost})
      if (other != r.group) BOOST_TEST(ec != other, ec.message());
  }
  // Shutting down is none of them: nothing the caller did, nothing to wait for.
  boost::system::error_code down = errc::shutting_down;
  BOOST_TEST(down != condition::node_failure);
  BOOST_TEST(down != condition::lost);
  // Codes of other categories never match.
  BOOST_TEST(boost::system::error_code(ETIMEDOUT, boost::system::generic_category()) != condition::node_failure);
}
