// SPDX-License-Identifier: Apache-2.0
// What distinguishes the lock kinds (mutex, reentrant, fair, semaphore,
// read and write, names held together): their scripts, keys and arguments,
// and how each master's reply to them is read. The retry loop, validity,
// fencing and release on failure are shared (acquire_fsm, acquire_op and
// the acquire_* files); extend and the fence raise are the same scripts for
// the mutex, reentrant, fair and semaphore holds (they recognise the owner
// by the key's type), with their own for read-write holds and sets.
// Defined in kinds.cpp (acquisitions, single-name releases, clean-ups),
// release_all_rounds.cpp (several keys, one token), wake_sends.cpp (wake
// lists) and grant_replies.cpp (replies read as votes).
#pragma once

#include "locks/client_impl.hpp"
#include "locks/kinds/kind_traits.hpp"
#include "quorum/quorum_round.hpp"
#include "quorum/replies.hpp"

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace redlock::detail {


verdict classify_grant(const redisReply& r, node_outcome& out);    // 'OK' / counter = yes, nil = no
verdict classify_fair_grant(const redisReply& r, node_outcome& out);  // as above; queued = -1 - rank (value = rank)
verdict classify_line(const redisReply& r, node_outcome& out);  // joining a mutex's line: never a grant
// Semaphores: the candidate taken (choice) and, fenced, its counter (value); nil = no.
verdict classify_permit_grant(const redisReply& r, node_outcome& out);
// Names held together: 'OK', or (fenced) each name's counter in `fields`; nil = no.
verdict classify_multi_grant(const redisReply& r, node_outcome& out);

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
  // Write side of a read-write lock: its mark while it waits ('' for none).
  std::string_view writer_mark{};
  // Names held together: every key, sorted (`key` is then unused).
  std::span<const std::string> keys{};
};
round_ptr acquire_round(const std::shared_ptr<client_impl>& client, const acquire_request& req, quorum_round::decided_fn done);

/// `script_keys` with the holder description's key ({R}:holder) appended
/// when the hold has a description: every script takes it as its last,
/// optional key, so a hold without one builds and sends nothing for it.
std::vector<std::string> with_holder_key(std::vector<std::string> script_keys, const std::string& key,
                                         bool described);

/// Whom a release wakes (mutex_release.lua, ARGV[3]).
enum class release_wake {
  none,          ///< an abandoned attempt's clean-up: the lock was never free by it
  first_waiter,  ///< a holder's release: publishes on the release channel
  report_first,  ///< a permit's release by a client that takes a slot back at
                 ///< once: names no one, answers 3 where a waiter heads the list
};

/// Releases one hold (`last`: the final level of a reentrant/fair hold, or a
/// mutex or permit) on every master; `wake`: see release_wake.
/// `hold_id` (reentrant, fair): the latest request id of the acquisition
/// being ended; holds taken by later requests of ours are left alone.
/// `waiters_key` (token kinds): whose wake list the release wakes from (the
/// lock's own key, or a permit's semaphore). `listed_as` (mutex): the
/// holder's own wake-list entry, taken down too (lock_state::listed_as).
/// `relist` (mutex, may be null): listed behind the waiter the release
/// names, where it names one (client_impl::relisting).
round_ptr release_round(const std::shared_ptr<client_impl>& client, lock_kind kind, const std::string& key,
                        const std::string& token, std::uint64_t hold_id, bool last, release_wake wake, bool described,
                        const std::string& waiters_key, quorum_round::decided_fn done,
                        const std::string& listed_as = {}, const client_impl::wake_list_entry* relist = nullptr);
/// Releases one hold of a read-write lock; `writer_mark` ('' for none): a
/// writer's waiter id, whose mark comes down with it; `wake`: a holder's
/// release, which wakes the waiters when it may let one in.
round_ptr rw_release_round(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& token,
                           const std::string& writer_mark, bool wake, quorum_round::decided_fn done);

/// Every master that may hold the key must see a release, even one just
/// restarted with the key whose connection is in back-off, and even when the
/// client is shutting down (quorum_round::must_reach_every_master).
inline round_ptr as_release(round_ptr round) {
  round->must_reach_every_master();
  return round;
}

/// Cleans up an attempt over several keys (all holding `token`) on every
/// master, waking no one: "yes" where all of them were ours
/// (lua/release_all.lua).
round_ptr release_all_round(const std::shared_ptr<client_impl>& client, const std::vector<std::string>& lock_keys,
                            const std::string& token, bool described, quorum_round::decided_fn done);

/// Releases a hold of several names together: as release_all_round, and
/// each name it frees wakes that name's first mutex waiter (a waiter on one
/// name of a set listens on that name alone).
round_ptr release_set_round(const std::shared_ptr<client_impl>& client, const std::vector<std::string>& lock_keys,
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

/// A fair-lock waiter that won a quorum leaves the queue everywhere; with
/// `extend_to`, it also extends its hold to that ttl where it holds the lock
/// ("yes"), confirming a hold a release handed over for its queue deadline
/// only. (A waiter that gives up leaves by a release, which passes the lock on.)
void leave_queue(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& field,
                 std::uint64_t hold_id, std::optional<milliseconds> extend_to, const std::string& description,
                 quorum_round::decided_fn done);

/// The outcome of a round on a lock we hold (extend, renewal, re-entry,
/// release): success, errc::not_held only when refusals made a quorum
/// impossible, else the transient per-master error (a timeout, say) that
/// kept the round from a quorum: the lock may well still be ours.
boost::system::error_code lease_round_error(const quorum_round& round);

/// The masters where an attempt may have applied: all but those that refused
/// it (a refusal is final: that attempt's write did not happen there and
/// never will). Masters that erred, timed out or have not answered are in.
std::vector<std::uint32_t> may_hold(const quorum_round& attempt);

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

/// Where a fair waiter stands in line: its score and its queue timeout.
struct fair_place {
  double score;
  milliseconds queue_timeout;
};

/// Fire-and-forget release of an abandoned attempt on the given masters
/// (`described`: the attempt wrote a holder description). `keeps_place`
/// (a fair waiter that goes on waiting, may be null): where the release
/// gives back a hold a release handed it, it goes back in line there
/// (reentrant_release.lua), so a later caller cannot take its turn.
void release_abandoned(const std::shared_ptr<client_impl>& client, lock_kind kind, const std::string& key,
                       const std::string& token, std::uint64_t hold_id, bool described,
                       const std::vector<std::uint32_t>& nodes, const fair_place* keeps_place = nullptr);

}  // namespace redlock::detail
