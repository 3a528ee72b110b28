// SPDX-License-Identifier: Apache-2.0
// redlock-demo: what the lock guarantees, shown on real redis-server masters.
//   1. mutual exclusion: workers increment a counter (non-atomic GET, SET)
//      only under the lock while one master is paused, killed and restarted;
//      no update may be lost;
//   2. fencing: a holder that stalls past its lease has its late write
//      refused by the storage (redlock::fenced_store), and, when PostgreSQL
//      is installed, its late transaction refused by a server the demo
//      starts (redlock::postgres_fenced_store);
//   3. the `redlock` command: renewal, exit 75 when busy, status, and exit 70
//      when the lease is lost because 3 of 5 masters stop answering.
// Ends with a summary; exit status 0 only when every check passed.
//
//   redlock-demo                      starts 5 local masters (AOF fsync always)
//   redlock-demo --nodes URI,URI,...  uses your masters (no faults injected;
//                                     every key it touches contains redlock-demo:)
#include "demo.hpp"
#include "duration.hpp"

#include <redlock/redlock.hpp>

#include <boost/program_options.hpp>

#include <functional>
#include <iostream>

namespace po = boost::program_options;

#ifndef REDLOCK_DEMO_CLI
#define REDLOCK_DEMO_CLI ""  // the build did not include the redlock command
#endif

namespace {

// Runs one part; an error (a master or the storage unreachable, ...) fails
// that part and the demo goes on with the next. Ctrl-C ends the demo.
void run_part(demo::report& r, const std::string& name, const std::function<void()>& part) {
  try {
    part();
  } catch (const demo::interrupted&) {
    throw;
  } catch (const std::exception& e) {
    std::cout << std::flush;
    r.check(false, name + ": stopped by an error: " + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description desc("redlock-demo options");
  std::string nodes_arg, cli_path = REDLOCK_DEMO_CLI;
  int workers = 4;
  double seconds = 6;
  desc.add_options()("help,h", "show this help")(
      "nodes", po::value(&nodes_arg), "comma-separated redis:// URIs of your masters (default: start 5 locally)")(
      "workers", po::value(&workers)->default_value(4), "worker threads in the mutual-exclusion part")(
      "seconds", po::value(&seconds)->default_value(6.0), "how long the mutual-exclusion part runs")(
      "cli", po::value(&cli_path), "path of the redlock command (default: the one this build made)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::cerr << "redlock-demo: " << e.what() << "\n" << desc;
    return 64;
  }
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  if (workers < 1 || seconds <= 0) {
    std::cerr << "redlock-demo: --workers must be >= 1 and --seconds > 0\n";
    return 64;
  }
  demo::catch_interrupts();

  demo::setup s;
  std::unique_ptr<redlock::testing::redis_process> storage_server;
  try {
    if (nodes_arg.empty()) {
      std::cout << "Starting 5 local redis-server masters (appendonly, appendfsync always) and a separate Redis\n"
                   "as the storage the lock protects...\n";
      redlock::testing::redis_options durable;
      durable.aof = true;
      for (int i = 0; i < 5; ++i) s.local.push_back(std::make_unique<redlock::testing::redis_process>(durable));
      storage_server = std::make_unique<redlock::testing::redis_process>();
      for (auto& m : s.local) s.nodes.push_back(m->uri());
      s.storage = demo::parse_endpoint(storage_server->uri());
    } else {
      s.nodes = redlock::cli::split_list(nodes_arg);
      if (s.nodes.empty()) throw redlock::error(redlock::errc::empty_node_list, "--nodes lists no URI");
      s.storage = demo::parse_endpoint(s.nodes.front());
      std::cout << "Using your " << s.nodes.size() << " masters; the first one also holds the storage keys. Every key\n"
                << "the demo touches contains 'redlock-demo:'. Nothing is paused or killed on your masters:\n"
                << "the fault parts are skipped.\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "redlock-demo: " << e.what() << "\n";
    return 69;
  }
  for (std::size_t i = 0; i < s.nodes.size(); ++i) std::cout << "  master " << i << ": " << s.nodes[i] << "\n";
  std::cout << "A lock is held when a majority (" << s.nodes.size() / 2 + 1 << " of " << s.nodes.size()
            << ") of the masters granted it, with time to spare on its TTL.\n";

  demo::report r;
  try {
    run_part(r, "mutual exclusion", [&] { demo::mutual_exclusion(s, r, workers, seconds); });
    run_part(r, "fencing", [&] { demo::fencing(s, r); });
    run_part(r, "the redlock command", [&] { demo::command_line(s, r, cli_path); });
  } catch (const demo::interrupted&) {
    std::cout << "\ninterrupted: stopping the children and the masters\n";
    return 130;
  }
  r.print_summary();
  return r.all_passed() ? 0 : 1;
}
