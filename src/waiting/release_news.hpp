// SPDX-License-Identifier: Apache-2.0
// Counting a release's announcements (pure; unit-tested). Every master that
// deletes the key of a reentrant lock publishes the release's id on the
// lock's channel, and every waiter retries once the release is known on a
// quorum (retrying earlier only fails). A mutex release names one waiter,
// which retries one copy short of a quorum (named, below). Either way once
// per release (or twice), however many copies arrive.
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
  bool heard(std::string_view id) { return copies_of(id) == quorum_; }

  /// A master's release `id` named us: true for the copy that makes it
  /// wake_copies(quorum), and again for the quorum-th copy.
  bool named(std::string_view id) {
    auto n = copies_of(id);
    return n == wake_copies(quorum_) || n == quorum_;
  }

  /// How many of one release's copies wake the waiter they name: one short
  /// of a quorum (docs/algorithm.md, section 10). A mutex's wake-up goes to
  /// one waiter alone, so no herd follows an early retry. Retrying then
  /// overlaps our round with the tail of the release's: the master still to
  /// make it a quorum was sent the release before we heard of it, and most
  /// likely has run it when our request arrives. If it had not, the
  /// quorum-th copy retries again, at once after the clean-up. Measured
  /// (redlock-bench contended --quick, 2 cores, alternated with a build
  /// that waited for a quorum): hand-off p50 lower in most rounds, with 5
  /// masters and with 3. With 5, waking at the first copy cost 1.66-1.74
  /// quorum rounds per section against 1.30-1.34 (8 threads).
  static std::size_t wake_copies(std::size_t quorum) { return quorum > 1 ? quorum - 1 : 1; }

 private:
  std::size_t copies_of(std::string_view id) {
    entry* news = nullptr;
    for (auto& r : recent_)
      if (r.id == id) news = &r;
    if (!news) {
      // A few releases can be in flight at once (copies interleave): the
      // oldest is forgotten first.
      news = &recent_[next_slot_++ % recent_.size()];
      *news = {std::string(id), 0};
    }
    return ++news->copies;
  }

  struct entry {
    std::string id;
    std::size_t copies = 0;  // masters that announced it
  };
  std::size_t quorum_;
  std::array<entry, 4> recent_;
  std::size_t next_slot_ = 0;
};

}  // namespace redlock::detail
