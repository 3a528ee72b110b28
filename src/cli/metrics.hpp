// SPDX-License-Identifier: Apache-2.0
// `redlock run --metrics-port [HOST:]PORT`: the client's metrics
// (redlock::prometheus_observer) served over HTTP at /metrics while the
// command runs. Needs a build with redlock::prometheus.
#pragma once

#include <redlock/observer.hpp>

#include <memory>
#include <string>
#include <vector>

namespace redlock::cli {

/// Serves until destroyed; give `observer` to the client.
class metrics_endpoint {
 public:
  virtual ~metrics_endpoint() = default;
  std::shared_ptr<redlock::observer> observer;
};

/// Starts the endpoint on `listen` ("9464" for every interface, or
/// "127.0.0.1:9464"); usage error when it cannot (bad port, in use, or no
/// Prometheus support in this build).
std::unique_ptr<metrics_endpoint> serve_metrics(const std::string& listen, const std::vector<std::string>& nodes);

}  // namespace redlock::cli
