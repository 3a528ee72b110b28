// SPDX-License-Identifier: Apache-2.0
// redlock-bench: latency and throughput of redlock against real masters.
//
//   redlock-bench [--quick | --smoke] [--json FILE] [--scenario NAME ...]
//                 [--nodes URI,...] [--pidfiles DIR] [--tls | --tls-ca-file FILE] [--node-timeout 50ms] [--ttl 10s]
//
// Without --nodes it starts 5 redis-server masters of its own on free loopback
// ports. Prints a table on stdout (progress on stderr) and, with --json, the
// figures as JSON. Exit status: 0 when the run completed; 1 on a bad option
// or a scenario that could not run; 3 when `contended` saw overlapping holders
// (or `semaphore`, `semaphore_skew` more holders than permits, or `elect` a
// leader whose epoch did not exceed its predecessor's, or two at once).
#include "bench.hpp"
#include "duration.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>
#include <unistd.h>

#ifndef REDLOCK_BENCH_BUILD_TYPE
#define REDLOCK_BENCH_BUILD_TYPE ""
#endif
#ifndef REDLOCK_BENCH_SANITIZE
#define REDLOCK_BENCH_SANITIZE 0
#endif

namespace po = boost::program_options;
using namespace bench;

namespace {

struct scenario {
  const char* name;
  outcome (*run)(settings&);
  const char* what;
};

const scenario all_scenarios[] = {
    {"floor", run_floor, "one EVALSHA (SET NX PX in Lua) and one SET to one master, then the quorum pair by hand, on raw links (TCP or TLS)"},
    {"uncontended", run_uncontended, "sequential acquire+release on distinct names"},
    {"throughput", run_throughput, "64 acquire+release loops in flight on one async_client, one thread"},
    {"contended", run_contended, "--workers (8) workers, each its own client, on one key with retries (10 +/- 10 ms)"},
    {"contended_fair", run_contended_fair, "the same with the fair (FIFO) lock"},
    {"semaphore", run_semaphore, "--workers (8) workers on one semaphore of 3 permits, retries (10 +/- 10 ms)"},
    {"rwlock", run_rwlock, "--workers (8) workers on one read-write lock, 90% reads, retries (10 +/- 10 ms)"},
    {"semaphore_skew", run_semaphore_skew,
     "5 holders of 3 permits at once, one attempt each, two links of each 50 ms slower (the peer's semskew)"},
    {"fenced", run_fenced, "sequential acquire+release with fencing tokens, one resource"},
    {"one_hung", run_one_hung, "one master SIGSTOPped: sequential acquire+release"},
    {"no_quorum", run_no_quorum, "a majority SIGSTOPped: single attempts until failure"},
    {"scale_nodes", run_scale_nodes, "uncontended pairs and the hand-written quorum floor for 1, 3, 5, 7 and 9 masters"},
    {"many_names", run_many_names, "100,000 distinct locks held at once (64 in flight): rate, bytes per lock, acquire next to them"},
    {"many_clients", run_many_clients, "32 client processes x 8 acquire+release loops in flight each, distinct names"},
    {"elect", run_elect,
     "leader election: failover after the leader's process is SIGKILLed, 3 standbys campaigning (TTL 500 ms)"},
    {"alloc", run_alloc, "heap allocations (malloc, calloc, realloc; every thread) per uncontended acquire+release"},
};

// A duration with a unit (50ms, 10s), as the CLI reads it; at least 1 ms.
milliseconds duration_option(const std::string& text, const char* what) {
  auto d = redlock::cli::parse_duration(text);
  if (!d) throw po::error(std::string("--") + what + ": '" + text + "' is not a duration (e.g. 50ms, 10s)");
  if (*d < milliseconds(1)) throw po::error(std::string("--") + what + ": must be at least 1 ms");
  return *d;
}

std::string utc_timestamp() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// ---- JSON and table output ------------------------------------------------------------

// Doubles in their shortest form ("24.8", not Boost.JSON's "2.48E1").
void scalar(std::ostream& os, const json::value& v) {
  if (v.is_double()) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.get_double());
    if (ec == std::errc() && std::isfinite(v.get_double())) {
      os.write(buf, end - buf);
      return;
    }
  }
  os << json::serialize(v);
}

void pretty(std::ostream& os, const json::value& v, int indent = 0) {
  auto pad = [&](int n) { os << std::string(static_cast<std::size_t>(n), ' '); };
  if (v.is_object()) {
    const auto& o = v.get_object();
    if (o.empty()) {
      os << "{}";
      return;
    }
    os << "{\n";
    bool first = true;
    for (auto& [k, x] : o) {
      if (!first) os << ",\n";
      first = false;
      pad(indent + 2);
      os << json::serialize(json::value(k)) << ": ";
      pretty(os, x, indent + 2);
    }
    os << "\n";
    pad(indent);
    os << "}";
  } else if (v.is_array()) {
    // Arrays on one line (their objects, as scale_nodes' rows, across lines).
    os << "[";
    bool first = true;
    for (auto& x : v.get_array()) {
      if (!first) os << ", ";
      first = false;
      pretty(os, x, indent + 2);
    }
    os << "]";
  } else {
    scalar(os, v);
  }
}

bool is_latency(const json::value& v) {
  return v.is_object() && v.get_object().contains("p50") && v.get_object().contains("p99") &&
         v.get_object().contains("max");
}

std::string scalar_text(const json::value& v) {
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_double()) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(3) << v.get_double();
    auto s = os.str();
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s;
  }
  if (v.is_object()) {
    std::string out;
    for (auto& [k, x] : v.get_object()) {
      if (!out.empty()) out += ", ";
      out += std::string(k) + "=" + scalar_text(x);
    }
    return out;
  }
  return json::serialize(v);
}

void print_table(std::ostream& os, const json::object& root) {
  auto num = [](const json::value& v) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(v.is_double() && v.get_double() < 100 ? 2 : 1) << v.to_number<double>();
    return s.str();
  };
  os << "\n";
  for (auto& sc : all_scenarios) {
    auto* v = root.if_contains(sc.name);
    if (!v || !v->is_object()) continue;
    const auto& o = v->get_object();
    os << sc.name << " -- " << sc.what << "\n";
    for (auto& [k, x] : o) {
      os << "  " << std::left << std::setw(24) << std::string(k);
      if (is_latency(x)) {
        auto& l = x.get_object();
        os << "p50 " << std::right << std::setw(10) << num(l.at("p50")) << "   p99 " << std::setw(10)
           << num(l.at("p99")) << "   max " << std::setw(10) << num(l.at("max"));
      } else if (x.is_array() && !x.get_array().empty() && x.get_array().front().is_object()) {
        // Rows (scale_nodes): one line each, latencies as p50/p99.
        for (auto& row : x.get_array()) {
          os << "\n   ";
          for (auto& [rk, rv] : row.get_object()) {
            os << " " << std::string(rk) << " ";
            if (is_latency(rv))
              os << num(rv.get_object().at("p50")) << "/" << num(rv.get_object().at("p99"));
            else
              os << scalar_text(rv);
          }
        }
      } else {
        os << scalar_text(x);
      }
      os << std::left << "\n";
    }
    os << "\n";
  }
  if (auto* sk = root.if_contains("skipped"); sk && !sk->get_object().empty()) {
    os << "skipped\n";
    for (auto& [k, x] : sk->get_object()) os << "  " << std::left << std::setw(24) << std::string(k) << std::string(x.get_string()) << "\n";
    os << "\n";
  }
  if (auto* er = root.if_contains("scenario_errors"); er && !er->get_object().empty()) {
    os << "scenario errors\n";
    for (auto& [k, x] : er->get_object()) os << "  " << std::left << std::setw(24) << std::string(k) << std::string(x.get_string()) << "\n";
    os << "\n";
  }
  struct target {
    const char* key;
    const char* meaning;
    double limit;
  };
  const target targets[] = {
      {"pair_over_floor", "uncontended pair p50 / floor EVALSHA p50", 3.0},
      {"pair_over_quorum_floor", "uncontended pair p50 / hand-written quorum pair p50 (same commands, raw links, same transport)", 0.0},
      {"hung_over_healthy", "one_hung acquire p50 / uncontended acquire p50", 1.3},
      {"hung_over_own_baseline", "one_hung acquire p50 / its healthy baseline p50", 0},
      {"fail_over_timeout", "no_quorum fail p50 / node timeout", 1.1},
      {"fenced_over_plain", "fenced acquire p50 / uncontended acquire p50", 0},
      {"fair_handoff_over_floor", "contended_fair hand-off p50 / floor EVALSHA p50", 3.0},
      {"handoff_over_floor", "contended (mutex) hand-off p50 / floor EVALSHA p50", 0},
      {"fair_handoff_over_round", "contended_fair hand-off p50 / uncontended sync acquire p50 (one quorum round)", 0},
      {"fair_handoff_over_fair_round", "contended_fair hand-off p50 / uncontended fair sync acquire p50", 0},
      {"failover_over_ttl", "elect failover p50 (leader SIGKILLed to a standby leading) / its TTL", 0},
  };
  os << "ratios\n";
  const auto& ratios = root.at("ratios").get_object();
  for (auto& t : targets) {
    os << "  " << std::left << std::setw(30) << t.key;
    if (auto* r = ratios.if_contains(t.key); r && !r->is_null()) {
      double x = r->to_number<double>();
      os << std::right << std::setw(7) << std::fixed << std::setprecision(2) << x << "  " << std::left
         << std::setw(50) << t.meaning;
      if (t.limit > 0) os << "target <= " << std::setprecision(1) << t.limit << (x <= t.limit ? "  ok" : "  MISSED");
    } else {
      os << std::right << std::setw(7) << "-" << "  " << t.meaning << " (not measured)";
    }
    os << "\n";
  }
  os.unsetf(std::ios::fixed);
}

std::optional<double> p50_of(const json::object& root, const char* scenario, const char* key) {
  auto* s = root.if_contains(scenario);
  if (!s || !s->is_object()) return std::nullopt;
  auto* v = s->get_object().if_contains(key);
  if (!v || !is_latency(*v)) return std::nullopt;
  return v->get_object().at("p50").to_number<double>();
}

json::value ratio(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || *b <= 0) return nullptr;
  return std::round(*a / *b * 1000.0) / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  if (is_worker(argc, argv, many_clients_worker_flag)) return many_clients_worker(argc, argv);
  if (is_worker(argc, argv, elect_worker_flag)) return elect_worker(argc, argv);
  std::string nodes_arg, pidfiles, json_path, node_timeout_arg = "50ms", ttl_arg = "10s";
  std::string plot_dir, plot_from, peers_dir;
  bool tls_local = false;
  std::vector<std::string> scenario_args;
  settings s;

  po::options_description desc(
      "redlock-bench: latency and throughput of redlock against real redis-server masters.\n"
      "Without --nodes it starts 5 masters of its own on free loopback ports.\n"
      "Scenarios: see the list after the options\n\nOptions");
  desc.add_options()("help,h", "this help")(
      "nodes", po::value(&nodes_arg), "comma-separated master URIs (redis://host:port,...) instead of local ones")(
      "pidfiles", po::value(&pidfiles),
      "with --nodes: directory of <port>.pid files, so one_hung and no_quorum can SIGSTOP the masters")(
      "scenario", po::value(&scenario_args)->composing(), "scenario to run (repeatable or comma-separated; default all)")(
      "quick", po::bool_switch(&s.quick), "fewer samples and shorter runs (the whole run under 60 s)")(
      "smoke", po::bool_switch(&s.smoke),
      "shorter still (implies --quick): every scenario's paths run, for the tests; its figures mean little")(
      "json", po::value(&json_path), "write the figures as JSON to FILE")(
      "node-timeout", po::value(&node_timeout_arg), "per-master deadline, e.g. 50ms (default 50ms)")(
      "ttl", po::value(&ttl_arg), "lock TTL, e.g. 10s (default 10s)")(
      "tls", po::bool_switch(&tls_local),
      "start the local masters with TLS only (a private CA made with the openssl command, as the tests do) and "
      "connect over rediss://; not with --nodes")(
      "tls-ca-file", po::value(&s.tls_ca_file),
      "with rediss:// --nodes: the CA that signed the masters' certificates (the library's connections and the "
      "bench's own, the floors' and those that read INFO, use it)")(
      "workers", po::value(&s.workers),
      "contended scenarios: worker threads, each its own client (default 8; 2 shows the hand-off without CPU "
      "contention on a small machine)")(
      "one-thread", po::bool_switch(&s.one_thread),
      "contended scenarios: run the workers as coroutines on ONE thread, each its own async_client (the peers' "
      "harness model: one Node.js event loop), instead of a thread and a sync client each")(
      "plot", po::value(&plot_dir),
      "also draw the figures into DIR: latency CDFs and the scale_nodes curves (gnuplot data, plot.gp, and SVGs "
      "when gnuplot is installed); the JSON then carries each latency's percentiles 0..100 as \"cdf\"")(
      "plot-from", po::value(&plot_from), "with --plot: run nothing, draw from FILE (a --json of a --plot run)")(
      "peers", po::value(&peers_dir),
      "with --plot: compare-peer.sh's output directory, to add each peer's uncontended p50/p99/max");

  std::vector<const scenario*> selected;
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      for (auto& sc : all_scenarios) std::cout << "  " << std::left << std::setw(13) << sc.name << sc.what << "\n";
      return 0;
    }
    if (s.smoke) s.quick = true;
    s.node_timeout = duration_option(node_timeout_arg, "node-timeout");
    s.ttl = duration_option(ttl_arg, "ttl");
    if (s.node_timeout >= s.ttl) throw po::error("--node-timeout must be smaller than --ttl");
    if (s.workers < 2 || s.workers > 64) throw po::error("--workers must be between 2 and 64");
    std::vector<std::string> names;
    for (auto& a : scenario_args)
      for (auto& n : redlock::cli::split_list(a)) names.push_back(n);
    for (auto& sc : all_scenarios)
      if (names.empty() || std::find(names.begin(), names.end(), sc.name) != names.end()) selected.push_back(&sc);
    for (auto& n : names)
      if (std::none_of(std::begin(all_scenarios), std::end(all_scenarios),
                       [&](const scenario& sc) { return n == sc.name; }))
        throw po::error("unknown scenario '" + n + "'");
    if (!pidfiles.empty() && nodes_arg.empty()) throw po::error("--pidfiles needs --nodes");
    if ((!plot_from.empty() || !peers_dir.empty()) && plot_dir.empty())
      throw po::error("--plot-from and --peers need --plot DIR");
    if (plot_dir.find('\'') != std::string::npos) throw po::error("--plot: DIR must not contain a quote");
    if (!nodes_arg.empty()) {
      for (auto& u : redlock::cli::split_list(nodes_arg)) s.masters.push_back(parse_master(u));
      if (s.masters.empty()) throw po::error("--nodes: no URI given");
    }
    if (tls_local && !nodes_arg.empty()) throw po::error("--tls starts local masters: not with --nodes (see --tls-ca-file)");
    if (!s.tls_ca_file.empty() &&
        std::none_of(s.masters.begin(), s.masters.end(), [](const master& m) { return m.tls; }))
      throw po::error("--tls-ca-file needs rediss:// masters in --nodes");
  } catch (const std::exception& e) {
    std::cerr << "redlock-bench: " << e.what() << "\n\n" << desc << "\n";
    return 1;
  }

  if (!plot_from.empty()) {
    std::ifstream in(plot_from);
    std::stringstream text;
    text << in.rdbuf();
    boost::system::error_code ec;
    auto v = json::parse(text.str(), ec);
    if (!in || ec || !v.is_object()) {
      std::cerr << "redlock-bench: --plot-from: " << plot_from << " is not a redlock-bench JSON file\n";
      return 1;
    }
    std::cout << "redlock-bench: " << write_plots(v.get_object(), plot_dir, peers_dir) << "\n";
    return 0;
  }
  keep_cdf = !plot_dir.empty();

  install_signal_handlers();
  s.tag = "redlock-bench:" + std::to_string(::getpid()) + ":" +
          std::to_string(std::chrono::duration_cast<milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count());

  std::vector<std::unique_ptr<redlock::testing::redis_process>> local;
  std::vector<std::string> notes;
  try {
    if (s.masters.empty()) {
      s.local = true;
      if (tls_local) {
        s.local_options.tls = redlock::testing::shared_test_tls();
        s.tls_ca_file = s.local_options.tls->ca_cert.string();
      }
      for (int i = 0; i < 5; ++i) {
        local.push_back(std::make_unique<redlock::testing::redis_process>(s.local_options));
        register_child(local.back()->pid());
        master m = parse_master(local.back()->uri());
        m.local = local.back().get();
        m.pid = local.back()->pid();
        s.masters.push_back(m);
      }
    } else {
      s.local = false;
      s.can_stop = !pidfiles.empty();
      for (auto& m : s.masters) {
        if (pidfiles.empty()) break;
        auto path = pidfiles + "/" + std::to_string(m.port) + ".pid";
        std::ifstream in(path);
        long pid = 0;
        if (!(in >> pid) || pid <= 1) {
          notes.push_back("no usable pidfile " + path + " for " + m.uri);
          s.can_stop = false;
          continue;
        }
        if (::kill(static_cast<pid_t>(pid), 0) != 0) {
          notes.push_back("pid " + std::to_string(pid) + " from " + path + ": " + std::strerror(errno));
          s.can_stop = false;
          continue;
        }
        m.pid = static_cast<pid_t>(pid);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "redlock-bench: cannot set up the masters: " << e.what() << "\n";
    return 1;
  }
  for (auto& n : notes) std::cerr << "redlock-bench: note: " << n << "\n";

  if (!s.tls_ca_file.empty()) ::setenv(tls_ca_file_variable, s.tls_ca_file.c_str(), 1);  // for the workers

  json::object root;
  json::object config;
  json::array nodes_json;
  for (auto& m : s.masters) nodes_json.emplace_back(m.uri);
  config["nodes"] = nodes_json;
  config["local_masters"] = s.local;
  config["pids_known"] = s.can_stop;
  config["tls"] = std::any_of(s.masters.begin(), s.masters.end(), [](const master& m) { return m.tls; });
  config["node_timeout_ms"] = s.node_timeout.count();
  config["ttl_ms"] = s.ttl.count();
  config["workers"] = s.workers;
  config["one_thread"] = s.one_thread;
  config["quick"] = s.quick;
  config["smoke"] = s.smoke;
  config["build_type"] = REDLOCK_BENCH_BUILD_TYPE;
  config["sanitizers"] = static_cast<bool>(REDLOCK_BENCH_SANITIZE);
  config["compiler"] = __VERSION__;
  config["hardware_threads"] = std::thread::hardware_concurrency();
  config["timestamp"] = utc_timestamp();
  json::array sc_json;
  for (auto* sc : selected) sc_json.emplace_back(sc->name);
  config["scenarios"] = sc_json;
  root["config"] = config;

  json::object skipped, errors;
  auto run_start = steady::now();
  for (auto* sc : selected) {
    std::cerr << "redlock-bench: " << sc->name << " ..." << std::flush;
    auto t0 = steady::now();
    try {
      auto out = sc->run(s);
      if (!out.skipped.empty()) {
        skipped[sc->name] = out.skipped;
        std::cerr << " skipped: " << out.skipped << "\n";
        continue;
      }
      root[sc->name] = std::move(out.data);
      std::cerr << " " << std::fixed << std::setprecision(1)
                << std::chrono::duration<double>(steady::now() - t0).count() << " s\n";
    } catch (const std::exception& e) {
      errors[sc->name] = e.what();
      std::cerr << " FAILED: " << e.what() << "\n";
    }
  }
  root["config"].get_object()["elapsed_s"] =
      std::round(std::chrono::duration<double>(steady::now() - run_start).count() * 10) / 10;

  json::object ratios;
  ratios["pair_over_floor"] = ratio(p50_of(root, "uncontended", "pair_us"), p50_of(root, "floor", "evalsha_us"));
  ratios["pair_over_quorum_floor"] =
      ratio(p50_of(root, "uncontended", "pair_us"), p50_of(root, "floor", "quorum_pair_us"));
  ratios["hung_over_healthy"] = ratio(p50_of(root, "one_hung", "acquire_us"), p50_of(root, "uncontended", "acquire_us"));
  // The same client just before the stop: less exposed to load drift between scenarios.
  ratios["hung_over_own_baseline"] =
      ratio(p50_of(root, "one_hung", "acquire_us"), p50_of(root, "one_hung", "healthy_acquire_us"));
  std::optional<double> fail = p50_of(root, "no_quorum", "fail_ms");
  ratios["fail_over_timeout"] = ratio(fail, static_cast<double>(s.node_timeout.count()));
  ratios["handoff_over_floor"] = ratio(p50_of(root, "contended", "handoff_us"), p50_of(root, "floor", "evalsha_us"));
  ratios["fair_handoff_over_floor"] =
      ratio(p50_of(root, "contended_fair", "handoff_us"), p50_of(root, "floor", "evalsha_us"));
  // A hand-off cannot take less than one quorum round (the release reaching
  // the masters, their word reaching the next holder), through the same
  // sync API the contended workers use.
  ratios["fair_handoff_over_round"] =
      ratio(p50_of(root, "contended_fair", "handoff_us"), p50_of(root, "uncontended", "sync_acquire_us"));
  // The same against one round of the fair lock's own scripts (they keep
  // the line, so cost the masters more than SET NX PX), uncontended.
  ratios["fair_handoff_over_fair_round"] =
      ratio(p50_of(root, "contended_fair", "handoff_us"), p50_of(root, "uncontended", "fair_sync_acquire_us"));
  ratios["fenced_over_plain"] = ratio(p50_of(root, "fenced", "acquire_us"), p50_of(root, "uncontended", "acquire_us"));
  if (auto* e = root.if_contains("elect"))
    ratios["failover_over_ttl"] = ratio(p50_of(root, "elect", "failover_ms"), e->get_object().at("ttl_ms").to_number<double>());
  else
    ratios["failover_over_ttl"] = nullptr;
  root["ratios"] = ratios;
  if (!skipped.empty()) root["skipped"] = skipped;
  if (!errors.empty()) root["scenario_errors"] = errors;

  std::size_t violations = 0;
  for (const char* name : {"contended", "contended_fair", "semaphore", "rwlock", "semaphore_skew", "elect"})
    if (auto* c = root.if_contains(name)) violations += c->get_object().at("violations").to_number<std::size_t>();

  int status = 0;
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    pretty(out, root);
    out << "\n";
    if (!out) {
      std::cerr << "redlock-bench: cannot write " << json_path << "\n";
      status = 1;
    }
  }
  std::cout << "redlock-bench: " << s.masters.size() << (s.local ? " local" : "") << " masters, node timeout "
            << s.node_timeout.count() << " ms, TTL " << s.ttl.count() << " ms" << (s.smoke ? ", smoke" : s.quick ? ", quick" : "")
            << ", build " << REDLOCK_BENCH_BUILD_TYPE << (REDLOCK_BENCH_SANITIZE ? " (sanitizers)" : "")
            << "; latencies in microseconds unless named _ms\n";
  print_table(std::cout, root);
  if (!plot_dir.empty()) std::cout << "redlock-bench: " << write_plots(root, plot_dir, peers_dir) << "\n";
  std::cout << std::flush;

  for (auto& p : local) unregister_child(p->pid());
  local.clear();  // stops the masters

  if (!errors.empty()) status = 1;
  if (violations > 0) {
    std::cerr << "redlock-bench: " << violations
              << " overlapping holders seen in contended (or more holders than permits in semaphore, or a"
                 " leader whose epoch did not exceed the one before in elect)\n";
    status = 3;
  }
  return status;
}
