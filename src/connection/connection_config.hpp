// SPDX-License-Identifier: Apache-2.0
// What one connection needs to know, sliced from client_options: the
// connection layer depends on nothing above it, and a single-connection user
// (fenced_store, the doctor's probes) builds one without a whole client.
#pragma once

#include <redlock/options.hpp>

#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace redlock::detail {

struct connection_config {
  std::chrono::milliseconds node_timeout{50};
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds reconnect_min{20};
  std::chrono::milliseconds reconnect_max{2000};
  std::chrono::milliseconds stall_timeout{5000};
  std::size_t max_reply_bytes = 1 << 20;
  std::size_t max_reply_elements = 1 << 16;
  std::size_t max_pending_per_node = 16384;
  bool tls_verify = true;
  std::string tls_ca_file{};
  std::string tls_cert_file{};  // with tls_key_file: the client certificate (mutual TLS)
  std::string tls_key_file{};
  std::shared_ptr<redlock::observer> observer{};  // reconnects and failures are reported to it

  static connection_config of(const client_options& o) {
    return {o.node_timeout,       o.connect_timeout,      o.reconnect_min,
            o.reconnect_max,      o.stall_timeout,        o.max_reply_bytes,
            o.max_reply_elements, o.max_pending_per_node, o.tls_verify,
            o.tls_ca_file,        o.tls_cert_file,        o.tls_key_file,
            o.observer};
  }
};

/// The one TLS client context builder: verifies against `tls_ca_file`, or the
/// system trust store when it is empty, and presents the client certificate
/// when one is given. Throws redlock::error(bad_option) naming the file when
/// one cannot be read or loaded, or the key does not fit the certificate.
std::unique_ptr<boost::asio::ssl::context> make_tls_context(const connection_config& config);

}  // namespace redlock::detail
