// SPDX-License-Identifier: Apache-2.0
// Counting a release's announcements (pure; unit-tested). Every master that
// deletes the key of a mutex or reentrant lock publishes the release's id on
// the lock's channel; a waiter retries once the release is known on a quorum
// (retrying earlier only fails), and only once per release, however many
// copies arrive.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace redlock::detail {

/// A mutex release names one waiter on its client's channel:
/// '=<waiter id> <released token>' (mutex_release.lua). The token when
/// `payload` names `waiter`, else empty.
inline std::string_view token_naming(std::string_view payload, std::string_view waiter) {
  bool names_it = payload.size() > waiter.size() + 1 && payload[0] == '=' &&
                  payload.substr(1, waiter.size()) == waiter && payload[waiter.size() + 1] == ' ';
  return names_it ? payload.substr(waiter.size() + 2) : std::string_view();
}

class release_news {
 public:
  explicit release_news(std::size_t quorum) : quorum_(quorum) {}

  /// A master announced release `id`: true for the copy that makes it known
  /// on a quorum, false for the copies before and after it.
  bool heard(std::string_view id) {
    entry* news = nullptr;
    for (auto& r : recent_)
      if (r.id == id) news = &r;
    if (!news) {
      // A few releases can be in flight at once (copies interleave): the
      // oldest is forgotten first.
      news = &recent_[next_slot_++ % recent_.size()];
      *news = {std::string(id), 0};
    }
    return ++news->copies == quorum_;
  }

 private:
  struct entry {
    std::string id;
    std::size_t copies = 0;  // masters that announced it
  };
  std::size_t quorum_;
  std::array<entry, 4> recent_;
  std::size_t next_slot_ = 0;
};

}  // namespace redlock::detail
