// SPDX-License-Identifier: Apache-2.0
// The optional component redlock::postgres, built against the installed
// package (find_package(redlock CONFIG COMPONENTS postgres)): headers,
// libredlock-postgres and libpq in the link. Bad input and an unreachable
// server are reported by code.
#include <redlock/postgres_fenced_store.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <iostream>
#include <thread>

int main() {
  boost::asio::io_context ioc;
  auto work = boost::asio::make_work_guard(ioc);
  std::thread io([&] { ioc.run(); });
  int rc = 0;
  try {
    redlock::postgres_fenced_store refused(ioc.get_executor(), "nonsense");
    std::cerr << "an unparsable connection string was accepted\n";
    rc = 1;
  } catch (const redlock::error& e) {
    if (e.code() != redlock::errc::bad_uri) rc = 1;
  }
  {
    redlock::postgres_fenced_store store(ioc.get_executor(), "host=127.0.0.1 port=1 connect_timeout=2");
    boost::system::error_code ec;
    store.begin("consumer", 1, ec);
    std::cout << "consumer_postgres: unreachable server reported: " << ec.message() << "\n";
    if (ec != redlock::errc::not_connected) rc = 1;
  }
  work.reset();
  io.join();
  return rc;
}
