// SPDX-License-Identifier: Apache-2.0
// A lock client as a process of its own, for the checker that does not trust
// the library (test_independent.cpp): N critical sections of read-modify-write
// on a counter in a storage redis: GET (plain hiredis), +1, then SET (plain
// hiredis, unfenced) or a fenced_store write with the lock's token (fenced).
// After the read of section --stop-after-read it stops ITSELF with SIGSTOP,
// a real stop of the whole process (the library's I/O thread included),
// between reaching the quorum and writing; the test resumes it with SIGCONT.
//
//   redlock_fault_rmw_client --masters U1,U2,U3 --storage-port P --lock NAME
//       --counter KEY --sections N --ttl MS [--fenced] [--stop-after-read K]
//
// Prints one line per section: "section I ok" or "section I fail <why>".
#include <redlock/redlock.hpp>

#include <hiredis/hiredis.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct args {
  std::vector<std::string> masters;
  int storage_port = 0;
  std::string lock, counter;
  int sections = 1, stop_after_read = -1;
  long ttl_ms = 1000;
  bool fenced = false;
};

args parse(int argc, char** argv) {
  args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + k);
      return argv[++i];
    };
    if (k == "--masters") {
      std::istringstream list(value());
      for (std::string u; std::getline(list, u, ',');) a.masters.push_back(u);
    } else if (k == "--storage-port") a.storage_port = std::stoi(value());
    else if (k == "--lock") a.lock = value();
    else if (k == "--counter") a.counter = value();
    else if (k == "--sections") a.sections = std::stoi(value());
    else if (k == "--ttl") a.ttl_ms = std::stol(value());
    else if (k == "--stop-after-read") a.stop_after_read = std::stoi(value());
    else if (k == "--fenced") a.fenced = true;
    else throw std::invalid_argument("unknown argument " + k);
  }
  return a;
}

struct redis_deleter {
  void operator()(redisContext* c) const { redisFree(c); }
};

// GET (absent = 0) and SET on the storage, without the library.
long long get_counter(redisContext* c, const std::string& key) {
  auto* r = static_cast<redisReply*>(redisCommand(c, "GET %s", key.c_str()));
  if (!r) throw std::runtime_error("storage GET failed");
  long long v = r->type == REDIS_REPLY_STRING ? std::stoll(std::string(r->str, r->len)) : 0;
  freeReplyObject(r);
  return v;
}

void set_counter(redisContext* c, const std::string& key, long long v) {
  auto* r = static_cast<redisReply*>(redisCommand(c, "SET %s %lld", key.c_str(), v));
  if (!r) throw std::runtime_error("storage SET failed");
  freeReplyObject(r);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    auto a = parse(argc, argv);
    redlock::client_options co;
    co.nodes = a.masters;
    co.node_timeout = std::chrono::milliseconds(50);
    redlock::client client(co);
    std::unique_ptr<redisContext, redis_deleter> storage(redisConnect("127.0.0.1", a.storage_port));
    if (!storage || storage->err) throw std::runtime_error("cannot reach the storage");
    // On the client's own I/O thread; write() blocks this one.
    redlock::fenced_store store(client.async().get_executor(), "redis://127.0.0.1:" + std::to_string(a.storage_port));
    for (int i = 0; i < a.sections; ++i) {
      redlock::acquire_options o;
      o.ttl = std::chrono::milliseconds(a.ttl_ms);
      o.wait = std::chrono::milliseconds(5000);
      o.retry_delay = std::chrono::milliseconds(20);
      o.retry_jitter = std::chrono::milliseconds(10);
      o.fenced = a.fenced;
      auto l = client.try_acquire(a.lock, o);
      if (!l) {
        std::cout << "section " << i << " fail not acquired" << std::endl;
        continue;
      }
      auto v = get_counter(storage.get(), a.counter);
      if (i == a.stop_after_read) std::raise(SIGSTOP);  // paused between the read and the write
      std::string outcome = "ok";
      if (a.fenced) {
        try {
          store.write(a.lock, *l->fence(), a.counter, std::to_string(v + 1));
        } catch (const redlock::error& e) {
          outcome = std::string("fail ") + e.what();
        }
      } else {
        set_counter(storage.get(), a.counter, v + 1);
      }
      try {
        client.release(*l);
      } catch (const redlock::error&) {
        // An expired lock: the section's outcome is its write's.
      }
      std::cout << "section " << i << " " << outcome << std::endl;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "rmw_client: " << e.what() << std::endl;
    return 2;
  }
}
