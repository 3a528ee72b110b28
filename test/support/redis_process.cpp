// SPDX-License-Identifier: Apache-2.0
#include "redis_process.hpp"

#include <hiredis/hiredis.h>

#include <arpa/inet.h>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <netinet/in.h>
#include <stdexcept>
#include <sys/prctl.h>
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

// The one thread every server is forked from (see spawn). Never destroyed:
// it must outlive every static, and it ends only with the process.
class lasting_forker {
 public:
  static lasting_forker& instance() {
    static auto* forker = new lasting_forker;
    return *forker;
  }

  // fork() on the lasting thread; the child runs `in_child`, then exits
  // with 127 if that returns (an exec that failed). Returns the child's pid
  // or -1.
  pid_t fork(const std::function<void()>& in_child) {
    std::packaged_task<pid_t()> task([&in_child] {
      pid_t pid = ::fork();
      if (pid == 0) {
        in_child();
        std::_Exit(127);
      }
      return pid;
    });
    auto pid = task.get_future();
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
    return pid.get();
  }

 private:
  lasting_forker() {
    std::thread([this] {
      for (;;) {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return !tasks_.empty(); });
        auto task = std::move(tasks_.front());
        tasks_.pop_front();
        lock.unlock();
        task();
      }
    }).detach();
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<pid_t()>> tasks_;
};

}  // namespace

pid_t fork_from_lasting_thread(const std::function<void()>& in_child) {
  return lasting_forker::instance().fork(in_child);
}

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

std::string redis_process::uri() const {
  return (options_.tls ? "rediss://127.0.0.1:" : "redis://127.0.0.1:") + std::to_string(port_);
}

redisContext* redis_process::connect_for_commands(timeval timeout) const {
  if (options_.tls) return redisConnectUnixWithTimeout(unix_socket().c_str(), timeout);
  return redisConnectWithTimeout("127.0.0.1", port_, timeout);
}

namespace {
void run_openssl(const std::string& args, const std::filesystem::path& dir) {
  auto log = dir / "openssl.log";
  auto cmd = "cd '" + dir.string() + "' && openssl " + args + " >>'" + log.string() + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    throw std::runtime_error("make_test_tls: openssl " + args + " failed: " + text.str());
  }
}
}  // namespace

tls_files make_test_tls(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  // EC keys: generated in milliseconds, unlike RSA.
  const std::string ec_key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  run_openssl("req -x509 " + ec_key + " -keyout ca.key -out ca.crt -days 2 -subj /CN=redlock-test-ca", dir);
  run_openssl("req -new " + ec_key + " -keyout server.key -out server.csr -subj /CN=127.0.0.1", dir);
  {
    std::ofstream ext(dir / "server.ext");
    ext << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  }
  run_openssl("x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext "
              "-out server.crt",
              dir);
  return {dir / "ca.crt", dir / "server.crt", dir / "server.key"};
}

const tls_files& shared_test_tls() {
  struct made_once {
    std::filesystem::path dir;
    tls_files files;
    made_once() {
      char tmpl[] = "/tmp/redlock-tls-XXXXXX";
      if (!::mkdtemp(tmpl)) throw std::runtime_error("shared_test_tls: mkdtemp failed");
      dir = tmpl;
      files = make_test_tls(dir);
    }
    ~made_once() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  };
  static const made_once once;
  return once.files;
}

void redis_process::spawn() {
  std::vector<std::string> args = {"redis-server",
                                   "--port", options_.tls ? "0" : std::to_string(port_),
                                   "--bind", "127.0.0.1",
                                   "--dir", dir_.string(),
                                   "--save", "",
                                   "--daemonize", "no",
                                   "--logfile", (dir_ / "redis.log").string(),
                                   "--appendonly", options_.aof ? "yes" : "no"};
  if (options_.aof) {
    args.insert(args.end(), {"--appendfsync", "always"});
  }
  if (options_.tls) {
    // Clients are not asked for a certificate: the tests check the server's.
    args.insert(args.end(), {"--tls-port", std::to_string(port_), "--tls-cert-file", options_.tls->cert.string(),
                             "--tls-key-file", options_.tls->key.string(), "--tls-ca-cert-file",
                             options_.tls->ca_cert.string(), "--tls-auth-clients", "no", "--unixsocket",
                             unix_socket().string(), "--unixsocketperm", "700"});
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

  std::error_code no_log;
  auto logged = std::filesystem::file_size(dir_ / "redis.log", no_log);
  log_size_at_spawn_ = no_log ? 0 : logged;
  // A test that dies without unwinding (an abort, ctest's SIGKILL at its
  // timeout) must not leave its servers running: they would keep the port,
  // and ctest's output pipe open, so the run would hang. The kernel kills the
  // server when the thread that forked it ends, so every server is forked by
  // one thread that lasts as long as the test process (lasting_forker), also
  // one a nemesis thread restarts; its destructor still stops it on a normal
  // exit.
  const pid_t test_pid = ::getpid();
  pid_t pid = fork_from_lasting_thread([&] {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != test_pid) std::_Exit(127);  // the test died before prctl
    ::execvpe("redis-server", argv.data(), envp.data());
  });
  if (pid < 0) throw std::runtime_error("redis_process: fork failed");
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

bool redis_process::own_server_listens() const {
  std::ifstream log(dir_ / "redis.log");
  log.seekg(static_cast<std::streamoff>(log_size_at_spawn_));  // a restart appends to the same log
  std::string line;
  while (std::getline(log, line))
    if (line.find("Ready to accept connections") != std::string::npos) return true;
  return false;
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
    redisContext* c = connect_for_commands(tv);
    if (c && !c->err) {
      auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
      // NOAUTH also means the server is up.
      bool up = r && (r->type == REDIS_REPLY_STATUS ||
                      (r->type == REDIS_REPLY_ERROR && std::strncmp(r->str, "NOAUTH", 6) == 0));
      // While loading the AOF the server answers LOADING: not ready yet.
      if (r) freeReplyObject(r);
      redisFree(c);
      // The answer may come from another test's server that took the port
      // first (ours then fails to bind and exits): only our own log says
      // that ours listens.
      if (up && own_server_listens()) return;
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
  redisContext* c = connect_for_commands(tv);
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
