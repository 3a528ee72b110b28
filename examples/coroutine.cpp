// SPDX-License-Identifier: Apache-2.0
// C++20 coroutines with asio::use_awaitable, and a fencing token.
#include <redlock/redlock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <iostream>
#include <sstream>

namespace asio = boost::asio;

asio::awaitable<void> critical(redlock::async_client& client) {
  using namespace std::chrono_literals;
  // A named variable, not a braced temporary inside the co_await expression:
  // g++ 12 destroys such temporaries wrongly (GCC bug 100611).
  redlock::acquire_options opts{.ttl = 5s, .wait = 2s, .fenced = true};
  auto l = co_await client.async_acquire("ledger:writer", opts, asio::use_awaitable);
  std::cout << "writer with fence " << l.fence().value_or(0) << "\n";
  // ... pass l.fence() to the storage with every write ...
  co_await client.async_release(l, asio::use_awaitable);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " URI[,URI...]\n";
    return 64;
  }
  redlock::client_options options;
  std::stringstream list(argv[1]);
  for (std::string uri; std::getline(list, uri, ',');) options.nodes.push_back(uri);
  asio::io_context io;
  redlock::async_client client(io.get_executor(), options);
  int rc = 0;
  asio::co_spawn(io, critical(client), [&](std::exception_ptr e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        std::cerr << "failed: " << ex.what() << "\n";
        rc = 1;
      }
    }
    io.stop();
  });
  io.run();
  return rc;
}
