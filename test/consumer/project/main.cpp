// SPDX-License-Identifier: Apache-2.0
// Built against the library the way a user would (find_package, a
// subproject, pkg-config, the .deb): proves headers, library and the
// package's dependency information are complete.
//   consumer              bad input and an unreachable master, reported by code
//   consumer URI,...      also acquires and releases a lock on those masters
#include <redlock/redlock.hpp>

#include <iostream>
#include <sstream>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  std::cout << "consumer: redlock " << redlock::version << " (" << REDLOCK_VERSION_STRING << ")\n";
  try {
    redlock::client c({});
    std::cerr << "an empty node list was accepted\n";
    return 1;
  } catch (const redlock::error& e) {
    if (e.code() != redlock::errc::empty_node_list) return 1;
  }
  // A master that does not exist: the acquisition fails cleanly, by code.
  {
    redlock::client_options o;
    o.nodes = {"redis://127.0.0.1:1"};
    redlock::client c(o);
    try {
      c.acquire("consumer", {.ttl = 1000ms});
      return 1;
    } catch (const redlock::error& e) {
      std::cout << "consumer: unreachable master reported: " << e.what() << "\n";
      if (e.code() != redlock::errc::not_connected) return 1;
    }
  }
  if (argc < 2) return 0;
  redlock::client_options o;
  std::stringstream list(argv[1]);
  for (std::string uri; std::getline(list, uri, ',');) o.nodes.push_back(uri);
  redlock::client c(o);
  auto l = c.acquire("consumer", {.ttl = 5000ms, .fenced = true});
  std::cout << "consumer: acquired 'consumer' on " << o.nodes.size() << " master(s), fence " << *l.fence()
            << ", validity " << l.remaining_validity().count() << " ms\n";
  c.release(l);
  std::cout << "consumer: released\n";
  return 0;
}
