// SPDX-License-Identifier: Apache-2.0
// What distinguishes the lock kinds (mutex, reentrant, fair, semaphore,
// read and write, names held together): their scripts, keys and arguments,
// and how each master's reply to them is read. Each kind's rounds live in a
// file of its own under locks/kinds/ (mutex, reentrant_fair, semaphore, rw,
// set) and are reached through one table (kind_rounds, rounds_of); what the
// rest of the library asks about a kind is in kinds/kind_traits.hpp. The
// retry loop, validity, fencing and release on failure are shared
// (acquire_fsm, acquire_op and the acquire_* files). Here: the table, the
// requests it takes, the sends some callers make to one kind directly, and
// what every kind shares (kinds.cpp); wake-list sends are in wake_sends.cpp.
#pragma once

#include "locks/client_impl.hpp"
#include "locks/kinds/kind_traits.hpp"
#include "quorum/quorum_round.hpp"
#include "quorum/replies.hpp"

#include <redlock/options.hpp>
#include <redlock/status.hpp>

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace redlock::detail {

/// One score for a waiter on every master, so that all agree on the order:
/// microseconds since the epoch when it began (exact in a double until 2255).
inline double waiter_score(std::chrono::system_clock::time_point began) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(began.time_since_epoch()).count());
}

/// A semaphore attempt names every slot, starting at a random one (the same
/// on every master): the slot of candidate `position`.
inline unsigned permit_slot(unsigned first, unsigned permits, std::int32_t position) {
  return (first + static_cast<unsigned>(position)) % permits;
}

/// One acquisition round. `token` is the random value (mutex) or the owner
/// field (reentrant, fair); `reenter` asks for one more level of a hold.
// Views of the operation's own strings: a round encodes them at once.
struct acquire_request {
  lock_kind kind;
  std::string_view key;
  std::string_view token;
  milliseconds ttl;
  bool fenced = false;
  bool reenter = false;
  double queue_score = 0;  // fair: the same on every master
  milliseconds queue_timeout{0};
  // Reentrant, fair: this request's id, or the hold's id when re-entering.
  std::uint64_t hold_id = 0;
  bool may_be_handed = false;  // fair: a release may hand this waiter the lock
  // Mutex: a waiter that a release may wake by name ('' for none), and how
  // long its wake list entry lives (docs/algorithm.md, section 10).
  std::string_view waiter{};
  milliseconds waiter_lapse{0};
  bool join_line_only = false;  // mutex waiter: list it, do not take the lock
  std::string_view description{};  // acquire_options::description ('' for none)
  // Semaphore: its number of permits, and the slot its candidates start at.
  unsigned permits = 0;
  unsigned first_slot = 0;
  // ... and how long a waiter heading its wake list must have waited for the
  // last free slot to be kept for it (semaphore_acquire.lua, ARGV[9]).
  milliseconds reserve_after{0};
  // Write side of a read-write lock: its mark while it waits ('' for none).
  std::string_view writer_mark{};
  // Names held together: every key, sorted (`key` is then unused).
  std::span<const std::string> keys{};
};

/// Whom a release wakes (mutex_release.lua, ARGV[3]).
enum class release_wake {
  none,          ///< an abandoned attempt's clean-up: the lock was never free by it
  first_waiter,  ///< a holder's release: publishes on the release channel
  report_first,  ///< a permit's release by a client that takes a slot back at
                 ///< once: names no one, answers 3 where a waiter heads the list
};

/// A holder's release of one level of its hold (start_release).
struct release_terms {
  /// The final level of a reentrant or fair hold; a mutex's or a permit's
  /// release is always its last.
  bool last = true;
  release_wake wake = release_wake::first_waiter;
  /// Mutex (may be null): listed behind the waiter the release names, where
  /// it names one (client_impl::relisting).
  const wake_list_entry* relist = nullptr;
};

/// Where a fair waiter stands in line: its score and its queue timeout.
struct fair_place {
  double score;
  milliseconds queue_timeout;
};

/// An attempt given up (or a grant that came after its attempt was
/// decided): what its clean-up gives back.
struct abandoned_attempt {
  const std::string& key;
  std::span<const std::string> keys;  // names held together
  const std::string& token;
  std::uint64_t hold_id;  // reentrant, fair: the attempt's request id
  bool described;         // the attempt wrote a holder description
  unsigned permits;       // semaphore
  /// A fair waiter that goes on waiting (may be null): where the clean-up
  /// gives back a hold a release handed it, it goes back in line there
  /// (reentrant_release.lua), so a later caller cannot take its turn.
  const fair_place* keeps_place = nullptr;
};

struct status_record;

/// One lock kind's rounds: an entry per kind, defined in that kind's file
/// under locks/kinds/ and listed in kinds.cpp. A new kind is a new file and
/// its entry in that list.
struct kind_rounds {
  lock_kind kind;
  bool together;  ///< names held together (a mutex over several names)
  /// Its acquire (and re-entry) round: the encoding, and how replies read as votes.
  round_ptr (*acquire)(const std::shared_ptr<client_impl>& client, const acquire_request& req,
                       quorum_round::decided_fn done);
  /// Lengthens the hold to `ttl` where it is still ours (extend, renewals).
  round_ptr (*extend)(const std::shared_ptr<client_impl>& client, const lock_state& s, milliseconds ttl,
                      quorum_round::decided_fn done);
  /// A holder's release on every master.
  round_ptr (*release)(const std::shared_ptr<client_impl>& client, const lock_state& s, const release_terms& how,
                       quorum_round::decided_fn done);
  /// Fire-and-forget: gives back what the attempt may hold on `nodes` (not
  /// empty), waking no one: only a holder's release means the lock became free.
  void (*clean_up)(const std::shared_ptr<client_impl>& client, const abandoned_attempt& attempt,
                   const std::vector<std::uint32_t>& nodes);
  /// Fills in what an adopted hold of this kind needs (null: nothing).
  void (*adopt)(const client_impl& client, lock_state& s, const adopt_options& how);
  /// Reads a master's status of a key holding this kind; false if it does
  /// not (null: the kind is read as another, a set as its mutexes).
  bool (*decode_status)(const status_record& record, node_lock_view& out);
  /// Sets the hold's key again, for `left`, on the masters a renewal found
  /// it gone on (null: the kind's holds cannot be rebuilt by the holder
  /// alone; docs/algorithm.md, "Repair"). Sent with start_on().
  round_ptr (*repair)(const std::shared_ptr<client_impl>& client, const lock_state& s, milliseconds left,
                      quorum_round::decided_fn done);
};

/// The entry of a kind (`together`: names held together).
const kind_rounds& rounds_of(lock_kind kind, bool together);
inline const kind_rounds& rounds_of(const lock_state& s) { return rounds_of(s.kind, s.holds_names_together()); }
/// Every entry, in the order status tries them on a key.
std::span<const kind_rounds* const> every_kind_rounds();

inline round_ptr acquire_round(const std::shared_ptr<client_impl>& client, const acquire_request& req,
                               quorum_round::decided_fn done) {
  return rounds_of(req.kind, !req.keys.empty()).acquire(client, req, std::move(done));
}

/// The attempt's clean-up (kind_rounds::clean_up) on `nodes`, if any.
void clean_up_attempt(const std::shared_ptr<client_impl>& client, lock_kind kind, const abandoned_attempt& attempt,
                      const std::vector<std::uint32_t>& nodes);

/// `script_keys` with the holder description's key ({R}:holder) appended
/// when the hold has a description: every script takes it as its last,
/// optional key, so a hold without one builds and sends nothing for it.
std::vector<std::string> with_holder_key(std::vector<std::string> script_keys, const std::string& key,
                                         bool described);

/// Every master that may hold the key must see a release, even one just
/// restarted with the key whose connection is in back-off, and even when the
/// client is shutting down (quorum_round::must_reach_every_master).
inline round_ptr as_release(round_ptr round) {
  round->must_reach_every_master();
  return round;
}

// ---- sends of one kind, made by callers outside its table entry --------

/// Releases one hold of a reentrant or fair owner (reentrant_release.lua):
/// `last`: its final level; `hold_id`: the latest request id of the
/// acquisition being ended (holds taken by later requests of ours are left
/// alone); `keeps_place`: see abandoned_attempt (may be null).
round_ptr owner_release_round(const std::shared_ptr<client_impl>& client, const std::string& key,
                              const std::string& token, std::uint64_t hold_id, bool last, release_wake wake,
                              bool described, const fair_place* keeps_place, quorum_round::decided_fn done);

/// Releases one hold of a read-write lock; `writer_mark` ('' for none): a
/// writer's waiter id, whose mark comes down with it; `wake`: a holder's
/// release, which wakes the waiters when it may let one in.
round_ptr rw_release_round(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& token,
                           const std::string& writer_mark, bool wake, quorum_round::decided_fn done);

/// Cleans up an attempt over several keys (all holding `token`) on every
/// master, waking no one: "yes" where all of them were ours
/// (lua/release_all.lua).
round_ptr release_all_round(const std::shared_ptr<client_impl>& client, const std::vector<std::string>& lock_keys,
                            const std::string& token, bool described, quorum_round::decided_fn done);

/// Fire-and-forget clean-up of a semaphore attempt on the given masters:
/// every slot of semaphore `key` holding `token`, except `keep` (the slot
/// it won, or none).
void release_permits(const std::shared_ptr<client_impl>& client, const std::string& key, unsigned permits,
                     std::optional<unsigned> keep, const std::string& token, bool described,
                     const std::vector<std::uint32_t>& nodes);

/// Asks every master for the type of `key`: `done(true)` if some master holds
/// data of another type there (someone else's, never overwritten).
void check_key_types(const std::shared_ptr<client_impl>& client, const std::string& key,
                     std::function<void(bool wrong_type)> done);

/// Undoes one re-entry level on the given masters (where a failed re-entry applied).
void undo_reentry(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& field,
                  const std::vector<std::uint32_t>& nodes);

/// A fair-lock waiter that won a quorum leaves the queue on `nodes`; with
/// `extend_to`, it also extends its hold to that ttl where it holds the lock
/// ("yes"), confirming a hold a release handed over for its queue deadline
/// only. (A waiter that gives up leaves by a release, which passes the lock on.)
void leave_queue(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& field,
                 std::uint64_t hold_id, std::optional<milliseconds> extend_to, const std::string& description,
                 const std::vector<std::uint32_t>& nodes, quorum_round::decided_fn done);

/// A fair poll's master granted it without putting it in line (the lock
/// free, nobody in line: fair_acquire.lua's fast path): a winner has no
/// place to leave there.
bool granted_out_of_line(const node_outcome& o);

// ---- shared by every kind's callers -------------------------------------

/// The outcome of a round on a lock we hold (extend, renewal, re-entry,
/// release): success, errc::not_held only when refusals made a quorum
/// impossible, else the transient per-master error (a timeout, say) that
/// kept the round from a quorum: the lock may well still be ours.
boost::system::error_code lease_round_error(const quorum_round& round);

/// The masters where an attempt may have applied: all but those that refused
/// it (a refusal is final: that attempt's write did not happen there and
/// never will). Masters that erred, timed out or have not answered are in.
std::vector<std::uint32_t> may_hold(const quorum_round& attempt);

/// Whether a master's answer may have left a waiter on its wake list: a
/// refusal did; an error or a passed deadline may have (the script may have
/// run and refused all the same). A grant took the entry down itself.
constexpr bool may_have_listed(node_state s) noexcept {
  return s == node_state::refused || s == node_state::failed || s == node_state::unknown;
}

/// A mutex waiter (`waiter`, '' for none) leaves the wake list on the given
/// masters: where a refusal put it back after it won elsewhere, or
/// everywhere when it gives up. Fire-and-forget; `must_reach`: sent even
/// while the client shuts down (quorum_round::must_reach_every_master).
void leave_wake_list(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& waiter,
                     const std::vector<std::uint32_t>& nodes, bool must_reach = false);

/// On the masters `nodes`, takes down `entry` ('' for none), a wake-list
/// entry a release listed for this client and that a release (`token`) then
/// named, though no acquisition of ours waits under it; if `key` is free
/// there, names the first live waiter on `waiters_key`'s wake list in its
/// place (mutex_release.lua, 'pass'). Also the wake-up a quiet permit
/// release left for later (release_wake::report_first). `must_reach`: sent
/// even while the client shuts down.
void pass_wake_on(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& waiters_key,
                  const std::string& entry, std::string_view token, const std::vector<std::uint32_t>& nodes,
                  bool must_reach = false);

}  // namespace redlock::detail
