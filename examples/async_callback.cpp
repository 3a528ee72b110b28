// SPDX-License-Identifier: Apache-2.0
// Callbacks on your own io_context.
#include <redlock/redlock.hpp>

#include <boost/asio/io_context.hpp>

#include <iostream>
#include <sstream>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " URI[,URI...]\n";
    return 64;
  }
  redlock::client_options options;
  std::stringstream list(argv[1]);
  for (std::string uri; std::getline(list, uri, ',');) options.nodes.push_back(uri);

  boost::asio::io_context io;
  redlock::async_client client(io.get_executor(), options);
  int rc = 1;
  client.async_acquire("jobs:rebalance", {.ttl = 10s}, [&](boost::system::error_code ec, redlock::lock l) {
    if (ec) {
      std::cerr << "not acquired: " << ec.message() << "\n";
      io.stop();
      return;
    }
    std::cout << "acquired, " << l.remaining_validity().count() << " ms of validity\n";
    client.async_release(l, [&](boost::system::error_code ec2) {
      std::cout << "released: " << (ec2 ? ec2.message() : "ok") << "\n";
      rc = ec2 ? 1 : 0;
      io.stop();
    });
  });
  io.run();
  return rc;
}
