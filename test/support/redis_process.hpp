// SPDX-License-Identifier: Apache-2.0
// A real redis-server child process on a free loopback port, for tests, the
// bench and the demo. Owns a temporary directory (AOF/RDB live there) and
// kills the server in its destructor.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>
#include <sys/types.h>

struct redisContext;  // hiredis
struct redisReply;

namespace redlock::testing {

struct redis_options {
  bool aof = false;                     // appendonly yes + appendfsync always
  std::vector<std::string> extra_args;  // e.g. {"--requirepass", "secret"}
  std::string preload;                  // LD_PRELOAD for the child (clock shim)
  std::vector<std::string> extra_env;   // "NAME=value" added to the child's environment
};

class redis_process {
 public:
  explicit redis_process(redis_options options = {});
  ~redis_process();
  redis_process(const redis_process&) = delete;
  redis_process& operator=(const redis_process&) = delete;

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string uri() const;  // redis://127.0.0.1:<port>
  const std::filesystem::path& dir() const { return dir_; }
  bool running() const { return pid_ > 0; }

  void pause();   // SIGSTOP: the kernel still accepts connections and buffers data
  void resume();  // SIGCONT
  void kill9();   // SIGKILL and reap; data not fsynced is lost
  void stop();    // SIGTERM and reap
  // Starts again on the same port and directory (AOF reloaded if enabled).
  // `wipe` deletes the persisted files first (a restart without persistence).
  void restart(bool wipe = false);

  // Runs one command through a blocking hiredis context; returns the reply as
  // text ("(nil)", integers in decimal, arrays as space-joined elements) or
  // "ERR..." text for an error reply. For assertions and set-up only.
  std::string command(const std::vector<std::string>& argv) const;

 private:
  void spawn();
  void wait_ready(std::chrono::milliseconds limit);

  redis_options options_;
  std::filesystem::path dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
};

// A loopback TCP port that was free a moment ago (bind to port 0, read, close).
std::uint16_t free_port();

// Sends one command (binary-safe arguments) on a blocking hiredis context.
// The caller frees the reply with freeReplyObject; nullptr when the
// connection failed (see c->errstr).
redisReply* command_argv(redisContext* c, const std::vector<std::string>& argv);

// Comma-joined URIs of a set of servers.
std::string join_uris(const std::vector<const redis_process*>& servers);

}  // namespace redlock::testing
