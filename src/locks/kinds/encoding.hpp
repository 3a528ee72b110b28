// SPDX-License-Identifier: Apache-2.0
// What the files of the lock kinds share when they encode a round or read
// its replies, and each kind's table entry (listed in kinds.cpp).
#pragma once

#include "locks/kinds.hpp"
#include "scripts/script.hpp"

#include <boost/container/small_vector.hpp>

#include <array>
#include <cstdio>

namespace redlock::detail {

// The words of one call, on the stack for every size the hot paths use.
using call_words = boost::container::small_vector<word, 12>;

// `list`, and `last` after it when there is one (a holder key, a description).
inline call_words with_last(word_list list, const word* last) {
  call_words out;
  for (std::size_t i = 0; i < list.size(); ++i) out.push_back(list[i]);
  if (last) out.push_back(*last);
  return out;
}

// A waiter's score as the scripts take it: whole microseconds (on the
// stack: every acquisition formats it, few send it).
inline std::array<char, 32> score_text(double score) {
  std::array<char, 32> text;
  std::snprintf(text.data(), text.size(), "%.0f", score);
  return text;
}

// The acquire scripts' fencing argument: a round that only joins a mutex's
// line, a fenced one, or neither.
inline const char* fenced_word(const acquire_request& req) {
  return req.join_line_only ? "line" : req.fenced ? "1" : "0";
}

// Whom a release script publishes to (mutex_release.lua, reentrant_release.lua).
inline const char* publish_word(release_wake wake) {
  return wake == release_wake::first_waiter ? "1" : wake == release_wake::report_first ? "quiet" : "0";
}

/// A round of acquire script `s` for `req`: every acquire script takes the
/// holder key as its last, optional KEYS and the description as its last,
/// optional ARGV, both absent when the request has no description.
round_ptr described_acquire(const std::shared_ptr<client_impl>& client, const acquire_request& req, const script& s,
                            word_list script_keys, word_list args, classify_fn classify, quorum_round::decided_fn done);

/// 'OK' / counter = yes, nil = no: a grant of the mutex, reentrant and
/// read-write acquire scripts and of SET NX (mutex.cpp).
verdict classify_grant(const redisReply& r, node_outcome& out);

/// extend.lua on a hold of one key: a mutex's, or a reentrant or fair
/// owner's, which it tells apart by the key's type (mutex.cpp).
round_ptr one_key_extend(const std::shared_ptr<client_impl>& client, const lock_state& s, milliseconds ttl,
                         quorum_round::decided_fn done);

/// A holder's release of a mutex or of a semaphore's permit
/// (token_release_round, waking from lock_state::waiters_key) (mutex.cpp).
round_ptr release_token_hold(const std::shared_ptr<client_impl>& client, const lock_state& s, const release_terms& how,
                             quorum_round::decided_fn done);

/// mutex_release.lua: the release of a hold of one string key, a mutex's or
/// a semaphore permit's, waking from `waiters_key`'s wake list; `listed_as`
/// (mutex): the holder's own wake-list entry, taken down too
/// (lock_state::listed_as); `relist`: see release_terms (mutex.cpp).
round_ptr token_release_round(const std::shared_ptr<client_impl>& client, const std::string& key,
                              const std::string& token, release_wake wake, bool described,
                              const std::string& waiters_key, const std::string& listed_as,
                              const wake_list_entry* relist, quorum_round::decided_fn done);

}  // namespace redlock::detail
