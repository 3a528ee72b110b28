// SPDX-License-Identifier: Apache-2.0
#include "redis_process.hpp"

#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace redlock::testing {
namespace {

std::string reply_text(const redisReply* r) {
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      return std::string(r->str, r->len);
    case REDIS_REPLY_ERROR:
      return std::string(r->str, r->len);
    case REDIS_REPLY_INTEGER:
      return std::to_string(r->integer);
    case REDIS_REPLY_NIL:
      return "(nil)";
    case REDIS_REPLY_ARRAY: {
      std::string out;
      for (size_t i = 0; i < r->elements; ++i) {
        if (i) out += ' ';
        out += reply_text(r->element[i]);
      }
      return out;
    }
  }
  return "?";
}

}  // namespace

std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("free_port: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("free_port: bind failed");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

redisReply* command_argv(redisContext* c, const std::vector<std::string>& argv) {
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (auto& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  return static_cast<redisReply*>(redisCommandArgv(c, int(args.size()), args.data(), lens.data()));
}

std::string join_uris(const std::vector<const redis_process*>& servers) {
  std::string out;
  for (auto* s : servers) {
    if (!out.empty()) out += ',';
    out += s->uri();
  }
  return out;
}

redis_process::redis_process(redis_options options) : options_(std::move(options)) {
  char tmpl[] = "/tmp/redlock-redis-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("redis_process: mkdtemp failed");
  dir_ = tmpl;
  // A port can be taken between free_port() and the server's bind: retry.
  for (int attempt = 0;; ++attempt) {
    port_ = free_port();
    try {
      spawn();
      return;
    } catch (const std::exception&) {
      if (attempt == 4) throw;
    }
  }
}

redis_process::~redis_process() {
  try {
    stop();
  } catch (...) {
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string redis_process::uri() const { return "redis://127.0.0.1:" + std::to_string(port_); }

void redis_process::spawn() {
  std::vector<std::string> args = {"redis-server",
                                   "--port", std::to_string(port_),
                                   "--bind", "127.0.0.1",
                                   "--dir", dir_.string(),
                                   "--save", "",
                                   "--daemonize", "no",
                                   "--logfile", (dir_ / "redis.log").string(),
                                   "--appendonly", options_.aof ? "yes" : "no"};
  if (options_.aof) {
    args.insert(args.end(), {"--appendfsync", "always"});
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());

  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  if (!options_.preload.empty()) env.push_back("LD_PRELOAD=" + options_.preload);
  env.insert(env.end(), options_.extra_env.begin(), options_.extra_env.end());

  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("redis_process: fork failed");
  if (pid == 0) {
    ::execvpe("redis-server", argv.data(), envp.data());
    std::_Exit(127);
  }
  pid_ = pid;
  paused_ = false;
  try {
    wait_ready(std::chrono::seconds(10));
  } catch (...) {
    // wait_ready sets pid_ = -1 when the child already exited: never kill(-1).
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    pid_ = -1;
    throw;
  }
}

void redis_process::wait_ready(std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis_process: redis-server exited at start (see " +
                               (dir_ / "redis.log").string() + ")");
    }
    timeval tv{0, 200000};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
    if (c && !c->err) {
      auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
      // NOAUTH also means the server is up.
      bool up = r && (r->type == REDIS_REPLY_STATUS ||
                      (r->type == REDIS_REPLY_ERROR && std::strncmp(r->str, "NOAUTH", 6) == 0));
      // While loading the AOF the server answers LOADING: not ready yet.
      if (r) freeReplyObject(r);
      redisFree(c);
      if (up) return;
    } else if (c) {
      redisFree(c);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("redis_process: redis-server did not answer PING on port " +
                           std::to_string(port_));
}

void redis_process::pause() {
  if (pid_ > 0 && !paused_) {
    ::kill(pid_, SIGSTOP);
    paused_ = true;
  }
}

void redis_process::resume() {
  if (pid_ > 0 && paused_) {
    ::kill(pid_, SIGCONT);
    paused_ = false;
  }
}

void redis_process::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
  paused_ = false;
}

void redis_process::stop() {
  if (pid_ <= 0) return;
  if (paused_) ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  // Give it a moment to exit cleanly, then insist.
  for (int i = 0; i < 200; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill9();
}

void redis_process::restart(bool wipe) {
  if (pid_ > 0) kill9();
  if (wipe) {
    for (auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().filename() != "redis.log") std::filesystem::remove_all(entry.path());
    }
  }
  spawn();
}

std::string redis_process::command(const std::vector<std::string>& argv) const {
  timeval tv{2, 0};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
  if (!c || c->err) {
    if (c) redisFree(c);
    throw std::runtime_error("redis_process::command: cannot connect to port " + std::to_string(port_));
  }
  redisSetTimeout(c, tv);
  auto* r = command_argv(c, argv);
  if (!r) {
    redisFree(c);
    throw std::runtime_error("redis_process::command: no reply");
  }
  std::string out = reply_text(r);
  freeReplyObject(r);
  redisFree(c);
  return out;
}

}  // namespace redlock::testing
