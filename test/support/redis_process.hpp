// SPDX-License-Identifier: Apache-2.0
// A real redis-server child process on a free loopback port, for tests, the
// bench and the demo. Owns a temporary directory (AOF/RDB live there) and
// kills the server in its destructor.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include <sys/types.h>

struct redisContext;  // hiredis
struct timeval;
struct redisReply;

namespace redlock::testing {

// A private certificate authority and a server certificate it signed, for
// 127.0.0.1 and localhost, made with the `openssl` command (make_test_tls).
struct tls_files {
  std::filesystem::path ca_cert, cert, key;
};

// Writes a fresh CA and a server key and certificate into `dir` (created if
// missing); throws std::runtime_error, with openssl's output, on failure.
tls_files make_test_tls(const std::filesystem::path& dir);
// One CA and server certificate per test process, made at the first call in
// a temporary directory removed at exit.
const tls_files& shared_test_tls();

struct redis_options {
  bool aof = false;                     // appendonly yes + appendfsync always
  // Set: TLS only (--tls-port, --port 0), uri() is rediss://; the test's own
  // commands (command(), readiness) go through a Unix socket instead.
  std::optional<tls_files> tls;
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
  std::string uri() const;  // redis://127.0.0.1:<port> (rediss:// with TLS)
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
  bool own_server_listens() const;
  // A blocking hiredis connection for the test's own commands (nullptr or
  // c->err set on failure): TCP, or the Unix socket of a TLS-only server.
  redisContext* connect_for_commands(timeval timeout) const;
  std::filesystem::path unix_socket() const { return dir_ / "redis.sock"; }

  redis_options options_;
  std::filesystem::path dir_;
  std::uint16_t port_ = 0;
  std::uintmax_t log_size_at_spawn_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
};

// A loopback TCP port that was free a moment ago (bind to port 0, read, close).
std::uint16_t free_port();

// fork() on one thread that lasts as long as the process (a child that sets
// PR_SET_PDEATHSIG dies with the thread that forked it, so not with a
// short-lived one); the child runs `in_child`, then exits with 127 if that
// returns (an exec that failed). Returns the child's pid, or -1. The child
// may only make async-signal-safe calls.
pid_t fork_from_lasting_thread(const std::function<void()>& in_child);

// Sends one command (binary-safe arguments) on a blocking hiredis context.
// The caller frees the reply with freeReplyObject; nullptr when the
// connection failed (see c->errstr).
redisReply* command_argv(redisContext* c, const std::vector<std::string>& argv);

// Comma-joined URIs of a set of servers.
std::string join_uris(const std::vector<const redis_process*>& servers);

}  // namespace redlock::testing
