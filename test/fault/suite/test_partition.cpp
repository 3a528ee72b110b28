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
  workload w(wo, c.uris(), c.storage_uri(), h);
  w.start();

  // The nemesis of this test: iptables rules inside the namespace.
  std::mt19937_64 rng(seed);
  auto start = steady::now();
  auto recovery_bound = 3000ms;
  auto end = start + 12s;
  std::size_t faults = 0;
  struct cut {
    time_point from, to;
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
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(200, 900)(rng)));
    BOOST_REQUIRE_EQUAL(sh(ns.in_ns("iptables -F OUTPUT")), 0);
    auto healed = steady::now();
    h.complete(fid, healed, outcome::ok);
    cuts.push_back({f.invoke, healed, majority});
    bool long_quiet = std::uniform_int_distribution<int>(0, 5)(rng) == 0;
    std::this_thread::sleep_for(long_quiet ? recovery_bound + 300ms : milliseconds(std::uniform_int_distribution<int>(50, 300)(rng)));
  }
  while (steady::now() < end) std::this_thread::sleep_for(20ms);
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
  r.faults = fault_figures(r.ops);
  r.faults_injected = faults;
  totals.add(r);

  // A client cut off from a majority cannot acquire; cut off from a minority it can.
  std::size_t during_majority = 0, during_minority = 0;
  for (auto& o : r.ops) {
    if (o.kind != op_kind::acquire || o.result != outcome::ok || o.client > 1 || !o.completion) continue;
    for (auto& k : cuts)
      if (o.invoke >= k.from && *o.completion <= k.to) ++(k.majority ? during_majority : during_minority);
  }
  std::cout << "partitioned clients: " << during_minority << " acquisitions while cut off from a minority, "
            << during_majority << " while cut off from a majority" << std::endl;
  if (r.violations() > 0) report_failure(std::cout, r, "fault_partition (seed " + std::to_string(seed) + ")");
  BOOST_TEST(r.violations() == 0u);
  BOOST_TEST(during_majority == 0u);
  BOOST_TEST(during_minority > 0u);
  BOOST_TEST(faults > 0u);
}
