// SPDX-License-Identifier: Apache-2.0
#include <redlock/error.hpp>
#include <redlock/lock.hpp>
#include <redlock/prometheus_observer.hpp>

#include <boost/url/parse.hpp>

#include <string_view>

namespace redlock {

namespace {

using prometheus::Histogram;

// Seconds, from a quarter of a millisecond (one loopback round) up to the
// node timeouts and waits people configure.
const Histogram::BucketBoundaries& round_buckets() {
  static const Histogram::BucketBoundaries b{0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                             0.025,   0.05,   0.1,   0.25,   0.5,   1.0};
  return b;
}
const Histogram::BucketBoundaries& wait_buckets() {
  static const Histogram::BucketBoundaries b{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                             0.1,    0.25,  0.5,    1.0,   2.5,  5.0,   10.0, 30.0};
  return b;
}

double seconds(std::chrono::microseconds d) { return static_cast<double>(d.count()) / 1e6; }

// "acquired", or the error as one word (the errc enumerator's name).
std::string outcome_label(const boost::system::error_code& ec) {
  return ec ? std::string(error_word(ec)) : std::string("acquired");
}

// Seconds, from a millisecond (a critical section that writes one row) up
// to the hour a leader or a batch job holds its lock.
const Histogram::BucketBoundaries& hold_buckets() {
  static const Histogram::BucketBoundaries b{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0,   2.5,
                                             5.0,   10.0,  30.0, 60.0, 300.0, 900.0, 3600.0};
  return b;
}

constexpr lock_kind every_kind[] = {lock_kind::mutex,     lock_kind::reentrant, lock_kind::fair,
                                    lock_kind::semaphore, lock_kind::read,      lock_kind::write};

// host:port[/db] of a node URI: the user and password never become a label.
std::string host_port(const std::string& uri) {
  auto u = boost::urls::parse_uri(uri);
  if (!u || u->encoded_host().empty()) return "unparsable";
  auto host = u->encoded_host();
  std::string out(host.data(), host.size());
  out += ":" + (u->has_port() ? std::string(u->port()) : std::string("6379"));
  if (auto path = u->path(); !path.empty() && path != "/") out += path;
  return out;
}

}  // namespace

prometheus_observer::prometheus_observer(prometheus::Registry& registry, const std::vector<std::string>& nodes)
    : acquisitions_(prometheus::BuildCounter()
                        .Name("redlock_acquisitions_total")
                        .Help("Acquisitions completed, by lock kind and outcome (acquired, or the error)")
                        .Register(registry)),
      acquire_seconds_(prometheus::BuildHistogram()
                           .Name("redlock_acquire_duration_seconds")
                           .Help("Time from the start of an acquisition to its result, waiting included")
                           .Register(registry)),
      acquire_rounds_(prometheus::BuildHistogram()
                          .Name("redlock_acquire_attempts")
                          .Help("Quorum rounds one acquisition took, by lock kind and result")
                          .Register(registry)),
      attempts_(prometheus::BuildCounter()
                    .Name("redlock_acquire_attempts_total")
                    .Help("Quorum rounds started by acquisitions (counted as they start)")
                    .Register(registry)
                    .Add({})),
      node_seconds_(prometheus::BuildHistogram()
                        .Name("redlock_node_request_duration_seconds")
                        .Help("Round trip of one request to one master, by master and operation "
                              "(errors and timeouts included)")
                        .Register(registry)),
      node_errors_(prometheus::BuildCounter()
                       .Name("redlock_node_errors_total")
                       .Help("Requests to one master that failed, by master and error")
                       .Register(registry)),
      renewals_(prometheus::BuildCounter()
                    .Name("redlock_renewals_total")
                    .Help("Watchdog renewals of leases, by result (ok, or the error)")
                    .Register(registry)),
      lost_(prometheus::BuildCounter()
                .Name("redlock_leases_lost_total")
                .Help("Renewed leases lost, by reason")
                .Register(registry)),
      repairs_(prometheus::BuildCounter()
                   .Name("redlock_lease_repairs_total")
                   .Help("Mutex keys set again by a renewal on masters that had lost them (restarted empty)")
                   .Register(registry)
                   .Add({})),
      handoff_seconds_(prometheus::BuildHistogram()
                           .Name("redlock_handoff_duration_seconds")
                           .Help("For acquisitions woken by a release: from the release heard to the result")
                           .Register(registry)),
      hold_seconds_(prometheus::BuildHistogram()
                        .Name("redlock_hold_duration_seconds")
                        .Help("Holds that ended, from the acquisition's result to the end, by lock kind and how "
                              "they ended (released, dropped, or the lost lease's reason)")
                        .Register(registry)),
      held_(prometheus::BuildGauge()
                .Name("redlock_locks_held")
                .Help("Holds begun and not yet ended, by lock kind (a re-entry is not another hold)")
                .Register(registry)) {
  for (auto& uri : nodes) node_labels_.push_back(host_port(uri));
  for (auto kind : every_kind) {
    auto i = static_cast<std::size_t>(kind);
    if (held_by_kind_.size() <= i) held_by_kind_.resize(i + 1);
    held_by_kind_[i] = &held_.Add({{"kind", std::string(to_string(kind))}});
  }
}

std::string prometheus_observer::node_label(std::size_t node) const {
  return node < node_labels_.size() ? node_labels_[node] : std::to_string(node);
}

Histogram& prometheus_observer::node_latency(std::size_t node, std::string_view operation) {
  std::lock_guard lock(mutex_);
  if (latency_by_node_.size() <= node) latency_by_node_.resize(node + 1);
  for (auto& entry : latency_by_node_[node])
    if (entry.operation == operation) return *entry.histogram;
  auto& h = node_seconds_.Add({{"node", node_label(node)}, {"operation", std::string(operation)}}, round_buckets());
  latency_by_node_[node].push_back({std::string(operation), &h});
  return h;
}

void prometheus_observer::on_node_reply(std::size_t node, std::string_view operation,
                                        std::chrono::microseconds latency, const boost::system::error_code& error) {
  node_latency(node, operation).Observe(seconds(latency));
  if (error) node_errors_.Add({{"node", node_label(node)}, {"error", outcome_label(error)}}).Increment();
}

void prometheus_observer::on_acquire_attempt(std::string_view, unsigned) { attempts_.Increment(); }

void prometheus_observer::on_acquire_result(const acquire_outcome& outcome) {
  std::string kind(to_string(outcome.kind));
  std::string result = outcome.error ? "failed" : "acquired";
  acquisitions_.Add({{"kind", kind}, {"outcome", outcome_label(outcome.error)}}).Increment();
  acquire_seconds_.Add({{"kind", kind}, {"result", result}}, wait_buckets()).Observe(seconds(outcome.took));
  static const Histogram::BucketBoundaries rounds{1, 2, 3, 5, 10, 20, 50, 100};
  acquire_rounds_.Add({{"kind", kind}, {"result", result}}, rounds).Observe(outcome.attempts);
  if (outcome.since_release && !outcome.error)
    handoff_seconds_.Add({{"kind", kind}}, wait_buckets()).Observe(seconds(*outcome.since_release));
}

void prometheus_observer::on_renewal(std::string_view, const boost::system::error_code& error) {
  renewals_.Add({{"result", error ? outcome_label(error) : std::string("ok")}}).Increment();
}

void prometheus_observer::on_lease_repaired(std::string_view, std::size_t masters) {
  repairs_.Increment(static_cast<double>(masters));
}

void prometheus_observer::on_lease_lost(std::string_view, lost_reason why) {
  lost_.Add({{"reason", std::string(to_string(why))}}).Increment();
}

void prometheus_observer::on_hold_begin(std::string_view, lock_kind kind) {
  held_by_kind_.at(static_cast<std::size_t>(kind))->Increment();
}

void prometheus_observer::on_hold_end(const hold_outcome& outcome) {
  held_by_kind_.at(static_cast<std::size_t>(outcome.kind))->Decrement();
  hold_seconds_
      .Add({{"kind", std::string(to_string(outcome.kind))}, {"ended", std::string(ended_word(outcome))}},
           hold_buckets())
      .Observe(seconds(outcome.held_for));
}

}  // namespace redlock
