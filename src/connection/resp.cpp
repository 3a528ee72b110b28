// SPDX-License-Identifier: Apache-2.0
#include "resp.hpp"
#include "reply_pool.hpp"

#include <redlock/error.hpp>

#include <charconv>
#include <utility>
#include <vector>

namespace redlock::detail {

namespace {
std::size_t decimal_digits(std::size_t n) noexcept {
  std::size_t digits = 1;
  while (n >= 10) n /= 10, ++digits;
  return digits;
}
}  // namespace

std::size_t array_header_size(std::size_t count) noexcept { return 1 + decimal_digits(count) + 2; }
std::size_t bulk_size(std::size_t length) noexcept { return 1 + decimal_digits(length) + 2 + length + 2; }

std::size_t bulks_size(word_list words) noexcept {
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < words.size(); ++i) bytes += bulk_size(words[i].size());
  return bytes;
}

void reply_deleter::operator()(redisReply* r) const noexcept { reply_pool::give_back(r); }

reply_reader::reply_reader(std::size_t max_reply_bytes, std::size_t max_elements)
    : max_reply_bytes_(max_reply_bytes), pool_(new reply_pool(max_elements)) {
  try {
    reset();
  } catch (...) {
    pool_->release();
    throw;
  }
}

reply_reader::~reply_reader() {
  if (reader_) redisReaderFree(reader_);  // gives a partial reply back to the pool
  pool_->release();
}

void reply_reader::reset() {
  if (reader_) redisReaderFree(std::exchange(reader_, nullptr));
  reader_ = redisReaderCreateWithFunctions(reply_pool::functions());
  if (!reader_) throw std::bad_alloc();
  reader_->privdata = pool_;
}

void reply_reader::feed(const char* data, std::size_t n) { redisReaderFeed(reader_, data, n); }

reply_ptr reply_reader::next(boost::system::error_code& ec) {
  void* out = nullptr;
  if (redisReaderGetReply(reader_, &out) != REDIS_OK) {
    // A null from our array constructor surfaces as an OOM error in hiredis.
    ec = reader_->err == REDIS_ERR_OOM ? make_error_code(errc::reply_too_large) : make_error_code(errc::protocol_error);
    return nullptr;
  }
  if (!out && reader_->len - reader_->pos > max_reply_bytes_) {
    ec = make_error_code(errc::reply_too_large);
    return nullptr;
  }
  return reply_ptr(static_cast<redisReply*>(out));
}

boost::system::error_code classify_error_reply(std::string_view m) {
  if (m.starts_with("OOM")) return errc::out_of_memory;
  if (m.starts_with("READONLY")) return errc::read_only;
  if (m.starts_with("WRONGTYPE")) return errc::wrong_type;
  if (m.starts_with("NOAUTH") || m.starts_with("WRONGPASS") || m.starts_with("ERR AUTH") ||
      m.find("invalid password") != m.npos || m.find("sent AUTH") != m.npos)
    return errc::auth_failed;
  // Scripts that fail on the lock key's type report it from inside Lua.
  if (m.find("WRONGTYPE") != m.npos) return errc::wrong_type;
  // INCR of a fence counter that holds text: the only counters the scripts
  // bump on a key they do not own ({R}:fence), so someone else's data there.
  if (m.find("value is not an integer") != m.npos) return errc::wrong_type;
  if (m.find("PERMITS") != m.npos) return errc::permits_mismatch;  // semaphore_acquire.lua
  if (m.find("OOM") != m.npos) return errc::out_of_memory;
  return errc::server_error;
}

}  // namespace redlock::detail
