// SPDX-License-Identifier: Apache-2.0
// Fencing end to end: a holder that pauses past its lease cannot overwrite the
// work of the holder that came after it.
//
//   example_fenced_write LOCK_URI[,LOCK_URI...] STORAGE_URI
//   example_fenced_write redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003 redis://127.0.0.1:7010
//
// LOCK_URIs are the lock masters; STORAGE_URI is a separate Redis that plays
// the storage being protected. The program:
//   1. "process A" acquires the lock with a fencing token (TTL 1 s, no renewal)
//      and writes through redlock::fenced_store: accepted;
//   2. A stops for longer than its TTL (here a sleep; in real life a GC pause,
//      a SIGSTOP, a VM freeze) and does not notice that its lease ended;
//   3. "process B" acquires the same lock, gets a larger token, writes: accepted;
//   4. A wakes up and performs the write it had prepared: the storage refuses
//      it with errc::stale_token and changes nothing.
// Exit status 0 when all of that happened as described, 1 otherwise.
#include <redlock/redlock.hpp>

#include <iostream>
#include <sstream>
#include <thread>

namespace {

redlock::client_options options_from(const char* list) {
  redlock::client_options o;
  std::stringstream in(list);
  for (std::string uri; std::getline(in, uri, ',');)
    if (!uri.empty()) o.nodes.push_back(uri);
  return o;
}

// Returns true when the storage accepted the write.
bool write(redlock::fenced_store& store, const std::string& resource, std::uint64_t token, const std::string& key,
           const std::string& value, const char* who) {
  try {
    store.write(resource, token, key, value);
    std::cout << who << ": write with token " << token << " accepted\n";
    return true;
  } catch (const redlock::error& e) {
    if (e.code() == redlock::errc::stale_token) {
      std::cout << who << ": write with token " << token << " REFUSED by the storage (" << e.code().message()
                << ")\n";
      return false;
    }
    throw;  // the storage is unreachable or misconfigured: not a fencing outcome
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " LOCK_URI[,LOCK_URI...] STORAGE_URI\n";
    return 64;
  }
  const std::string resource = "orders:42";
  // Same hash tag as the token key fenced_store keeps ("{orders:42}:fence:seen"),
  // so the check-and-set script also works on a Redis Cluster storage.
  const std::string data_key = "{" + resource + "}:data";

  try {
    redlock::client process_a(options_from(argv[1]));
    redlock::client process_b(options_from(argv[1]));
    // The store needs an executor; the sync client's own I/O thread will do,
    // and the blocking write() is then called from this (another) thread.
    redlock::fenced_store storage(process_a.async().get_executor(), argv[2]);

    // 1. A acquires with a fencing token and writes.
    auto a = process_a.acquire(resource, {.ttl = 1s, .wait = 5s, .fenced = true});
    std::cout << "A: acquired '" << resource << "', fencing token " << *a.fence() << ", validity "
              << a.remaining_validity().count() << " ms\n";
    if (a.remaining_validity() > 100ms) write(storage, resource, *a.fence(), data_key, "first version by A", "A");

    // A prepares its next write and checks its lease: still valid.
    std::string late_value = "update computed by A";
    std::cout << "A: lease checked before the next write, " << a.remaining_validity().count()
              << " ms left; now A stalls\n";

    // 2. A stalls past its TTL. The lock expires on the masters.
    std::this_thread::sleep_for(1500ms);

    // 3. B acquires: the masters hand it a strictly larger token.
    auto b = process_b.acquire(resource, {.ttl = 10s, .wait = 5s, .fenced = true});
    std::cout << "B: acquired '" << resource << "', fencing token " << *b.fence() << "\n";
    bool b_wrote = write(storage, resource, *b.fence(), data_key, "version by B", "B");

    // 4. A resumes and sends the write it had already decided on.
    std::cout << "A: resumes, its lease ended " << -a.remaining_validity().count() << " ms ago (it does not look)\n";
    bool a_wrote = write(storage, resource, *a.fence(), data_key, late_value, "A");

    // B keeps writing with the same token: >= the highest seen, accepted.
    bool b_again = write(storage, resource, *b.fence(), data_key, "second version by B", "B");
    process_b.release(b);

    bool ok = *b.fence() > *a.fence() && b_wrote && !a_wrote && b_again;
    std::cout << (ok ? "the stale write was refused; the storage holds B's data\n"
                     : "unexpected outcome (see above)\n");
    return ok ? 0 : 1;
  } catch (const redlock::error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
