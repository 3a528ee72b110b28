// SPDX-License-Identifier: Apache-2.0
#include "resp.hpp"
#include "reply_pool.hpp"

#include <redlock/error.hpp>

#include <utility>
#include <vector>

namespace redlock::detail {

void append_command(std::string& out, const std::string_view* argv, std::size_t argc) {
  constexpr std::size_t inline_args = 16;
  const char* ptrs_small[inline_args];
  std::size_t lens_small[inline_args];
  std::vector<const char*> ptrs_big;
  std::vector<std::size_t> lens_big;
  const char** ptrs = ptrs_small;
  std::size_t* lens = lens_small;
  if (argc > inline_args) {
    ptrs_big.resize(argc);
    lens_big.resize(argc);
    ptrs = ptrs_big.data();
    lens = lens_big.data();
  }
  for (std::size_t i = 0; i < argc; ++i) {
    ptrs[i] = argv[i].data();
    lens[i] = argv[i].size();
  }
  // The sds variant formats lengths with hiredis's own sdscatfmt; the plain
  // one goes through vfprintf, several times slower on this hot path.
  sds encoded = nullptr;
  int n = redisFormatSdsCommandArgv(&encoded, static_cast<int>(argc), ptrs, lens);
  if (n < 0) throw std::bad_alloc();
  out.append(encoded, static_cast<std::size_t>(n));
  redisFreeSdsCommand(encoded);
}

void append_command(std::string& out, std::initializer_list<std::string_view> argv) {
  append_command(out, argv.begin(), argv.size());
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
  if (m.find("PERMITS") != m.npos) return errc::permits_mismatch;  // semaphore_acquire.lua
  if (m.find("OOM") != m.npos) return errc::out_of_memory;
  return errc::server_error;
}

}  // namespace redlock::detail
