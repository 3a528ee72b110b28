// SPDX-License-Identifier: Apache-2.0
// Network partitions with ip netns + iptables. Two of the four clients run on
// an io thread that entered a network namespace (setns) joined to the host by
// a veth pair; the masters listen on the host end. Seeded partitions cut
// those clients off from a minority or a majority of the masters (iptables
// DROP = silent, or REJECT with tcp-reset = refused) for a random time; the
// other two clients are never partitioned. Then every checker, plus: a client
// cut off from a majority never acquires, one cut off from a minority still does.
//
// Needs root, `ip netns add` and iptables. When the facility is not usable the
// test is SKIPPED and says why (CTest reports it as skipped, never passed).
#define BOOST_TEST_MODULE fault_partition
#include <boost/test/unit_test.hpp>

#include "checkers.hpp"
#include "cluster.hpp"
#include "nemesis.hpp"
#include "workload.hpp"

#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace std::chrono_literals;
using namespace redlock::fault;
using std::chrono::milliseconds;

namespace {

tally totals;
bool ran = false;

struct summary_at_exit {
  void setup() {}
  void teardown() {
    if (ran) totals.print(std::cout);
  }
};

int sh(const std::string& cmd) {
  int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
  return rc == -1 ? -1 : WEXITSTATUS(rc);
}

// A network namespace joined to the host by a veth pair (/30 subnet).
struct netns {
  std::string name, veth_host, veth_ns, host_ip, ns_ip;
  bool up = false;

  netns() {
    auto id = std::to_string(::getpid() % 100000);
    name = "rlfault" + id;
    veth_host = "rlfh" + id;
    veth_ns = "rlfn" + id;
    auto x = std::to_string(::getpid() % 250);
    host_ip = "10.213." + x + ".1";
    ns_ip = "10.213." + x + ".2";
  }
  std::string path() const { return "/var/run/netns/" + name; }
  std::string in_ns(const std::string& cmd) const { return "ip netns exec " + name + " " + cmd; }

  // Returns "" on success, else what failed.
  std::string create() {
    const std::vector<std::string> steps = {
        "ip netns add " + name,
        "ip link add " + veth_host + " type veth peer name " + veth_ns,
        "ip link set " + veth_ns + " netns " + name,
        "ip addr add " + host_ip + "/30 dev " + veth_host,
        "ip link set " + veth_host + " up",
        in_ns("ip addr add " + ns_ip + "/30 dev " + veth_ns),
        in_ns("ip link set " + veth_ns + " up"),
        in_ns("ip link set lo up"),
        in_ns("iptables -S OUTPUT"),
    };
    up = true;
    for (auto& s : steps)
      if (sh(s) != 0) return "'" + s + "' failed";
    return {};
  }
  ~netns() {
    if (!up) return;
    sh("ip link del " + veth_host);
    sh("ip netns del " + name);
  }
};

// Whether the facility is really usable: root, ip netns, veth, iptables.
std::string why_unusable() {
  if (::geteuid() != 0) return "not running as root";
  if (sh("command -v ip") != 0) return "the ip command (iproute2) is not installed";
  if (sh("command -v iptables") != 0) return "iptables is not installed";
  netns probe;
  probe.name += "p";
  probe.veth_host += "p";
  probe.veth_ns += "p";
  if (auto err = probe.create(); !err.empty()) return "cannot set up a network namespace: " + err;
  if (sh(probe.in_ns("iptables -A OUTPUT -p tcp --dport 9 -j DROP")) != 0)
    return "iptables does not work inside a network namespace";
  return {};
}

// How many of a master's client connections come from `ip` (CLIENT LIST's
// addr=ip:port; the probe's own connection comes from 127.0.0.1).
std::size_t connections_from(redlock::testing::redis_process& m, const std::string& ip) {
  std::istringstream lines(m.command({"CLIENT", "LIST"}));
  std::size_t n = 0;
  for (std::string line; std::getline(lines, line);)
    n += line.find(" addr=" + ip + ":") != std::string::npos || line.starts_with("addr=" + ip + ":");
  return n;
}

boost::test_tools::assertion_result netns_usable(boost::unit_test::test_unit_id) {
  static const std::string why = why_unusable();
  if (why.empty()) return true;
  std::cout << "fault_partition: SKIPPED: network partitions need root, ip netns and iptables: " << why
            << std::endl;
  boost::test_tools::assertion_result r(false);
  r.message() << "skipped: " << why;
  return r;
}

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(summary_at_exit);

BOOST_AUTO_TEST_CASE(netns_partitions_of_a_minority_and_a_majority,
                     *boost::unit_test::precondition(netns_usable)) {
  ran = true;
  const std::uint64_t seed = 7;
  netns ns;
  auto err = ns.create();
  BOOST_REQUIRE_MESSAGE(err.empty(), err);

  cluster_options co;
  co.masters = 3;
  co.aof = true;
  co.proxies = false;
  co.listen_ip = ns.host_ip;
  cluster c(co);

  workload_options wo;
  wo.seed = seed;
  wo.key_prefix = "part:";
  wo.netns_path = ns.path();
  wo.netns_clients = 2;  // clients 0 and 1 live in the namespace
  wo.netns_uris = c.uris();
  wo.netns_storage_uri = c.storage_uri();
  history h;
  // The other clients use 127.0.0.1: a connection that reaches a master from
  // the veth's host address was opened outside the namespace by a client
  // that should live inside it, and no partition would apply to it.
  workload w(wo, c.loopback_uris(), c.storage().uri(), h);
  w.start();
  std::size_t outside = 0, inside = 0;
  auto count_connections = [&] {
    for (std::size_t m = 0; m < c.size(); ++m) {
      outside += connections_from(c.master(m), ns.host_ip);
      inside += connections_from(c.master(m), ns.ns_ip);
    }
  };

  // The nemesis of this test: iptables rules inside the namespace.
  std::mt19937_64 rng(seed);
  auto start = steady::now();
  auto recovery_bound = 3000ms;
  auto end = start + 12s;
  std::size_t faults = 0, acted_faults = 0;
  struct cut {
    time_point from, to;  ///< surely in force
    time_point healed;    ///< surely over
    bool majority;
  };
  std::vector<cut> cuts;
  while (steady::now() < end - recovery_bound - 500ms) {
    bool majority = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    bool refuse = std::uniform_int_distribution<int>(0, 2)(rng) == 0;
    std::vector<std::size_t> all{0, 1, 2};
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(majority ? 2 : 1);
    std::ostringstream detail;
    detail << (majority ? "majority" : "minority") << (refuse ? " REJECT" : " DROP") << " masters";
    for (auto m : all) {
      detail << " m" << m;
      auto rule = "iptables -A OUTPUT -d " + ns.host_ip + " -p tcp --dport " + std::to_string(c.master(m).port()) +
                  (refuse ? " -j REJECT --reject-with tcp-reset" : " -j DROP");
      BOOST_REQUIRE_EQUAL(sh(ns.in_ns(rule)), 0);
    }
    op f;
    f.kind = op_kind::fault;
    f.resource = "netns-partition";
    f.detail = detail.str();
    f.invoke = steady::now();
    auto fid = h.invoke(f);
    ++faults;
    count_connections();
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(200, 900)(rng)));
    // The cut is certainly in force from when the rules were in (f.invoke)
    // until the flush STARTS: the flush acts before `ip netns exec` returns,
    // which takes tens of ms more on a loaded machine, and a client may
    // acquire in between. (Taking the return as the end once counted such
    // acquisitions as made during the cut.) The history records the later
    // time, so check (e) measures recovery from when the cut surely ended.
    // Acted: the rules dropped or refused a packet a client sent (their
    // counters, read before the flush), not merely that they were in.
    bool acted = sh(ns.in_ns("sh -c \"iptables -L OUTPUT -v -x -n | awk 'NR > 2 { n += \\$1 } END { exit n > 0 ? 0 : 1 }'\"")) == 0;
    auto heal_begins = steady::now();
    BOOST_REQUIRE_EQUAL(sh(ns.in_ns("iptables -F OUTPUT")), 0);
    auto healed = steady::now();
    h.update(fid, [&](op& o) { o.acted = acted; });
    acted_faults += acted;
    h.complete(fid, healed, outcome::ok);
    cuts.push_back({f.invoke, heal_begins, healed, majority});
    bool long_quiet = std::uniform_int_distribution<int>(0, 5)(rng) == 0;
    std::this_thread::sleep_for(long_quiet ? recovery_bound + 300ms : milliseconds(std::uniform_int_distribution<int>(50, 300)(rng)));
  }
  while (steady::now() < end) std::this_thread::sleep_for(20ms);
  count_connections();
  auto workload_end = w.stop();
  std::this_thread::sleep_for(wo.ttl_max * 12 / 10 + 300ms);

  round_result r;
  r.seed = seed;
  r.residue = check_residue(c.keys());
  r.ops = h.snapshot();
  resolve_deadlines(r.ops, [&](int clock, time_point t) { return w.to_steady(clock, t); });
  check_config cc;
  cc.bounds = w.bounds();
  cc.resources = w.resources();
  cc.recovery_bound = recovery_bound;
  cc.workload_end = workload_end;
  r.report = check_all(r.ops, cc);
  auto registers = read_registers("127.0.0.1", c.storage().port());  // the data verdict, from the storage
  for (auto& v : check_data(registers.logs, registers.counters, &r.data)) {
    r.report.by_checker[v.checker] += 1;
    r.report.violations.push_back(std::move(v));
  }
  r.faults = fault_figures(r.ops);
  r.faults_injected = faults;
  r.faults_acted = acted_faults;
  totals.add(r);

  // A client cut off from a majority cannot acquire; cut off from a minority it can.
  std::size_t during_majority = 0, during_minority = 0, while_flushing = 0;
  for (auto& o : r.ops) {
    if (o.kind != op_kind::acquire || o.result != outcome::ok || o.client > 1 || !o.completion) continue;
    for (auto& k : cuts) {
      if (k.majority && o.invoke >= k.from && *o.completion > k.to && *o.completion <= k.healed) ++while_flushing;
      if (o.invoke >= k.from && *o.completion <= k.to) {
        ++(k.majority ? during_majority : during_minority);
        if (k.majority)
          std::cout << "acquired during a majority cut (times in ms from its start; flushed "
                    << ms_since(k.from, k.to) << " .. " << ms_since(k.from, k.healed) << "): " << describe(o, k.from)
                    << std::endl;
      }
    }
  }
  std::cout << "namespaced clients' connections seen on the masters: " << inside << " inside the namespace, "
            << outside << " outside it" << std::endl;
  std::cout << "partitioned clients: " << during_minority << " acquisitions while cut off from a minority, "
            << during_majority << " while cut off from a majority (" << while_flushing
            << " more completed while a majority cut's rules were being flushed)" << std::endl;
  if (r.violations() > 0) report_failure(std::cout, r, "fault_partition (seed " + std::to_string(seed) + ")");
  BOOST_TEST(r.violations() == 0u);
  BOOST_TEST(outside == 0u, "connections of namespaced clients opened outside the namespace");
  BOOST_TEST(inside > 0u);
  BOOST_TEST(during_majority == 0u);
  BOOST_TEST(during_minority > 0u);
  BOOST_TEST(acted_faults > 0u, faults << " cuts, none dropped or refused a packet");
  BOOST_TEST(r.data.sections > 0u);
}
