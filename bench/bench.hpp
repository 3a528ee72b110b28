// SPDX-License-Identifier: Apache-2.0
// redlock-bench: shared types and helpers of the scenarios.
#pragma once

#include <redis_process.hpp>

#include <redlock/redlock.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <sys/types.h>

namespace bench {

namespace json = boost::json;
using steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// Microseconds (or milliseconds, by the caller's choice) between two points.
inline double micros(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

/// p50/p99/max of a set of samples (sorted in place), rounded to 0.1.
/// Percentile p is the sample at index ceil(p * n) - 1 (as the peer does).
struct summary {
  std::size_t n = 0;
  double p50 = 0, p99 = 0, max = 0;
  std::vector<double> cdf;  // with keep_cdf: percentiles 0, 1, ..., 100
};
summary summarize(std::vector<double>& samples);
/// Set by --plot: every summary also keeps its distribution (101 percentiles).
extern bool keep_cdf;
/// {"p50","p99","max"} and, with keep_cdf, "cdf"; rounded to `decimals`.
/// (The sample at percentile p is at index ceil(p/100 * n) - 1, and the
/// smallest for p = 0.)
json::object to_json(const summary& s, int decimals = 1);

/// One master, as given by --nodes or started by the bench.
struct master {
  std::string uri;
  std::string host;
  std::uint16_t port = 6379;
  std::string user, password;
  int db = 0;
  bool tls = false;
  redlock::testing::redis_process* local = nullptr;  // started by the bench
  pid_t pid = -1;                                    // known pid (local, or from --pidfiles)
};
/// redis://[user:password@]host[:port][/db] or rediss://...; throws on garbage.
master parse_master(const std::string& uri);

/// What a new connection to `m` sends first: AUTH and SELECT, as its URI asks.
std::vector<std::vector<std::string>> login_commands(const master& m);

/// A numeric field of INFO `section` (used_memory, connected_clients, ...),
/// over a raw link of its own (raw_link.hpp; `ca_file` for rediss://); -1
/// when the master does not report it.
long long info_number(const master& m, const std::string& ca_file, const char* section, const char* field);

/// Waits until the master answers PING (or throws after `limit`).
void wait_answering(const master& m, const std::string& ca_file, milliseconds limit);

/// Signal-safe bookkeeping so that masters we SIGSTOPped are always SIGCONTed,
/// and masters we started are terminated, even on SIGINT/SIGTERM/abort.
void install_signal_handlers();
void register_child(pid_t pid);
void unregister_child(pid_t pid);

/// SIGSTOPs the given masters for its lifetime; the destructor SIGCONTs them
/// (also when leaving by an exception) and waits until they answer again.
class stopped_masters {
 public:
  /// `ca_file`: for rediss:// masters, to see them answer once resumed.
  stopped_masters(std::vector<master*> which, std::string ca_file);
  ~stopped_masters();
  stopped_masters(const stopped_masters&) = delete;
  stopped_masters& operator=(const stopped_masters&) = delete;
  json::array uris() const;

 private:
  void resume_all() noexcept;
  std::vector<master*> which_;
  std::string ca_file_;
};

/// {"name": count, ...}.
json::object counts_json(const std::map<std::string, std::size_t>& m);

/// Short name of an error code (errc enumerator names for redlock's codes).
std::string error_name(const boost::system::error_code& ec);

struct settings {
  std::vector<master> masters;
  bool local = true;       // the bench started the masters
  redlock::testing::redis_options local_options;  // how (scale_nodes starts its extra masters alike)
  bool can_stop = true;    // every master's pid is known
  milliseconds node_timeout{50};
  milliseconds ttl{10000};
  bool quick = false;
  bool smoke = false;  // --smoke (implies quick): the tests' runs, every path taken, no figure to read
  std::size_t workers = 8;  // contended scenarios: threads, each its own client
  bool one_thread = false;  // contended scenarios: the workers as coroutines on one thread instead
  std::string tag;         // unique per run: part of every key name
  std::string tls_ca_file;  // rediss:// masters: the CA that signed their certificates

  /// A run's size: the full run's, --quick's or --smoke's.
  template <class T>
  T sized(T full, T quick_size, T smoke_size) const {
    return smoke ? smoke_size : quick ? quick_size : full;
  }

  redlock::client_options client_options() const;
  std::vector<std::string> uris() const;
};

/// Where worker processes (spawn_self) find --tls-ca-file: set by main.
inline constexpr const char* tls_ca_file_variable = "REDLOCK_BENCH_TLS_CA_FILE";

/// What a scenario hands back: its JSON object, or a reason it was skipped.
struct outcome {
  json::object data;
  std::string skipped;  // non-empty: not run, and why
};

outcome run_floor(settings& s);
outcome run_uncontended(settings& s);
outcome run_throughput(settings& s);
outcome run_contended(settings& s);
outcome run_contended_fair(settings& s);
/// `semaphore` and `semaphore_skew`: permits of the semaphore (with --workers holders).
inline constexpr unsigned semaphore_permits = 3;
outcome run_semaphore(settings& s);
/// `rwlock`: the share of acquisitions that are writes (the rest read).
inline constexpr double rwlock_write_share = 0.1;
outcome run_rwlock(settings& s);
outcome run_semaphore_skew(settings& s);
outcome run_fenced(settings& s);
outcome run_one_hung(settings& s);
outcome run_no_quorum(settings& s);
outcome run_alloc(settings& s);
outcome run_scale_nodes(settings& s);
outcome run_many_names(settings& s);
outcome run_many_clients(settings& s);

outcome run_elect(settings& s);

/// Worker processes: many_clients and elect run this executable again with
/// argv[1] = their flag; main() hands such an invocation to the worker.
inline constexpr const char* many_clients_worker_flag = "--many-clients-worker";
inline constexpr const char* elect_worker_flag = "--elect-worker";
bool is_worker(int argc, char** argv, const char* flag);
int many_clients_worker(int argc, char** argv);
int elect_worker(int argc, char** argv);

/// A worker's command line: {"redlock-bench", flag, nodes, node timeout ms}
/// followed by the scenario's own arguments (from argv[4] on in the worker).
std::vector<std::string> worker_args(const settings& s, const char* flag);
/// In the worker: checks that `own_args` arguments follow worker_args', then
/// runs `body` with the client options they carried, turning an exception
/// into a message on stderr and status 1 (2 for a wrong argument count).
int worker_main(int argc, char** argv, int own_args, const std::function<int(const redlock::client_options&)>& body);
/// A whole decimal argument; throws std::runtime_error otherwise.
long long number_arg(const char* s);
/// Starts this executable (/proc/self/exe) with `args` (args[0] is its
/// argv[0]); with `stdout_fd` >= 0 the child's stdout is that descriptor.
/// Returns the child's pid, or -1 when it could not start.
pid_t spawn_self(const std::vector<std::string>& args, int stdout_fd = -1);
/// Waits for a worker to exit until `give_up`, then SIGKILLs and reaps it.
/// True when it exited with status 0.
bool reap(pid_t pid, steady::time_point give_up);

/// --plot DIR: writes the data files and a gnuplot script for the latency
/// CDFs (ours, the floors, the peers' p50/p99/max when `peers_dir` holds
/// compare-peer.sh's results) and the scale_nodes curves, then runs gnuplot
/// if it is installed. Returns what it did, for the operator.
std::string write_plots(const json::object& root, const std::string& dir, const std::string& peers_dir);

}  // namespace bench
