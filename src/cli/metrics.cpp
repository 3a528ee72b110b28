// SPDX-License-Identifier: Apache-2.0
#include "metrics.hpp"

#include "args.hpp"

#include <charconv>

#ifdef REDLOCK_CLI_PROMETHEUS
#include <redlock/prometheus_observer.hpp>

#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#endif

namespace redlock::cli {

namespace {

// "PORT" or "HOST:PORT" as civetweb's listening address, or a usage error.
std::string listening_address(const std::string& listen) {
  auto colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? "0.0.0.0" : listen.substr(0, colon);
  std::string port = colon == std::string::npos ? listen : listen.substr(colon + 1);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (host.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
    usage("--metrics-port '" + listen + "' is not a port (e.g. 9464 or 127.0.0.1:9464)");
  return host + ":" + port;
}

#ifdef REDLOCK_CLI_PROMETHEUS
class prometheus_endpoint : public metrics_endpoint {
 public:
  prometheus_endpoint(const std::string& address, const std::vector<std::string>& nodes)
      : registry_(std::make_shared<prometheus::Registry>()), exposer_(address, 1) {
    observer = std::make_shared<prometheus_observer>(*registry_, nodes);
    exposer_.RegisterCollectable(registry_);
  }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Exposer exposer_;
};
#endif

}  // namespace

std::unique_ptr<metrics_endpoint> serve_metrics(const std::string& listen, const std::vector<std::string>& nodes) {
  auto address = listening_address(listen);
#ifdef REDLOCK_CLI_PROMETHEUS
  try {
    return std::make_unique<prometheus_endpoint>(address, nodes);
  } catch (const std::exception& e) {
    usage("--metrics-port '" + listen + "': cannot listen there (" + e.what() + ")");
  }
#else
  (void)address;
  (void)nodes;
  usage("--metrics-port: this redlock was built without Prometheus support (install prometheus-cpp-dev and rebuild)");
#endif
}

}  // namespace redlock::cli
