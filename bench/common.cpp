// SPDX-License-Identifier: Apache-2.0
#include "bench.hpp"
#include "duration.hpp"
#include "raw_link.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <stdexcept>
#include <string_view>
#include <cstring>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>

extern char** environ;

namespace bench {

// ---- statistics -------------------------------------------------------------------

summary summarize(std::vector<double>& samples) {
  summary s;
  s.n = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  auto at = [&](double p) {
    auto i = static_cast<std::ptrdiff_t>(std::ceil(p * static_cast<double>(samples.size()))) - 1;
    i = std::clamp<std::ptrdiff_t>(i, 0, static_cast<std::ptrdiff_t>(samples.size()) - 1);
    return samples[static_cast<std::size_t>(i)];
  };
  s.p50 = at(0.50);
  s.p99 = at(0.99);
  s.max = samples.back();
  if (keep_cdf)
    for (int p = 0; p <= 100; ++p) s.cdf.push_back(at(p / 100.0));
  return s;
}

bool keep_cdf = false;

json::object to_json(const summary& s, int decimals) {
  double scale = std::pow(10.0, decimals);
  auto r = [scale](double x) { return std::round(x * scale) / scale; };
  json::object o{{"p50", r(s.p50)}, {"p99", r(s.p99)}, {"max", r(s.max)}};
  if (!s.cdf.empty()) {
    json::array cdf;
    for (double x : s.cdf) cdf.push_back(r(x));
    o["cdf"] = std::move(cdf);
  }
  return o;
}

// ---- masters ------------------------------------------------------------------------

long long info_number(const master& m, const std::string& ca_file, const char* section, const char* field) {
  raw_link link(m, ca_file, milliseconds(2000));
  auto rep = link.command({"INFO", section});
  if (rep->type != REDIS_REPLY_STRING) return -1;
  std::string_view text(rep->str, rep->len);
  const std::string key = std::string("\n") + field + ":";
  auto at = text.find(key);
  return at == std::string_view::npos ? -1 : std::atoll(rep->str + at + key.size());
}

master parse_master(const std::string& uri) {
  std::string why;
  auto parsed = redlock::parse_node_uri(uri, why);  // the client's own parser
  if (!parsed) throw std::invalid_argument(why);
  master m;
  m.uri = uri;
  m.host = parsed->host;
  m.port = parsed->port;
  m.user = parsed->user;
  m.password = parsed->password;
  m.db = parsed->db;
  m.tls = parsed->tls;
  return m;
}

std::vector<std::vector<std::string>> login_commands(const master& m) {
  std::vector<std::vector<std::string>> commands;
  if (!m.password.empty()) {
    if (m.user.empty())
      commands.push_back({"AUTH", m.password});
    else
      commands.push_back({"AUTH", m.user, m.password});
  }
  if (m.db != 0) commands.push_back({"SELECT", std::to_string(m.db)});
  return commands;
}

void wait_answering(const master& m, const std::string& ca_file, milliseconds limit) {
  auto deadline = steady::now() + limit;
  std::string last;
  while (steady::now() < deadline) {
    try {
      raw_link link(m, ca_file, milliseconds(500));
      if (link.command({"PING"})->type == REDIS_REPLY_STATUS) return;
      last = "no PONG";
    } catch (const std::exception& e) {
      last = e.what();
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  throw std::runtime_error(m.uri + " does not answer PING after resuming: " + last);
}

// ---- signals ------------------------------------------------------------------------

namespace {

constexpr std::size_t slots = 64;
std::array<std::atomic<pid_t>, slots> g_stopped{};   // SIGSTOPped by us: SIGCONT on the way out
std::array<std::atomic<pid_t>, slots> g_children{};  // started by us: SIGTERM on a fatal signal

void put(std::array<std::atomic<pid_t>, slots>& set, pid_t pid) {
  for (auto& s : set) {
    pid_t empty = 0;
    if (s.compare_exchange_strong(empty, pid)) return;
  }
  throw std::runtime_error("bench: too many processes to track");
}

void take(std::array<std::atomic<pid_t>, slots>& set, pid_t pid) {
  for (auto& s : set) {
    pid_t p = pid;
    if (s.compare_exchange_strong(p, 0)) return;
  }
}

extern "C" void on_fatal_signal(int sig) {
  // Only async-signal-safe calls here: kill, signal, raise.
  for (auto& s : g_stopped) {
    pid_t p = s.load();
    if (p > 0) ::kill(p, SIGCONT);
  }
  for (auto& s : g_children) {
    pid_t p = s.load();
    if (p > 0) {
      ::kill(p, SIGCONT);
      ::kill(p, SIGTERM);
    }
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_signal_handlers() {
  ::signal(SIGPIPE, SIG_IGN);
  std::vector<int> sigs{SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT};
#if !defined(__SANITIZE_ADDRESS__)
  // Under ASan its own handler reports these; do not hide its report.
  sigs.insert(sigs.end(), {SIGSEGV, SIGBUS, SIGFPE, SIGILL});
#endif
  for (int sig : sigs) {
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &sa, nullptr);
  }
}

void register_child(pid_t pid) { put(g_children, pid); }
void unregister_child(pid_t pid) { take(g_children, pid); }

stopped_masters::stopped_masters(std::vector<master*> which, std::string ca_file) : ca_file_(std::move(ca_file)) {
  try {
    for (auto* m : which) {
      if (m->pid <= 0) throw std::runtime_error(m->uri + ": pid unknown, cannot SIGSTOP it");
      put(g_stopped, m->pid);  // before the stop: a signal in between still CONTs it
      which_.push_back(m);
      if (m->local)
        m->local->pause();
      else if (::kill(m->pid, SIGSTOP) != 0)
        throw std::runtime_error(m->uri + ": kill(" + std::to_string(m->pid) + ", SIGSTOP) failed");
    }
  } catch (...) {
    resume_all();
    throw;
  }
}

stopped_masters::~stopped_masters() { resume_all(); }

void stopped_masters::resume_all() noexcept {
  for (auto* m : which_) {
    if (m->local)
      m->local->resume();
    else
      ::kill(m->pid, SIGCONT);
    take(g_stopped, m->pid);
  }
  for (auto* m : which_) {
    try {
      wait_answering(*m, ca_file_, milliseconds(10000));
    } catch (...) {
      // Resumed anyway; the next scenario reports it if it stays silent.
    }
  }
  which_.clear();
}

json::array stopped_masters::uris() const {
  json::array out;
  for (auto* m : which_) out.emplace_back(m->uri);
  return out;
}

// ---- worker processes ---------------------------------------------------------------

bool is_worker(int argc, char** argv, const char* flag) { return argc > 1 && std::strcmp(argv[1], flag) == 0; }

std::vector<std::string> worker_args(const settings& s, const char* flag) {
  std::string nodes;
  for (auto& u : s.uris()) nodes += (nodes.empty() ? "" : ",") + u;
  return {"redlock-bench", flag, nodes, std::to_string(s.node_timeout.count())};
}

int worker_main(int argc, char** argv, int own_args, const std::function<int(const redlock::client_options&)>& body) {
  if (argc != 4 + own_args) {
    std::fprintf(stderr, "%s: expected %d arguments\n", argv[1], 2 + own_args);
    return 2;
  }
  try {
    redlock::client_options co;
    co.nodes = redlock::cli::split_list(argv[2]);
    co.node_timeout = milliseconds(number_arg(argv[3]));
    if (const char* ca = std::getenv(tls_ca_file_variable)) co.tls_ca_file = ca;
    return body(co);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
    return 1;
  }
}

long long number_arg(const char* s) {
  long long v = 0;
  auto end = s + std::strlen(s);
  auto [p, ec] = std::from_chars(s, end, v);
  if (ec != std::errc() || p != end) throw std::runtime_error(std::string("not a number: ") + s);
  return v;
}

pid_t spawn_self(const std::vector<std::string>& args, int stdout_fd) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  if (::posix_spawn_file_actions_init(&actions) != 0) return -1;
  if (stdout_fd >= 0) ::posix_spawn_file_actions_adddup2(&actions, stdout_fd, STDOUT_FILENO);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

bool reap(pid_t pid, steady::time_point give_up) {
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (steady::now() > give_up) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// ---- misc ---------------------------------------------------------------------------

json::object counts_json(const std::map<std::string, std::size_t>& m) {
  json::object o;
  for (auto& [k, v] : m) o[k] = v;
  return o;
}

std::string error_name(const boost::system::error_code& ec) {
  // The library names its own codes (every one, including those added later).
  if (ec.category() == redlock::category()) return std::string(redlock::errc_name(static_cast<redlock::errc>(ec.value())));
  return std::string(ec.category().name()) + ":" + std::to_string(ec.value()) + " (" + ec.message() + ")";
}

redlock::client_options settings::client_options() const {
  redlock::client_options o;
  o.nodes = uris();
  o.node_timeout = node_timeout;
  o.tls_ca_file = tls_ca_file;
  return o;
}

std::vector<std::string> settings::uris() const {
  std::vector<std::string> out;
  for (auto& m : masters) out.push_back(m.uri);
  return out;
}

}  // namespace bench
