// SPDX-License-Identifier: Apache-2.0
// How `redlock doctor` reads a master: through the library's own connections
// (so TLS, AUTH and SELECT behave as in a client), one request at a time on a
// private io_context; and the small readers of what comes back (INFO text,
// numbers, percentiles).
#pragma once

#include "locks/client_impl.hpp"

#include <redlock/options.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

/// A reply copied out of hiredis's (which is freed after the callback).
struct value {
  int type = REDIS_REPLY_NIL;
  std::string text;
  long long integer = 0;
  std::vector<value> elements;
  bool is_error() const { return type == REDIS_REPLY_ERROR; }
};

struct reply {
  boost::system::error_code error;  // no reply at all (unreachable, timeout)
  value v;
  std::chrono::microseconds round_trip{0};
};

/// The client's connections, driven one request at a time from this thread.
class prober {
 public:
  /// Throws redlock::error when the options are invalid.
  explicit prober(const client_options& options);
  ~prober();
  prober(const prober&) = delete;
  prober& operator=(const prober&) = delete;

  std::size_t size() const { return impl_->masters->size(); }
  const connection& node(std::size_t i) const { return (*impl_->masters)[i]; }
  const client_impl& client() const { return *impl_; }

  /// Sends `argv` to master `node` and waits for its reply (or failure).
  reply call(std::size_t node, const std::vector<std::string>& argv);

 private:
  boost::asio::io_context io_;
  std::shared_ptr<client_impl> impl_;
  std::chrono::milliseconds request_timeout_{};
};

/// INFO's "key:value" lines (sections and comments skipped).
std::map<std::string, std::string> parse_info(const std::string& text);
/// The value of `key`, or "" when absent.
std::string value_of(const std::map<std::string, std::string>& info, const std::string& key);
/// The leading integer of `text` (0 if none).
long long number_of(std::string_view text);
/// "12.3 ms".
std::string ms_text(std::chrono::microseconds d);
/// Nearest-rank percentile of sorted samples.
std::chrono::microseconds percentile(const std::vector<std::chrono::microseconds>& sorted, double p);

}  // namespace redlock::detail
