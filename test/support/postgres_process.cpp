// SPDX-License-Identifier: Apache-2.0
#include "postgres_process.hpp"

#include "redis_process.hpp"  // free_port, fork_from_lasting_thread

#include <libpq-fe.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <grp.h>
#include <memory>
#include <pwd.h>
#include <sstream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#ifndef REDLOCK_POSTGRES_BINDIR
#define REDLOCK_POSTGRES_BINDIR "/usr/lib/postgresql/15/bin"
#endif

extern char** environ;

namespace redlock::testing {
namespace fs = std::filesystem;

fs::path postgres_bindir() {
  if (const char* dir = std::getenv("REDLOCK_POSTGRES_BINDIR"); dir && *dir) return dir;
  return REDLOCK_POSTGRES_BINDIR;
}

namespace {

constexpr const char* prefix = "redlock-pg-";

// The server refuses to run as root: as root, run it as the `postgres` user.
struct server_user {
  bool switch_to = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

server_user user_for_server() {
  if (::geteuid() != 0) return {};
  const passwd* pw = ::getpwnam("postgres");  // here: getpwnam is not async-signal-safe (the child may not call it)
  if (!pw)
    throw std::runtime_error(
        "postgres_process: running as root, and there is no 'postgres' user to run the PostgreSQL server as (it "
        "refuses root); install Debian's postgresql-15 (scripts/setup does), which creates that user");
  return {true, pw->pw_uid, pw->pw_gid};
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A server killed outright leaves its small System V segment behind (a
// clean shutdown removes it): postmaster.pid's 7th line names it. Removed
// once no process of that server is attached; false while one still is.
bool remove_shared_memory_of(const fs::path& data) {
  std::ifstream pidfile(data / "postmaster.pid");
  std::string line;
  for (int i = 0; i < 7 && std::getline(pidfile, line); ++i) {
  }
  long key = 0, id = -1;
  if (!(std::istringstream(line) >> key >> id) || id < 0) return true;
  shmid_ds segment{};
  if (::shmctl(static_cast<int>(id), IPC_STAT, &segment) != 0 || segment.shm_perm.__key != key) return true;
  if (segment.shm_nattch != 0) return false;
  ::shmctl(static_cast<int>(id), IPC_RMID, nullptr);
  return true;
}

// What tests that were killed left (their owner is gone): a data directory
// is tens of megabytes. Their servers died with them (PR_SET_PDEATHSIG).
void remove_abandoned_servers() {
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) != 0) continue;
    std::ifstream owner(entry.path() / "owner.pid");
    long pid = 0;
    if (!(owner >> pid) || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    remove_shared_memory_of(entry.path() / "data");
    fs::remove_all(entry.path(), ec);
  }
}

// Forks `program args...` as the server user, standard output and error
// appended to `log`, dying with this process. Returns its pid.
pid_t start_as_server_user(const server_user& user, const fs::path& program, const std::vector<std::string>& args,
                           const fs::path& cwd, const fs::path& log) {
  if (::access(program.c_str(), X_OK) != 0)
    throw std::runtime_error("postgres_process: " + program.string() +
                             " not found: install Debian's postgresql-15 (scripts/setup does), or set "
                             "REDLOCK_POSTGRES_BINDIR to the directory of initdb and postgres");
  std::vector<std::string> argv_text{program.string()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log_path = log.string(), dir = cwd.string();
  const pid_t test_pid = ::getpid();
  // The child runs only async-signal-safe calls: everything is prepared above.
  pid_t pid = fork_from_lasting_thread([&] {
    if (user.switch_to && (::setgroups(0, nullptr) != 0 || ::setgid(user.gid) != 0 || ::setuid(user.uid) != 0))
      std::_Exit(126);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // after setuid, which clears it
    if (::getppid() != test_pid) std::_Exit(127);
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0) std::_Exit(125);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    if (::chdir(dir.c_str()) != 0) std::_Exit(125);
    ::execve(argv[0], argv.data(), environ);
  });
  if (pid < 0) throw std::runtime_error("postgres_process: fork failed");
  return pid;
}

struct pg_conn_free {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct pg_result_free {
  void operator()(PGresult* r) const { PQclear(r); }
};

}  // namespace

postgres_process::postgres_process(postgres_options options) : options_(std::move(options)) {
  remove_abandoned_servers();
  auto user = user_for_server();
  auto tmpl = (fs::temp_directory_path() / (std::string(prefix) + "XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("postgres_process: mkdtemp failed");
  dir_ = tmpl;
  try {
    std::ofstream(dir_ / "owner.pid") << ::getpid() << "\n";
    if (user.switch_to && ::chown(dir_.c_str(), user.uid, user.gid) != 0)
      throw std::runtime_error("postgres_process: cannot give " + dir_.string() + " to the postgres user");
    auto initdb = start_as_server_user(user, postgres_bindir() / "initdb",
                                       {"-D", data().string(), "-U", "postgres", "-A", "trust", "--no-sync",
                                        "--no-instructions", "--locale=C", "--encoding=UTF8"},
                                       dir_, dir_ / "initdb.log");
    int status = 0;
    ::waitpid(initdb, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw std::runtime_error("postgres_process: initdb failed (status " + std::to_string(status) +
                               "): " + read_file(dir_ / "initdb.log"));
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
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
    throw;
  }
}

postgres_process::~postgres_process() {
  stop();
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

void postgres_process::spawn() {
  std::vector<std::string> args{"-D", data().string(), "-p", std::to_string(port_),
                                "-k", dir_.string(),   // the Unix socket: ours alone
                                "-c", "listen_addresses=127.0.0.1",
                                "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                                "-c", "shared_buffers=16MB", "-c", "max_connections=60"};
  for (auto& s : options_.settings) args.insert(args.end(), {"-c", s});
  pid_ = start_as_server_user(user_for_server(), postgres_bindir() / "postgres", args, dir_, dir_ / "postgres.log");
  try {
    wait_ready(std::chrono::seconds(30));
  } catch (...) {
    kill9();
    throw;
  }
}

void postgres_process::wait_ready(std::chrono::milliseconds limit) {
  // Through our own Unix socket: an answer there is from our server, not
  // from another one that took the port first.
  const std::string ours = "host=" + dir_.string() + " port=" + std::to_string(port_) + " user=postgres dbname=postgres";
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("postgres_process: the server exited at start: " + log());
    }
    if (PQping(ours.c_str()) == PQPING_OK) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("postgres_process: the server did not answer on port " + std::to_string(port_) + ": " +
                           log());
}

std::string postgres_process::conninfo(const std::string& db) const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " user=postgres dbname=" + db + " connect_timeout=5";
}

std::string postgres_process::create_database(const std::string& prefix) {
  auto name = prefix + "_" + std::to_string(++database_counter_);
  query("CREATE DATABASE " + name);
  return name;
}

std::vector<std::vector<std::string>> postgres_process::query(const std::string& sql, const std::string& db) const {
  const std::string info = "host=" + dir_.string() + " port=" + std::to_string(port_) + " user=postgres dbname=" + db;
  std::unique_ptr<PGconn, pg_conn_free> c(PQconnectdb(info.c_str()));
  if (PQstatus(c.get()) != CONNECTION_OK)
    throw std::runtime_error("postgres_process::query: cannot connect: " + std::string(PQerrorMessage(c.get())));
  std::unique_ptr<PGresult, pg_result_free> r(PQexec(c.get(), sql.c_str()));
  auto status = PQresultStatus(r.get());
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
    throw std::runtime_error("postgres_process::query: " + sql + ": " + PQresultErrorMessage(r.get()));
  std::vector<std::vector<std::string>> rows;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    auto& row = rows.emplace_back();
    for (int c = 0; c < PQnfields(r.get()); ++c)
      row.emplace_back(PQgetisnull(r.get(), i, c) ? "(null)" : PQgetvalue(r.get(), i, c));
  }
  return rows;
}

std::string postgres_process::scalar(const std::string& sql, const std::string& db) const {
  auto rows = query(sql, db);
  return rows.empty() || rows[0].empty() ? std::string() : rows[0][0];
}

std::string postgres_process::log() const { return read_file(dir_ / "postgres.log"); }

void postgres_process::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGINT);  // fast shutdown: ends the sessions, removes its shared memory
  for (int i = 0; i < 500; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill9();
}

void postgres_process::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
  // Its backends see it gone and exit; then its segment can go.
  for (int i = 0; i < 100 && !remove_shared_memory_of(data()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

}  // namespace redlock::testing
