// SPDX-License-Identifier: Apache-2.0
// The one TLS client context builder (rediss:// masters, fenced_store).
#include "connection_config.hpp"

#include <redlock/error.hpp>

namespace redlock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

std::unique_ptr<asio::ssl::context> make_tls_context(const connection_config& options) {
  auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  error_code ec;
  if (options.tls_ca_file.empty())
    context->set_default_verify_paths(ec);
  else
    context->load_verify_file(options.tls_ca_file, ec);
  if (ec) {
    auto what = options.tls_ca_file.empty() ? std::string("the system's TLS trust store")
                                            : "TLS CA file '" + options.tls_ca_file + "'";
    throw error(errc::bad_option, what + " cannot be loaded: " + ec.message());
  }
  return context;
}

}  // namespace redlock::detail
