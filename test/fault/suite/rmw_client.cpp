// SPDX-License-Identifier: Apache-2.0
// A lock client as a process of its own, for the checkers that do not trust
// the library (test_independent.cpp). Two modes:
//
// Counter: N critical sections of read-modify-write on a counter in a
// storage redis: GET (plain hiredis), +1, then SET (plain hiredis, unfenced)
// or a fenced_store write with the lock's token (fenced). After the read of
// section --stop-after-read it stops ITSELF with SIGSTOP, a real stop of the
// whole process (the library's I/O thread included), between reaching the
// quorum and writing; the test resumes it with SIGCONT.
//
//   redlock_fault_rmw_client --masters U1,U2,U3 --storage-port P --lock NAME
//       --counter KEY --sections N --ttl MS [--fenced] [--stop-after-read K]
//
// Prints one line per section: "section I ok" or "section I fail <why>".
//
// Register (--register NAME): sections for --seconds S on lock NAME, each a
// data section of storage_register.hpp (unfenced read-modify-write of the
// register, begun and written back only inside the holder's window, judged
// from the storage alone by check_data). Renewed locks (the watchdog on the
// client's I/O thread); some sections hold 1.5 to 3 TTLs, announced on a
// line "hold <ms>" first, so the test can SIGSTOP the whole process
// mid-renewal (its watchdog frozen too). --grant-everyone (test only) locks
// a name of its own per process: a lock without exclusion.
//
//   redlock_fault_rmw_client --masters ... --storage-port P --lock NAME
//       --register NAME --client ID --seconds S --ttl MS [--grant-everyone]
//
// Prints "hold <ms>" before each long hold and "section <sid> <E|Q|L|A|->"
// after each section ("-": not begun).
#include <redlock/redlock.hpp>

#include "storage_register.hpp"

#include <hiredis/hiredis.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
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
  std::string register_name;
  int client = 0;
  double seconds = 5;
  bool grant_everyone = false;
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
    else if (k == "--register") a.register_name = value();
    else if (k == "--client") a.client = std::stoi(value());
    else if (k == "--seconds") a.seconds = std::stod(value());
    else if (k == "--grant-everyone") a.grant_everyone = true;
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

namespace fault = redlock::fault;
using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

// The register mode (see the top of this file).
int run_register(const args& a, redlock::client& client, redisContext* storage) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(a.client) * 7919 + 17);
  const auto ttl = milliseconds(a.ttl_ms);
  const auto margin = std::max(milliseconds(20), ttl / 10);
  const std::string lock_name = a.grant_everyone ? a.lock + ":c" + std::to_string(a.client) : a.lock;
  const std::vector<fault::register_target> regs{{a.register_name, a.register_name, 1}};
  auto end = steady::now() + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(a.seconds));
  for (int n = 0; steady::now() < end; ++n) {
    redlock::acquire_options o;
    o.ttl = ttl;
    o.wait = milliseconds(1000);
    o.retry_delay = milliseconds(10);
    o.retry_jitter = milliseconds(10);
    o.renew = true;
    std::optional<redlock::lock> l;
    try {
      l = client.try_acquire(lock_name, o);
    } catch (const redlock::error&) {
      // Under faults an attempt may end on a master's error (connection
      // lost, timeout) rather than "not acquired": no section, try again.
      continue;
    }
    if (!l) continue;
    const std::string sid = "p" + std::to_string(a.client) + "#" + std::to_string(n);
    char said = '-';
    if (l->valid_until() - steady::now() > 2 * margin) {
      auto begun = fault::storage_command(storage, fault::register_begin_argv(regs, false, sid, fault::wall_us(l->valid_until())));
      if (begun.is == fault::storage_reply::type::array && !begun.elements.empty()) {
        long long counter = begun.elements[0].is == fault::storage_reply::type::string ? std::stoll(begun.elements[0].text) : 0;
        // Mostly short; some past the TTL, renewed by the watchdog meanwhile.
        auto hold = milliseconds(std::uniform_int_distribution<long long>(0, 3)(rng));
        if (std::bernoulli_distribution(0.3)(rng)) {
          hold = milliseconds(std::uniform_int_distribution<long long>(a.ttl_ms * 3 / 2, a.ttl_ms * 3)(rng));
          std::cout << "hold " << hold.count() << std::endl;
        }
        for (auto until = steady::now() + hold; steady::now() < until && !l->lost();)
          std::this_thread::sleep_for(std::min<steady::duration>(until - steady::now(), milliseconds(5)));
        char kind = l->lost() || l->valid_until() - steady::now() <= margin ? 'A' : 'E';
        auto ended = fault::storage_command(storage, fault::register_end_argv(regs, kind, sid, fault::wall_us(l->valid_until()), {counter + 1}));
        said = ended.text.empty() ? '?' : ended.text[0];
      }
    }
    try {
      client.release(*l);
    } catch (const redlock::error&) {
      // Lost meanwhile: the section's outcome is what the storage said.
    }
    std::cout << "section " << sid << " " << said << std::endl;
  }
  return 0;
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
    if (!a.register_name.empty()) return run_register(a, client, storage.get());
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
