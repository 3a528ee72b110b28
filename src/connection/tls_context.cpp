// SPDX-License-Identifier: Apache-2.0
// The one TLS client context builder (rediss:// masters, fenced_store).
#include "connection_config.hpp"

#include <redlock/error.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace redlock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

[[noreturn]] void refuse(const std::string& what, const std::string& why) {
  throw error(errc::bad_option, what + " " + why);
}

// OpenSSL reports a missing or unreadable file as a bare "system library"
// error: say which, in the words of errno, before it is asked.
void require_readable(const std::string& what, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) refuse(what, "cannot be read: " + std::string(std::strerror(errno)));
  std::fclose(f);
}

void load_client_certificate(asio::ssl::context& context, const connection_config& options) {
  // The pair is checked with the other options (check_client_options); a
  // fenced_store's is checked here.
  if (options.tls_cert_file.empty() != options.tls_key_file.empty())
    throw error(errc::bad_option, "a TLS client certificate needs both a certificate file and a key file");
  auto cert = "TLS client certificate file '" + options.tls_cert_file + "'";
  auto key = "TLS client key file '" + options.tls_key_file + "'";
  require_readable(cert, options.tls_cert_file);
  require_readable(key, options.tls_key_file);
  error_code ec;
  context.use_certificate_chain_file(options.tls_cert_file, ec);
  if (ec) refuse(cert, "cannot be loaded (expected PEM): " + ec.message());
  // An encrypted key would have OpenSSL prompt on the terminal for its
  // passphrase: an empty one makes it fail instead.
  context.set_password_callback([](std::size_t, asio::ssl::context::password_purpose) { return std::string(); });
  context.use_private_key_file(options.tls_key_file, asio::ssl::context::pem, ec);
  auto mismatch = [&] { refuse(key, "does not fit the certificate in '" + options.tls_cert_file + "'"); };
  if (ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) mismatch();
  if (ec) refuse(key, "cannot be loaded (expected PEM, not encrypted): " + ec.message());
  // A key of another type than the certificate's loads without complaint.
  if (SSL_CTX_check_private_key(context.native_handle()) != 1) {
    ERR_clear_error();
    mismatch();
  }
}

}  // namespace

std::unique_ptr<asio::ssl::context> make_tls_context(const connection_config& options) {
  auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  error_code ec;
  if (options.tls_ca_file.empty()) {
    context->set_default_verify_paths(ec);
    if (ec) refuse("the system's TLS trust store", "cannot be loaded: " + ec.message());
  } else {
    auto ca = "TLS CA file '" + options.tls_ca_file + "'";
    require_readable(ca, options.tls_ca_file);
    context->load_verify_file(options.tls_ca_file, ec);
    if (ec) refuse(ca, "cannot be loaded: " + ec.message());
  }
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) load_client_certificate(*context, options);
  return context;
}

}  // namespace redlock::detail
