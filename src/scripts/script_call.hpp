// SPDX-License-Identifier: Apache-2.0
// How a script is called on a master: EVALSHA, and once, after a NOSCRIPT
// reply (the master's script cache was flushed or it restarted), EVAL with
// the body. The one encoder every caller uses (quorum rounds, fenced_store):
// the call is encoded once, and the EVAL form is made from that encoding.
#pragma once

#include "connection/resp.hpp"
#include "script.hpp"

#include <array>
#include <charconv>
#include <string>
#include <string_view>

namespace redlock::detail {

/// One script call, encoded: `EVALSHA sha1 numkeys keys... args...`.
class script_call {
 public:
  script_call(const script& s, word_list keys, word_list args) : script_(&s) {
    std::array<char, 24> numkeys_text;
    auto numkeys = std::string_view(numkeys_text.data(),
                                    std::to_chars(numkeys_text.data(), numkeys_text.data() + numkeys_text.size(), keys.size()).ptr);
    const std::size_t words = 3 + keys.size() + args.size();
    evalsha_.reserve(array_header_size(words) + bulk_size(7) + bulk_size(s.sha1.size()) + bulk_size(numkeys.size()) +
                     bulks_size(keys) + bulks_size(args));
    append_array_header(evalsha_, words);
    header_end_ = evalsha_.size();
    append_bulk(evalsha_, "EVALSHA");
    append_bulk(evalsha_, s.sha1);
    words_at_ = evalsha_.size();
    append_bulk(evalsha_, numkeys);
    append_bulks(evalsha_, keys);
    append_bulks(evalsha_, args);
  }

  const script& called() const noexcept { return *script_; }
  std::string_view evalsha() const noexcept { return evalsha_.view(); }
  /// The same call with the script's body: the same words after the SHA1.
  std::string eval() const {
    std::string out;
    std::string_view after_sha = evalsha().substr(words_at_);
    out.reserve(header_end_ + bulk_size(4) + bulk_size(script_->body.size()) + after_sha.size());
    out.append(evalsha().substr(0, header_end_));
    append_bulk(out, "EVAL");
    append_bulk(out, script_->body);
    out.append(after_sha);
    return out;
  }

 private:
  const script* script_;
  // Inline: a round's call to a lock script on short names fits (a
  // release of the mutex names five keys and words, about 300 bytes).
  command_buffer<384> evalsha_;
  std::size_t header_end_ = 0;  // after the array header ('*<words>\r\n')
  std::size_t words_at_ = 0;    // where numkeys starts
};

}  // namespace redlock::detail
