// SPDX-License-Identifier: Apache-2.0
// Storage side of fencing, for a Redis-backed store: a write is applied only
// if its token is >= the highest token already seen for that resource,
// atomically (lua/fenced_write.lua). A paused ex-holder's late write gets
// errc::stale_token and changes nothing. For SQL and object stores see
// docs/fencing.md.
#pragma once

#include <redlock/export.hpp>

#include <redlock/error.hpp>
#include <redlock/options.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace redlock {

namespace detail {
class store_impl;
}

/// How a fenced_store talks to its storage server.
struct fenced_store_options {
  /// Bounds each write (and the connect before it).
  milliseconds timeout{1000};
  /// rediss:// only: the CA bundle to verify the server certificate against
  /// (empty: the system trust store); and whether to verify at all.
  std::string tls_ca_file{};
  bool tls_verify = true;
};

class REDLOCK_EXPORT fenced_store {
 public:
  using done_signature = void(boost::system::error_code);

  /// `uri`: redis://[user:password@]host:port[/db], or rediss:// for TLS, of
  /// the storage server. Throws redlock::error on a bad URI or a timeout
  /// <= 0. Connects lazily, at the first write.
  fenced_store(boost::asio::any_io_executor executor, const std::string& uri, const fenced_store_options& options);
  /// The same with default options but for `timeout`.
  fenced_store(boost::asio::any_io_executor executor, const std::string& uri,
               milliseconds timeout = milliseconds(1000));
  ~fenced_store();
  fenced_store(const fenced_store&) = delete;
  fenced_store& operator=(const fenced_store&) = delete;

  /// Sets `key` to `value` if `token` >= the highest token seen for
  /// `resource` (kept at key "{resource}:fence:seen"), and records `token`.
  template <typename Token = boost::asio::deferred_t>
  auto async_write(std::string resource, std::uint64_t token, std::string key, std::string value, Token&& t = boost::asio::deferred_t{}) {
    return boost::asio::async_initiate<Token, done_signature>(
        [this](auto handler, std::string r, std::uint64_t tok, std::string k, std::string v) {
          start_write(std::move(r), tok, std::move(k), std::move(v), std::move(handler));
        },
        t, std::move(resource), token, std::move(key), std::move(value));
  }

  /// Blocking form, for callers that are not on the executor's thread (for
  /// example with redlock::client's executor). Throws redlock::error.
  void write(const std::string& resource, std::uint64_t token, const std::string& key, const std::string& value);
  /// The same, reporting failure (errc::stale_token among others) through `ec`.
  void write(const std::string& resource, std::uint64_t token, const std::string& key, const std::string& value,
             boost::system::error_code& ec);

  /// Key holding the highest token seen for `resource`.
  static std::string seen_key(const std::string& resource);

 private:
  void start_write(std::string resource, std::uint64_t token, std::string key, std::string value,
                   boost::asio::any_completion_handler<done_signature> handler);
  std::shared_ptr<detail::store_impl> impl_;
};

}  // namespace redlock
