// SPDX-License-Identifier: Apache-2.0
// RESP encoding and decoding through hiredis (encoder and redisReader only;
// all sockets are Asio's), and the mapping of error replies to our codes.
#pragma once

#include <hiredis/hiredis.h>

#include <boost/container/small_vector.hpp>
#include <boost/system/error_code.hpp>

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::detail {

class reply_pool;

/// One word (bulk string) of a command, viewed, never copied: a string, or
/// up to four pieces written one after another, so that a command can name
/// a companion key `{key}suffix` (scripts/keys.hpp) without building it.
/// A word made from a temporary string is only good within the expression
/// that encodes it (a braced list passed to a round): never keep one made
/// from a function's returned std::string in a variable.
class word {
 public:
  word() noexcept = default;
  word(std::string_view s) noexcept : pieces_{s}, count_(1) {}
  word(const std::string& s) noexcept : word(std::string_view(s)) {}
  word(const char* s) noexcept : word(std::string_view(s)) {}
  word(std::string_view a, std::string_view b, std::string_view c, std::string_view d) noexcept
      : pieces_{a, b, c, d}, count_(4) {}

  std::size_t size() const noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < count_; ++i) n += pieces_[i].size();
    return n;
  }
  template <typename Out>
  void append_to(Out& out) const {
    for (std::size_t i = 0; i < count_; ++i) out.append(pieces_[i].data(), pieces_[i].size());
  }
  std::string str() const {
    std::string out;
    append_to(out);
    return out;
  }

 private:
  std::array<std::string_view, 4> pieces_{};
  std::uint8_t count_ = 0;
};

/// The words of a command (or its keys, or its arguments), viewed for the
/// one call that encodes them: a braced list of words, words in an array,
/// or strings in a vector. Never stored: what it views may be temporaries.
class word_list {
 public:
  word_list(std::initializer_list<word> words) noexcept : words_(words), size_(words.size()) {}
  word_list(std::span<const word> words) noexcept : words_(words), size_(words.size()) {}
  word_list(const std::vector<std::string>& strings) noexcept : strings_(strings.data()), size_(strings.size()) {}
  word_list(const std::vector<std::string_view>& views) noexcept : views_(views.data()), size_(views.size()) {}

  std::size_t size() const noexcept { return size_; }
  word operator[](std::size_t i) const noexcept {
    return strings_ ? word(strings_[i]) : views_ ? word(views_[i]) : words_[i];
  }

 private:
  std::span<const word> words_;
  const std::string* strings_ = nullptr;
  const std::string_view* views_ = nullptr;
  std::size_t size_;
};

/// RESP encoding of a command, an array of bulk strings, written by us
/// rather than hiredis's formatter: that one allocates a buffer of its own
/// per command, and requests are the protocol's simple half (replies are
/// parsed by hiredis's redisReader below). The unit tests check every
/// encoding against hiredis's.
/// Written to a std::string, or to a command_buffer.
std::size_t array_header_size(std::size_t count) noexcept;
std::size_t bulk_size(std::size_t length) noexcept;
template <typename Out>
void append_array_header(Out& out, std::size_t count);
template <typename Out>
void append_bulk(Out& out, const word& w);
/// The bytes `words` take as bulk strings, and appending them so.
std::size_t bulks_size(word_list words) noexcept;
template <typename Out>
void append_bulks(Out& out, word_list words);

/// Appends the RESP encoding of one command to `out` (growing it once).
template <typename Out>
void append_command(Out& out, word_list argv);

/// An encoded command kept inside its owner up to `Inline` bytes: a quorum
/// round's (as a std::string, it was an allocation per round).
template <std::size_t Inline>
class command_buffer {
 public:
  void append(const char* p, std::size_t n) { bytes_.insert(bytes_.end(), p, p + n); }
  void reserve(std::size_t n) { bytes_.reserve(n); }
  std::size_t size() const noexcept { return bytes_.size(); }
  std::string_view view() const noexcept { return {bytes_.data(), bytes_.size()}; }

 private:
  boost::container::small_vector<char, Inline> bytes_;
};

namespace resp_detail {
inline void append_length_line(auto& out, char type, std::size_t n) {
  std::array<char, 24> line;
  line[0] = type;
  auto end = std::to_chars(line.data() + 1, line.data() + line.size() - 2, n).ptr;
  *end++ = '\r';
  *end++ = '\n';
  out.append(line.data(), static_cast<std::size_t>(end - line.data()));
}
}  // namespace resp_detail

template <typename Out>
void append_array_header(Out& out, std::size_t count) {
  resp_detail::append_length_line(out, '*', count);
}

template <typename Out>
void append_bulk(Out& out, const word& w) {
  resp_detail::append_length_line(out, '$', w.size());
  w.append_to(out);
  out.append("\r\n", 2);
}

template <typename Out>
void append_bulks(Out& out, word_list words) {
  for (std::size_t i = 0; i < words.size(); ++i) append_bulk(out, words[i]);
}

template <typename Out>
void append_command(Out& out, word_list argv) {
  out.reserve(out.size() + array_header_size(argv.size()) + bulks_size(argv));
  append_array_header(out, argv.size());
  append_bulks(out, argv);
}

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
/// A reply as text: an integer in decimal, a string or status as it is, anything else empty.
inline std::string reply_string(const redisReply& r) {
  return r.type == REDIS_REPLY_INTEGER ? std::to_string(r.integer) : std::string(r.str ? r.str : "", r.str ? r.len : 0);
}
inline bool is_error(const redisReply& r) { return r.type == REDIS_REPLY_ERROR; }
inline bool is_noscript(const redisReply& r) { return is_error(r) && reply_text(r).starts_with("NOSCRIPT"); }

}  // namespace redlock::detail
