// SPDX-License-Identifier: Apache-2.0
// Built against the installed package: proves headers, library and the
// package config (with its dependencies) are complete.
#include <redlock/redlock.hpp>

#include <iostream>

int main() {
  using namespace std::chrono_literals;
  try {
    redlock::client c({});
    std::cerr << "an empty node list was accepted\n";
    return 1;
  } catch (const redlock::error& e) {
    if (e.code() != redlock::errc::empty_node_list) return 1;
  }
  // A master that does not exist: the acquisition fails cleanly, by code.
  redlock::client_options o;
  o.nodes = {"redis://127.0.0.1:1"};
  redlock::client c(o);
  try {
    c.acquire("consumer", {.ttl = 1000ms});
    return 1;
  } catch (const redlock::error& e) {
    std::cout << "consumer: linked against redlock; unreachable master reported: " << e.what() << "\n";
    return e.code() == redlock::errc::not_connected ? 0 : 1;
  }
}
