// SPDX-License-Identifier: Apache-2.0
// Part 2: fencing. Holder A takes a fenced lock with a short TTL and stalls
// past its lease (as in a GC pause or a SIGSTOP); B takes the lock with a
// larger token and writes; A wakes up and writes with its old token. The
// storage (redlock::fenced_store) must refuse A's write; then the same in
// PostgreSQL (fencing_postgres.cpp), when it is installed.
#include "demo.hpp"

#include <redlock/redlock.hpp>

#include <iostream>

namespace demo {
namespace {

// The storage's answer to one fenced write: success, errc::stale_token, or
// (thrown) anything that is not a fencing outcome.
boost::system::error_code try_write(redlock::fenced_store& store, const std::string& resource, std::uint64_t token,
                                    const std::string& key, const std::string& value) {
  try {
    store.write(resource, token, key, value);
    return {};
  } catch (const redlock::error& e) {
    if (e.code() != redlock::errc::stale_token) throw;
    return e.code();
  }
}

std::string outcome(const boost::system::error_code& ec) {
  return ec ? "REFUSED (" + ec.message() + ")" : std::string("accepted");
}

}  // namespace

void fencing(setup& s, report& r) {
  heading("2. Fencing: a holder that stalls past its lease cannot overwrite newer work");
  std::cout << "A lease can end while its holder is paused and unaware of it. Each fenced acquisition gets a\n"
            << "larger token, and the storage refuses a write whose token is older than one it has seen\n"
            << "(redlock::fenced_store, on " << s.storage.uri << ").\n";
  const std::string resource = "redlock-demo:fenced";
  // Same hash tag as fenced_store's own key for the resource ("{...}:fence:seen").
  const std::string data_key = "{" + resource + "}:data";

  redlock::client_options options;
  options.nodes = s.nodes;
  options.node_timeout = 50ms;
  redlock::client process_a(options), process_b(options);
  // The blocking write() is called from this thread, not the client's I/O thread.
  redlock::fenced_store storage(process_a.async().get_executor(), s.storage.uri);

  redlock::acquire_options a_opts{.ttl = 1s, .wait = 5s, .fenced = true};
  auto a = process_a.acquire(resource, a_opts);
  const auto token_a = *a.fence();
  std::cout << "A: acquired '" << resource << "' with TTL 1 s: token " << token_a << ", validity "
            << a.remaining_validity().count() << " ms\n";
  std::cout << "A: prepares a write, then stalls for 1.5 s (a GC pause, a SIGSTOP) and does not notice its lease end\n";
  sleep_for(1500ms);

  redlock::acquire_options b_opts{.ttl = 10s, .wait = 5s, .fenced = true};
  auto b = process_b.acquire(resource, b_opts);
  const auto token_b = *b.fence();
  std::cout << "B: acquired '" << resource << "': token " << token_b << "\n";
  auto b_result = try_write(storage, resource, token_b, data_key, "written by B");
  std::cout << "B: writes with token " << token_b << ": " << outcome(b_result) << "\n";

  std::cout << "A: wakes up " << -a.remaining_validity().count()
            << " ms after its lease ended and sends the write it prepared\n";
  auto a_result = try_write(storage, resource, token_a, data_key, "late write by A");
  std::cout << "A: writes with token " << token_a << ": " << outcome(a_result) << "\n";

  auto stored = plain_redis(s.storage).get(data_key);
  std::cout << "storage holds: \"" << stored << "\"\n";
  r.check(token_b > token_a,
          "fencing: B's token " + std::to_string(token_b) + " > A's token " + std::to_string(token_a));
  r.check(!b_result && a_result == redlock::errc::stale_token && stored == "written by B",
          "fencing: A's stale write (token " + std::to_string(token_a) + ") refused, B's write kept");
  try {
    fencing_in_postgres(r, process_a.async().get_executor(), resource, token_a, token_b);
  } catch (const interrupted&) {
    throw;
  } catch (const std::exception& e) {
    r.check(false, std::string("fencing in PostgreSQL: stopped by an error: ") + e.what());
  }
  process_b.release(b);
}

}  // namespace demo
