// SPDX-License-Identifier: Apache-2.0
// redlock::diagnose (include/redlock/doctor.hpp): reads each master through
// the library's own connections (so TLS, AUTH and SELECT behave as in a
// client), one request at a time on a private io_context, then judges what
// it read against the algorithm's assumptions (docs/safety.md).
#include "client/options_check.hpp"
#include "doctor/fleet_checks.hpp"
#include "doctor/prober.hpp"
#include "doctor/probes.hpp"
#include "quorum/validity.hpp"
#include "scripts/script.hpp"

#include <redlock/doctor.hpp>
#include <redlock/error.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace redlock {

std::size_t doctor_report::count(severity level) const {
  return static_cast<std::size_t>(
      std::count_if(findings.begin(), findings.end(), [level](const finding& f) { return f.level == level; }));
}

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

using detail::ms_text;
using detail::number_of;
using detail::parse_info;
using detail::percentile;
using detail::prober;
using detail::reply;
using detail::value;
using detail::value_of;

// Audits one master; adds its findings.
class node_audit {
 public:
  node_audit(prober& p, std::size_t index, const client_options& client, const doctor_options& options,
             doctor_report& report)
      : p_(p), i_(index), client_(client), options_(options), report_(report), facts_(report.nodes[index]) {}

  void run() {
    // The first request opens the connection: its failure is the node's.
    auto info = p_.call(i_, {"INFO"});
    if (info.error) {
      facts_.error = info.error.message();
      return add(severity::error, "unreachable", "unreachable: " + facts_.error);
    }
    facts_.reachable = true;
    if (info.v.is_error()) {
      add(severity::warning, "unchecked",
          "cannot read INFO (" + info.v.text + "): mode, replication, persistence, eviction and run_id not checked");
    } else {
      read_info(parse_info(info.v.text));
      if (facts_.mode == "sentinel") {
        return add(severity::error, "mode",
                   "is a Sentinel, not a master: list the masters themselves (independent ones, not a Sentinel's)");
      }
      judge_info();
    }
    measure_round_trips();
    measure_clock();
    check_scripts();
    check_acl();
  }

 private:
  void add(severity level, std::string check, std::string message) {
    report_.findings.push_back({level, std::move(check), facts_.node, std::move(message)});
  }

  void read_info(const std::map<std::string, std::string>& info) {
    facts_.version = value_of(info, "redis_version");
    facts_.mode = value_of(info, "redis_mode");
    if (value_of(info, "cluster_enabled") == "1") facts_.mode = "cluster";
    facts_.role = value_of(info, "role");
    facts_.run_id = value_of(info, "run_id");
    facts_.replicas = static_cast<std::size_t>(number_of(value_of(info, "connected_slaves")));
    if (auto aof = value_of(info, "aof_enabled"); !aof.empty()) facts_.aof = aof == "1";
    facts_.maxmemory_policy = value_of(info, "maxmemory_policy");
    maxmemory_ = number_of(value_of(info, "maxmemory"));
    master_ = value_of(info, "master_host") + ":" + value_of(info, "master_port");
  }

  void judge_info() {
    if (facts_.mode == "cluster")
      add(severity::error, "mode",
          "runs in Cluster mode: RedLock needs independent standalone masters (a Cluster fails a slot over to a "
          "replica that may not have the lock)");
    if (facts_.role == "slave")
      add(severity::error, "replica",
          "is a replica (of " + master_ +
              "): it refuses writes, and it is not independent of its master; list independent masters only");
    if (facts_.replicas > 0)
      add(severity::error, "has_replicas",
          "has " + std::to_string(facts_.replicas) +
              " replica(s): replication is asynchronous, so after a failover the promoted replica may not have a "
              "lock it granted and two clients can hold it; use masters without replicas");
    judge_persistence();
    if (!facts_.maxmemory_policy.empty() && facts_.maxmemory_policy != "noeviction")
      add(severity::error, "eviction",
          "maxmemory-policy is " + facts_.maxmemory_policy +
              ": when memory runs short the master may evict a held lock's key (volatile-* policies evict keys "
              "with a TTL, which every lock has)" +
              (maxmemory_ == 0 ? std::string(" once a maxmemory limit is set") : std::string()) +
              "; set maxmemory-policy noeviction");
  }

  void judge_persistence() {
    static const std::string delayed_restart =
        "or restart a crashed master only after the longest TTL has passed (delayed restart, docs/operations.md)";
    if (facts_.aof && !*facts_.aof) {
      facts_.appendfsync.clear();
      return add(severity::warning, "persistence",
                 "AOF is off (appendonly no): restarted after a crash, this master forgets the locks it granted and "
                 "its fence counters; set appendonly yes and appendfsync always, " + delayed_restart);
    }
    auto fsync = p_.call(i_, {"CONFIG", "GET", "appendfsync"});
    if (fsync.error || fsync.v.is_error() || fsync.v.elements.size() != 2) {
      return add(severity::warning, "unchecked",
                 "cannot read appendfsync (CONFIG GET " +
                     (fsync.error ? fsync.error.message() : fsync.v.is_error() ? fsync.v.text : "gave no value") +
                     "): check by hand that it is always");
    }
    facts_.appendfsync = fsync.v.elements[1].text;
    if (facts_.appendfsync != "always")
      add(severity::warning, "persistence",
          "appendfsync is " + facts_.appendfsync +
              ", not always: a crash loses the grants and fence counters of the last writes not yet on disk; set "
              "appendfsync always, " + delayed_restart);
  }

  void measure_round_trips() {
    std::vector<microseconds> samples;
    for (unsigned n = 0; n < std::max(options_.round_trips, 1u); ++n) {
      auto r = p_.call(i_, {"PING"});
      if (r.error || r.v.is_error()) {
        return add(severity::warning, "unchecked",
                   "round trip not measured: PING failed (" + (r.error ? r.error.message() : r.v.text) + ")");
      }
      samples.push_back(r.round_trip);
    }
    std::sort(samples.begin(), samples.end());
    facts_.rtt_p50 = percentile(samples, 0.50);
    facts_.rtt_p99 = percentile(samples, 0.99);
    auto timeout = microseconds(client_.node_timeout);
    auto p99 = facts_.rtt_p99;
    if (p99 >= timeout)
      add(severity::error, "round_trip",
          "round-trip p99 is " + ms_text(p99) + ", not below the node timeout of " + ms_text(timeout) +
              ": requests to it will time out; raise the node timeout (far below the TTL) or use a closer master");
    else if (p99 * 2 > timeout)
      add(severity::warning, "round_trip",
          "round-trip p99 is " + ms_text(p99) + ", more than half the node timeout of " + ms_text(timeout) +
              ": a slow moment makes requests time out");
    if (p99 * 10 > microseconds(options_.ttl))
      add(severity::warning, "round_trip",
          "round-trip p99 is " + ms_text(p99) + ", more than a tenth of the TTL of " +
              std::to_string(options_.ttl.count()) + " ms: each acquisition uses up much of the lease");
  }

  // TIME minus our system clock at the middle of the fastest of a few round trips.
  void measure_clock() {
    std::optional<microseconds> best_rtt;
    for (int n = 0; n < 5; ++n) {
      auto before = std::chrono::system_clock::now();
      auto r = p_.call(i_, {"TIME"});
      auto after = std::chrono::system_clock::now();
      if (r.error || r.v.is_error() || r.v.elements.size() != 2) {
        return add(severity::warning, "unchecked",
                   "clock not compared: TIME failed (" + (r.error ? r.error.message() : r.v.text) + ")");
      }
      auto server = std::chrono::seconds(number_of(r.v.elements[0].text)) + microseconds(number_of(r.v.elements[1].text));
      auto ours = std::chrono::duration_cast<microseconds>((before + (after - before) / 2).time_since_epoch());
      if (!best_rtt || r.round_trip < *best_rtt) {
        best_rtt = r.round_trip;
        facts_.clock_offset = server - ours;
        facts_.clock_uncertainty = r.round_trip / 2;
      }
    }
  }

  void check_scripts() {
    std::vector<std::string> failed;
    for (const detail::script* s : detail::scripts::all) {
      auto r = p_.call(i_, {"SCRIPT", "LOAD", std::string(s->body)});
      if (r.error)
        failed.push_back(std::string(s->name) + " (" + r.error.message() + ")");
      else if (r.v.is_error())
        failed.push_back(std::string(s->name) + " (" + r.v.text + ")");
      else if (r.v.text != s->sha1)
        failed.push_back(std::string(s->name) + " (loaded as " + r.v.text + ", expected " + std::string(s->sha1) + ")");
    }
    if (failed.empty()) return;
    std::string list;
    for (auto& f : failed) list += (list.empty() ? "" : "; ") + f;
    add(severity::error, "scripts", "cannot load the library's scripts: " + list);
  }

  void check_acl() {
    auto user = options_.acl_user;
    if (user.empty()) user = p_.node(i_).address().user.empty() ? "default" : p_.node(i_).address().user;
    auto lock = detail::names_of_lock(client_.key_prefix, options_.name);
    std::vector<std::string> denied;
    for (auto& probe : detail::acl_probes(lock)) {
      std::vector<std::string> argv{"ACL", "DRYRUN", user};
      argv.insert(argv.end(), probe.begin(), probe.end());
      auto r = p_.call(i_, argv);
      if (r.error || r.v.is_error()) {
        return add(severity::warning, "unchecked",
                   "ACL rights of user '" + user + "' not checked: ACL DRYRUN " +
                       (r.error ? r.error.message() : r.v.text) +
                       " (Redis 7 and a user allowed ACL are needed: rerun with an admin's URIs and --acl-user " + user +
                       ")");
      }
      if (r.v.type == REDIS_REPLY_STATUS && r.v.text == "OK") continue;
      if (std::find(denied.begin(), denied.end(), r.v.text) == denied.end()) denied.push_back(r.v.text);
    }
    if (denied.empty()) return;
    std::string list;
    for (auto& d : denied) list += (list.empty() ? "" : "; ") + d;
    add(severity::error, "acl",
        "user '" + user + "' lacks rights the library needs for lock '" + options_.name + "' (key " + lock.key +
            ", its companions {" + lock.key + "}:* and channels {" + lock.key + "}:released*): " + list);
  }

  prober& p_;
  std::size_t i_;
  const client_options& client_;
  const doctor_options& options_;
  doctor_report& report_;
  node_facts& facts_;
  long long maxmemory_ = 0;
  std::string master_;
};

}  // namespace

doctor_report diagnose(const client_options& client, const doctor_options& options) {
  if (auto bad = detail::check_ttl(options.ttl, client.node_timeout)) throw error(bad.code, bad.message);
  if (options.name.empty()) throw error(errc::empty_name, "doctor_options::name is empty");
  doctor_report report;
  prober p(client);
  report.nodes.resize(p.size());
  detail::check_node_count(client, report);
  detail::check_round_trip(client, options, report);
  for (std::size_t i = 0; i < p.size(); ++i) {
    report.nodes[i].node = p.node(i).display();
    node_audit(p, i, client, options, report).run();
  }
  detail::check_same_servers(report);
  detail::check_clock_skew(client, options, report);
  return report;
}

}  // namespace redlock