// SPDX-License-Identifier: Apache-2.0
// What a client remembers of its own releases, for the wake-ups they send,
// list or hold back (docs/algorithm.md, sections 10 and 12). Pure: every
// decision takes the time it is made at, and the ledger says what to send
// without sending it; the client (locks/wake_sends.cpp) asks it at every
// step and sends what it says. Unit-tested in test/unit/test_wake_ledger.cpp.
// The wake lists decide only whom a release wakes, never who holds a lock:
// nothing here bears on safety; a wake-up lost here costs a waiter at most
// its retry delay.
//
// Two clocks: the client's (`now`: a release round's decision and send
// time, as rounds measure them) and the real steady clock (`real_now`:
// what the client's timers run on).
#pragma once

#include <redlock/clock.hpp>
#include <redlock/options.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

/// How long a mutex waiter's entry on the wake list lives after each of its
/// attempts: twice the longest time between two of its attempts as a master
/// sees them, so a live waiter never lapses between its own attempts and a
/// dead one stops being woken soon after (docs/algorithm.md, section 10).
inline milliseconds wake_list_lapse(const acquire_options& o, milliseconds node_timeout) {
  return 2 * (2 * node_timeout + o.retry_delay + o.retry_jitter);
}

/// A wake-list entry a release writes behind the waiter it names.
struct wake_list_entry {
  std::string id;
  double score = 0;
  milliseconds lapse{0};
};

/// What the masters answered a release (mutex_release.lua), as far as whom
/// it wakes goes.
struct release_replies {
  std::size_t named = 0;     ///< masters that named a waiter (2), and listed us behind it if asked
  bool waiter_left = false;  ///< a quiet release: a master answered 3 (a live waiter heads its list)
  std::size_t unread = 0;    ///< masters whose answer the decision did not read (0: every master answered); they may name a waiter too
};

class wake_ledger {
 public:
  using real_time = std::chrono::steady_clock::time_point;

  /// An entry our own release listed us under, as the next acquisition of
  /// the lock takes it over.
  struct listing {
    wake_list_entry entry;
    steady_time sent_at;  // the release round's send time (client clock)
    /// Until when the entry surely outlives a retry: half its lapse after the
    /// release that wrote it was sent (as acquire_fsm counts its own rounds).
    steady_time listed_until() const { return sent_at + entry.lapse / 2; }
  };

  /// `nodes`: the client's masters; a release names a waiter on a quorum of them.
  wake_ledger(std::size_t nodes, std::size_t quorum, milliseconds node_timeout)
      : nodes_(nodes), quorum_(quorum), node_timeout_(node_timeout) {}

  // ---- mutex releases that named a waiter (section 10) --------------------

  /// Our release of `key` woke a waiter on a quorum (or named one, and the
  /// masters yet to answer may make it a quorum) less than one node timeout
  /// ago (the time the woken waiter has to get its request to the masters):
  /// asking for the lock again at once would only race it, so the next
  /// acquisition joins the line instead. A release that named no one since
  /// ends this.
  bool woke_waiter_just_now(const std::string& key, steady_time now) const;
  /// We asked for `key` again at once after such a release.
  void note_reasked(const std::string& key);
  /// Seen asking again at once after its last release of `key` that named a
  /// waiter: the next release lists this client behind the waiter it wakes.
  bool relists(const std::string& key) const;
  /// How long the entry such a release writes lives: the acquisition that
  /// claims it tries within two node timeouts of the release, and that try
  /// lists it for its own lapse.
  milliseconds relisting_lapse() const { return 4 * node_timeout_; }

  /// A listing no acquisition took, let go of: the client stops watching for
  /// a release naming it (`watch`, 0: not watched) and takes `id` down.
  struct unclaimed_listing {
    std::string key;
    std::string id;
    std::uint64_t watch = 0;
  };
  struct release_noted {
    std::vector<unclaimed_listing> take_down;  ///< the key's earlier listing, or one pushed out
    /// `listed` is kept for the next acquisition: watch for a release that
    /// names it first (listing_watched). Not kept: no one was named, or the
    /// client stops; take it down everywhere (masters that answered after
    /// the decision may have listed it).
    bool listing_kept = false;
    std::optional<real_time> sweep_at;  ///< arm the listing sweep for then
  };
  /// A mutex release of `key` by this client was decided; `listed`: the
  /// entry it asked the masters to list (after relists()), or null.
  release_noted note_release(const std::string& key, const release_replies& replies, const wake_list_entry* listed,
                             bool stopping, steady_time sent_at, steady_time now, real_time real_now);
  /// The kept listing of `key` is watched under `watch`.
  void listing_watched(const std::string& key, std::uint64_t watch);
  /// A release named entry `id` of `key` while no acquisition had claimed
  /// it: true when it is still the listing kept there, which is then spent
  /// (the client passes the wake-up on to whoever is next).
  bool listing_named(const std::string& key, const std::string& id);

  /// The listing of `key`, let go of for the acquisition starting now. The
  /// client stops watching for it; it waits under it unless it is `spent`
  /// (a release named it first), in which case it takes it down instead.
  struct claim {
    listing listed;
    std::uint64_t watch = 0;
    bool spent = false;
  };
  std::optional<claim> claim_listing(const std::string& key);

  struct sweep {
    std::vector<unclaimed_listing> take_down;  ///< unclaimed for a node timeout
    std::optional<real_time> next;             ///< arm the sweep again for then
  };
  /// The listing sweep fired.
  sweep sweep_listings(real_time real_now);
  /// Every unclaimed listing (the client shuts down).
  std::vector<unclaimed_listing> drop_listings();

  // ---- permit releases (section 12) ----------------------------------------

  /// A wake-up a quiet permit release held back, to send now (mutex_release.lua,
  /// 'pass', with the release's own token: to the waiter, the message that
  /// release would have sent).
  struct held_back_wake {
    std::string semaphore_key;
    unsigned permit = 0;
    std::string token;
    std::vector<std::uint32_t> nodes;
    bool must_reach = false;  ///< sent even while the client shuts down
  };

  /// We released a permit of `semaphore_key` and asked again at once: its
  /// next permit release there names no one (a waiter woken would only find
  /// the slot taken back) and holds the wake-up back.
  bool retakes_permits(const std::string& semaphore_key) const;
  struct permit_release_noted {
    std::vector<held_back_wake> send;  ///< earlier wake-ups this release ends the wait of
    std::optional<real_time> arm_at;   ///< arm the held-back wake-ups' timer for then
  };
  /// A permit release (slot `permit`, under `token`) by this client was
  /// decided; `quiet`: it named no one (its wake-up is held back for a tenth
  /// of a node timeout where a waiter may wait).
  permit_release_noted note_permit_release(const std::string& semaphore_key, unsigned permit, const std::string& token,
                                           bool quiet, const release_replies& replies, bool stopping,
                                           real_time real_now);
  /// We ask for a permit of `semaphore_key`: the slot just released, to try
  /// first, when the release was a moment ago. Its held-back wake-up then
  /// waits for that first attempt's decision (permit_retake_decided).
  std::optional<unsigned> note_permit_asked(const std::string& semaphore_key, real_time real_now);
  /// That first attempt was decided: won, its wake-up is dropped (its
  /// holder's release wakes the next); otherwise it is sent now (the slot
  /// may still be free).
  std::optional<held_back_wake> permit_retake_decided(const std::string& semaphore_key, bool won);
  struct due_wakes {
    std::vector<held_back_wake> send;
    std::optional<real_time> next;  ///< arm the timer again for then
  };
  /// The held-back wake-ups' timer fired.
  due_wakes wakes_due(real_time real_now);
  /// Every held-back wake-up (the client shuts down).
  std::vector<held_back_wake> take_held_back_wakes();

 private:
  // Our latest mutex releases that named a waiter, one per key.
  struct release_note {
    std::string key;
    steady_time at;      // decided (client clock)
    bool woke = false;   // named a waiter on a quorum, or may yet
    bool reasks = false; // and we asked again at once after the one before
    listing listed;      // the release's listing of us (id empty: none, or claimed)
    bool passed_on = false;  // named before claimed: the wake-up went on
    real_time listed_real_at{};
    std::uint64_t listed_watch = 0;
  };
  // Our latest permit release per semaphore.
  struct permit_note {
    std::string key;  // the semaphore's
    real_time at;     // decided
    bool retakes = false;  // asked again at once after a release
    bool asked = false;    // asked at once, that first attempt undecided
    unsigned permit = 0;
    std::string token;
    // A quiet release's wake-up, held back: the masters to send it to, and when.
    std::vector<std::uint32_t> held_back;
    real_time wake_at;
  };

  release_note* find_note(const std::string& key);
  const release_note* find_note(const std::string& key) const;
  std::optional<unclaimed_listing> drop_listing(release_note& note);
  permit_note* find_permit_note(const std::string& key);
  const permit_note* find_permit_note(const std::string& key) const;
  std::optional<held_back_wake> take_held_back(permit_note& note, bool must_reach = false);
  real_time::duration retake_window() const { return node_timeout_ / 10; }
  std::vector<std::uint32_t> all_nodes() const;

  std::size_t nodes_;
  std::size_t quorum_;
  milliseconds node_timeout_;
  std::deque<release_note> release_notes_;
  bool sweep_armed_ = false;
  std::deque<permit_note> permit_notes_;
  std::optional<real_time> wake_timer_at_;  // when the held-back wake-ups' timer was last armed for
};

}  // namespace redlock::detail
