// redlock-demo: several workers increment a shared counter (a deliberately
// non-atomic GET, pause, SET on a separate Redis) only while holding the
// RedLock, while one master is paused, killed and restarted. At the end the
// counter must equal the number of critical sections: no lost update.
//
//   redlock-demo                      starts 5 local masters (AOF fsync always)
//   redlock-demo --nodes URI,URI,...  uses your masters (no faults injected)
#include <redlock/redlock.hpp>

#include <redis_process.hpp>

#include <boost/program_options.hpp>
#include <boost/url/parse.hpp>
#include <hiredis/hiredis.h>

#include <array>
#include <atomic>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
namespace po = boost::program_options;
using steady = std::chrono::steady_clock;

namespace {

// The shared resource: a counter on a Redis the masters do not depend on.
class counter_store {
 public:
  counter_store(const std::string& host, int port) : host_(host), port_(port) {}
  long read_modify_write() {  // GET, pause, SET: loses updates without mutual exclusion
    auto* c = connect();
    auto* r = static_cast<redisReply*>(redisCommand(c, "GET redlock-demo:counter"));
    long value = r && r->type == REDIS_REPLY_STRING ? std::stol(r->str) : 0;
    if (r) freeReplyObject(r);
    std::this_thread::sleep_for(1ms);
    r = static_cast<redisReply*>(redisCommand(c, "SET redlock-demo:counter %ld", value + 1));
    if (r) freeReplyObject(r);
    redisFree(c);
    return value + 1;
  }
  long value() {
    auto* c = connect();
    auto* r = static_cast<redisReply*>(redisCommand(c, "GET redlock-demo:counter"));
    long v = r && r->type == REDIS_REPLY_STRING ? std::stol(r->str) : 0;
    if (r) freeReplyObject(r);
    redisFree(c);
    return v;
  }
  void reset() {
    auto* c = connect();
    if (auto* r = static_cast<redisReply*>(redisCommand(c, "DEL redlock-demo:counter"))) freeReplyObject(r);
    redisFree(c);
  }

 private:
  redisContext* connect() {
    timeval tv{2, 0};
    auto* c = redisConnectWithTimeout(host_.c_str(), port_, tv);
    if (!c || c->err) throw std::runtime_error("demo: cannot reach the counter store at " + host_);
    redisSetTimeout(c, tv);
    return c;
  }
  std::string host_;
  int port_;
};

const char* state_name(redlock::node_state s) {
  switch (s) {
    case redlock::node_state::locked: return "locked";
    case redlock::node_state::refused: return "refused";
    case redlock::node_state::failed: return "failed";
    case redlock::node_state::unknown: return "unknown";
    case redlock::node_state::pending: return "pending";
  }
  return "?";
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description desc("redlock-demo options");
  std::string nodes_arg;
  int workers = 4;
  double seconds = 8;
  desc.add_options()("help,h", "show this help")(
      "nodes", po::value(&nodes_arg), "comma-separated redis:// URIs of your masters (default: start 5 locally)")(
      "workers", po::value(&workers)->default_value(4), "worker threads")(
      "seconds", po::value(&seconds)->default_value(8.0), "how long to run");
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

  const bool local = nodes_arg.empty();
  std::vector<std::unique_ptr<redlock::testing::redis_process>> masters;
  std::unique_ptr<redlock::testing::redis_process> store_server;
  std::vector<std::string> nodes;
  std::string store_host = "127.0.0.1";
  int store_port = 0;
  try {
    if (local) {
      std::cout << "starting 5 local redis-server masters (appendonly, appendfsync always) and a counter store...\n";
      redlock::testing::redis_options durable;
      durable.aof = true;
      for (int i = 0; i < 5; ++i) masters.push_back(std::make_unique<redlock::testing::redis_process>(durable));
      store_server = std::make_unique<redlock::testing::redis_process>();
      for (auto& m : masters) nodes.push_back(m->uri());
      store_port = store_server->port();
    } else {
      nodes = split(nodes_arg);
      auto u = boost::urls::parse_uri(nodes.front());
      if (!u) throw redlock::error(redlock::errc::bad_uri, "'" + nodes.front() + "'");
      store_host = u->host_address();
      store_port = u->has_port() ? std::stoi(std::string(u->port())) : 6379;
      std::cout << "using your " << nodes.size() << " masters; the counter lives on the first one\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "redlock-demo: " << e.what() << "\n";
    return 69;
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) std::cout << "  master " << i << ": " << nodes[i] << "\n";

  counter_store store(store_host, store_port);
  store.reset();

  redlock::client_options options;
  options.nodes = nodes;
  options.node_timeout = 50ms;
  redlock::acquire_options lock_opts{
      .ttl = 2000ms, .wait = 3000ms, .retry_delay = 4ms, .retry_jitter = 3ms, .min_validity = 100ms};

  std::mutex stats_mutex;
  std::vector<long> sections(workers, 0), not_acquired(workers, 0);
  std::vector<std::map<std::string, long>> per_master(nodes.size());
  std::atomic<bool> stop{false};
  auto t0 = steady::now();
  auto stamp = [&] {
    std::ostringstream s;
    s << "[" << std::fixed << std::setprecision(1) << std::chrono::duration<double>(steady::now() - t0).count() << "s] ";
    return s.str();
  };

  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        redlock::client c(options);
        while (!stop) {
          auto l = c.try_acquire("redlock-demo:lock", lock_opts);
          if (!l) {
            ++not_acquired[w];
            continue;
          }
          {
            std::lock_guard g(stats_mutex);
            for (std::size_t i = 0; i < l->nodes().size(); ++i) ++per_master[i][state_name(l->nodes()[i].state)];
          }
          // Critical section: only while validity remains.
          if (l->remaining_validity() > 50ms) {
            store.read_modify_write();
            ++sections[w];
          }
          try {
            c.release(*l);
          } catch (const redlock::error&) {
            // Already expired: nothing to release.
          }
        }
      } catch (const std::exception& e) {
        std::lock_guard g(stats_mutex);
        std::cerr << stamp() << "worker " << w << " stopped: " << e.what() << "\n";
      }
    });
  }

  auto sleep_until = [&](double at) {
    auto when = t0 + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(at));
    while (steady::now() < when && !stop) std::this_thread::sleep_for(10ms);
  };
  std::cout << stamp() << workers << " workers running for " << seconds << " s\n";
  if (local) {
    sleep_until(seconds * 0.25);
    masters[2]->pause();
    std::cout << stamp() << "SIGSTOP master 2 (it still accepts connections but answers nothing)\n";
    sleep_until(seconds * 0.45);
    masters[2]->kill9();
    std::cout << stamp() << "kill -9 master 2\n";
    sleep_until(seconds * 0.65);
    masters[2]->restart();
    std::cout << stamp() << "restarted master 2 from its AOF\n";
  }
  sleep_until(seconds);
  stop = true;
  for (auto& t : threads) t.join();

  long total = 0;
  std::cout << "\n" << stamp() << "summary\n";
  for (int w = 0; w < workers; ++w) {
    std::cout << "  worker " << w << ": " << sections[w] << " critical sections, " << not_acquired[w]
              << " waits that timed out\n";
    total += sections[w];
  }
  std::cout << "  per-master answers at the moment each quorum was reached:\n";
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::cout << "    master " << i << ":";
    for (auto& [state, n] : per_master[i]) std::cout << " " << state << "=" << n;
    std::cout << "\n";
  }
  long final_value = store.value();
  std::cout << "  sections: " << total << ", counter: " << final_value << " -> "
            << (final_value == total ? "no lost update" : "LOST UPDATES: mutual exclusion was violated") << "\n";
  return final_value == total ? 0 : 1;
}
