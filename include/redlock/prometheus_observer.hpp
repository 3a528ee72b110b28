// SPDX-License-Identifier: Apache-2.0
// redlock::prometheus_observer (CMake target redlock::prometheus, built when
// prometheus-cpp is installed): the client's observer hooks as Prometheus
// counters and histograms, registered in a prometheus::Registry you expose
// (prometheus::Exposer, or your own HTTP endpoint). The metrics are listed
// in docs/user-guide.md ("Prometheus metrics").
#pragma once

#include <redlock/observer.hpp>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <mutex>
#include <string>
#include <vector>

namespace redlock {

/// Give it to client_options::observer; one may serve several clients of
/// the same masters. Thread-safe (the hooks take a short lock to find a
/// metric the first time a label combination is seen).
class REDLOCK_EXPORT prometheus_observer : public observer {
 public:
  /// Registers the redlock_* metric families in `registry`, which must
  /// outlive this observer (which the clients' lock handles keep: a hold
  /// dropped unreleased is counted when its last handle goes). `nodes`: the client's node URIs, in the order of
  /// client_options::nodes; they label the per-master metrics as host:port
  /// (users and passwords never reach a label). Empty: labelled by index.
  explicit prometheus_observer(prometheus::Registry& registry, const std::vector<std::string>& nodes = {});

  void on_node_reply(std::size_t node, std::string_view operation, std::chrono::microseconds latency,
                     const boost::system::error_code& error) override;
  void on_acquire_attempt(std::string_view name, unsigned attempt) override;
  void on_acquire_result(const acquire_outcome& outcome) override;
  void on_renewal(std::string_view name, const boost::system::error_code& error) override;
  void on_lease_lost(std::string_view name, lost_reason why) override;
  void on_lease_repaired(std::string_view name, std::size_t masters) override;
  void on_hold_begin(std::string_view name, lock_kind kind) override;
  void on_hold_end(const hold_outcome& outcome) override;

 private:
  std::string node_label(std::size_t node) const;
  prometheus::Histogram& node_latency(std::size_t node, std::string_view operation);

  std::vector<std::string> node_labels_;
  prometheus::Family<prometheus::Counter>& acquisitions_;
  prometheus::Family<prometheus::Histogram>& acquire_seconds_;
  prometheus::Family<prometheus::Histogram>& acquire_rounds_;
  prometheus::Counter& attempts_;
  prometheus::Family<prometheus::Histogram>& node_seconds_;
  prometheus::Family<prometheus::Counter>& node_errors_;
  prometheus::Family<prometheus::Counter>& renewals_;
  prometheus::Family<prometheus::Counter>& lost_;
  prometheus::Counter& repairs_;
  prometheus::Family<prometheus::Histogram>& handoff_seconds_;
  prometheus::Family<prometheus::Histogram>& hold_seconds_;
  prometheus::Family<prometheus::Gauge>& held_;
  std::vector<prometheus::Gauge*> held_by_kind_;  // indexed by lock_kind: every kind shows, 0 until held

  // Per master: the latency histogram of each operation seen so far (a
  // handful), so the hot path does not build a label map per reply.
  struct operation_latency {
    std::string operation;
    prometheus::Histogram* histogram;
  };
  std::mutex mutex_;
  std::vector<std::vector<operation_latency>> latency_by_node_;
};

}  // namespace redlock
