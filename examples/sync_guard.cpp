// SPDX-License-Identifier: Apache-2.0
// The simplest use: a guard that releases when it goes out of scope.
//   example_sync_guard redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003
#include <redlock/redlock.hpp>

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

  try {
    redlock::client client(options);
    auto guard = client.lock_guard("reports:nightly", {.ttl = 30s, .wait = 5s});
    std::cout << "holding " << guard->name() << " for " << guard->remaining_validity().count() << " ms\n";
    // ... critical work; check guard->remaining_validity() before each side effect ...
  } catch (const redlock::error& e) {
    std::cerr << "could not run the critical section: " << e.what() << "\n";
    return 75;
  }
}
