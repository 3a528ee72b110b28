// SPDX-License-Identifier: Apache-2.0
// Shared pieces of redlock-demo: the masters it runs against, a plain Redis
// connection for the storage side, the checks that decide the exit status,
// and waits that end early on Ctrl-C.
#pragma once

#include <redis_process.hpp>

#include <hiredis/hiredis.h>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace demo {

using namespace std::chrono_literals;

// Where a plain Redis listens (the storage the lock protects).
struct endpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string user, password;  // AUTH when the password is set
  int db = 0;
  std::string uri;             // as given, for redlock::fenced_store
};
endpoint parse_endpoint(const std::string& uri);  // throws redlock::error(bad_uri)

struct setup {
  std::vector<std::string> nodes;  // lock masters, redis:// URIs
  // The demo's own masters; empty with --nodes: the user's masters are
  // never paused or killed.
  std::vector<std::unique_ptr<redlock::testing::redis_process>> local;
  endpoint storage;  // a separate local Redis, or the user's first master
  bool faults() const { return !local.empty(); }
};

// One blocking hiredis connection to the storage (one per thread).
class plain_redis {
 public:
  explicit plain_redis(const endpoint& e);
  ~plain_redis();
  plain_redis(const plain_redis&) = delete;
  plain_redis& operator=(const plain_redis&) = delete;
  std::string get(const std::string& key);  // "" when the key does not exist
  void set(const std::string& key, const std::string& value);
  void del(const std::string& key);

 private:
  redisReply* command(const std::vector<std::string>& argv);
  redisContext* c_ = nullptr;
};

// Every check the demo makes; the summary lists them and the exit status is
// 0 only when none failed.
class report {
 public:
  void check(bool ok, const std::string& what);  // prints "  [ok] ..." or "  [FAILED] ..."
  void skip(const std::string& what);            // prints "  [skipped] ..."
  bool all_passed() const;
  void print_summary() const;

 private:
  enum class outcome { ok, failed, skipped };
  static const char* mark(outcome o);
  struct entry {
    outcome result;
    std::string what;
  };
  void add(outcome o, const std::string& what);
  std::vector<entry> entries_;
};

void heading(const std::string& title);

// Ctrl-C, SIGTERM and SIGHUP set a flag instead of killing the demo outright,
// so that it unwinds: paused masters get SIGCONT, children are killed and
// reaped, local masters are stopped.
struct interrupted : std::runtime_error {
  interrupted() : std::runtime_error("interrupted") {}
};
void catch_interrupts();
bool interrupt_requested();
void sleep_for(std::chrono::milliseconds d);  // throws interrupted

// The three parts, in the order the demo shows them.
void mutual_exclusion(setup& s, report& r, int workers, double seconds);
void fencing(setup& s, report& r);
void command_line(setup& s, report& r, const std::string& cli_path);
// Part 2's holders again, with PostgreSQL as the storage (when installed).
void fencing_in_postgres(report& r, const boost::asio::any_io_executor& executor, const std::string& resource,
                         std::uint64_t token_a, std::uint64_t token_b);

}  // namespace demo
