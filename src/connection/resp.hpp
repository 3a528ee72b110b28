// SPDX-License-Identifier: Apache-2.0
// RESP encoding and decoding through hiredis (encoder and redisReader only;
// all sockets are Asio's), and the mapping of error replies to our codes.
#pragma once

#include <hiredis/hiredis.h>

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace redlock::detail {

class reply_pool;

/// Appends the RESP encoding of one command to `out`.
void append_command(std::string& out, std::initializer_list<std::string_view> argv);
void append_command(std::string& out, const std::string_view* argv, std::size_t argc);

/// Replies from reply_reader come from its pool (reply_pool.hpp).
struct reply_deleter {
  void operator()(redisReply* r) const noexcept;
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

/// Incremental reply parser with caps on the bytes buffered for one reply and
/// on the element count of any array in it.
class reply_reader {
 public:
  reply_reader(std::size_t max_reply_bytes, std::size_t max_elements);
  ~reply_reader();
  reply_reader(const reply_reader&) = delete;
  reply_reader& operator=(const reply_reader&) = delete;

  void feed(const char* data, std::size_t n);
  /// Next complete reply, or null when more bytes are needed. On a protocol
  /// error or a cap exceeded returns null and sets `ec` (the stream is then
  /// unusable: close the connection).
  reply_ptr next(boost::system::error_code& ec);
  void reset();

 private:
  redisReader* reader_ = nullptr;
  std::size_t max_reply_bytes_;
  reply_pool* pool_;  // outlives us while a reply is out (reply_pool::release)
};

/// Maps an error reply ("OOM ...", "READONLY ...", ...) to an error code.
boost::system::error_code classify_error_reply(std::string_view message);

inline std::string_view reply_text(const redisReply& r) { return {r.str, r.len}; }
inline bool is_error(const redisReply& r) { return r.type == REDIS_REPLY_ERROR; }
inline bool is_noscript(const redisReply& r) { return is_error(r) && reply_text(r).starts_with("NOSCRIPT"); }

}  // namespace redlock::detail
