// SPDX-License-Identifier: Apache-2.0
// The data-level side of the fault suite (Jepsen's lock + register): every
// critical section also does an UNFENCED read-modify-write on the storage
// redis, which no fault touches, and the verdict (register_check.hpp) is
// read from the storage alone.
//
// A section over names N1..Nk (its resource, a semaphore's permit slot, or
// every name of a set) runs two scripts on the storage, each atomic:
//   begin: for each name, GET its counter "reg:N" and append
//          "B|R <sid> <N> <cap> <sec> <usec>" (storage TIME) to its log
//          "log:L" (L = N, or a semaphore's resource: one log for every
//          slot, so the log shows how many permits were in use);
//   ...    the holder holds (a short section, a long one up to its window's
//          end, a renewed or extended lease);
//   end:   for each name, SET the counter to the value read at the begin
//          plus one (the read-modify-write: an overlapping section's update
//          is lost) and append "E <sid> ..." ("Q" for a reader, which
//          writes nothing; "A" when the holder abandons the section because
//          its lock was lost or its window is too short to finish: no write).
// Both scripts carry the holder's own deadline (its belief, on the wall
// clock the storage's TIME reads) and refuse to act after it: a begin too
// late begins nothing, an end too late writes nothing and appends "L". That
// is A5 of docs/safety.md done exactly at the storage (a well-behaved client
// does nothing after its window), so what the log shows is only ever the
// overlap of windows the holders believed in, never a stalled harness.
//
// register_link: one thread with a blocking hiredis connection per client
// (the clients' io threads never block on the storage).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct redisContext;

namespace redlock::fault {

/// A reply of the storage, copied out of hiredis.
struct storage_reply {
  enum class type : std::uint8_t { none, string, nil, integer, error, status, array } is = type::none;
  std::string text;  ///< string, error, status
  long long integer = 0;
  std::vector<storage_reply> elements;  ///< array
};

/// The begin and end scripts (see above), for EVAL.
extern const char* const register_begin_script;
extern const char* const register_end_script;

/// One register a section works on: the counter's name and the log it
/// appends to, with the log's capacity (1: exclusive; a semaphore's permits).
struct register_target {
  std::string name;
  std::string log;
  unsigned cap = 1;
};

/// EVAL arguments of a section's begin (`shared`: a reader) and end
/// (`kind` 'E', 'Q' or 'A'; `values`: the counters to write, for 'E').
std::vector<std::string> register_begin_argv(const std::vector<register_target>& t, bool shared,
                                             const std::string& sid, std::int64_t deadline_us);
std::vector<std::string> register_end_argv(const std::vector<register_target>& t, char kind, const std::string& sid,
                                           std::int64_t deadline_us, const std::vector<long long>& values);

/// A steady time as microseconds of the wall clock (what the storage's TIME reads).
std::int64_t wall_us(std::chrono::steady_clock::time_point t);

/// A blocking hiredis connection of its own on a thread of its own.
class register_link {
 public:
  using done_fn = std::function<void(storage_reply)>;
  register_link(std::string host, std::uint16_t port);
  ~register_link();
  register_link(const register_link&) = delete;
  register_link& operator=(const register_link&) = delete;

  /// Queues a command; `done` runs on the link's thread (a none reply:
  /// the storage did not answer).
  void submit(std::vector<std::string> argv, done_fn done);

 private:
  struct job {
    std::vector<std::string> argv;
    done_fn done;
  };
  void run();

  std::string host_;
  std::uint16_t port_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<job> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

/// One blocking command on a fresh connection (the end-of-round reads), or
/// on a connection of the caller's (a none reply: no answer).
storage_reply storage_command(const std::string& host, std::uint16_t port, const std::vector<std::string>& argv);
storage_reply storage_command(redisContext* c, const std::vector<std::string>& argv);

/// Host and port of a redis:// URI.
std::pair<std::string, std::uint16_t> host_port(const std::string& uri);

/// Everything the sections left on the storage: each log's entries, in
/// order, and each counter's value.
struct register_state {
  std::map<std::string, std::vector<std::string>> logs;  ///< "log:L" -> entries
  std::map<std::string, long long> counters;             ///< "reg:N" -> value
};
register_state read_registers(const std::string& host, std::uint16_t port);

}  // namespace redlock::fault
