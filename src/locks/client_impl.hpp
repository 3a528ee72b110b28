// SPDX-License-Identifier: Apache-2.0
// Shared state of one client: its strand, one connection per master, the
// token source. Everything here is touched only on the strand.
#pragma once

#include "connection/connection.hpp"
#include "lease/lock_state.hpp"
#include "quorum/node_set.hpp"
#include "quorum/quorum_round.hpp"
#include "scripts/keys.hpp"
#include "waiting/release_listener.hpp"
#include "waiting/wake_ledger.hpp"

#include <redlock/options.hpp>

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/ssl/context.hpp>

#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace redlock::detail {

struct lock_state;
struct queued_acquisition;  // acquire_start.cpp

class client_impl : public std::enable_shared_from_this<client_impl> {
 public:
  client_impl(boost::asio::any_io_executor executor, client_options options, std::vector<node_address> addresses);

  boost::asio::any_io_executor executor;  // the user's: completion handlers default to it
  // The same executor, type-erased as a completion handler's executor once
  // (holding the concrete executor: client_impl.cpp): an
  // any_completion_handler asked for its executor with any_io_executor as
  // the default wraps it anew, on the heap, at every completion.
  boost::asio::any_completion_executor completion_executor;
  strand_type strand;
  client_options options;
  std::unique_ptr<boost::asio::ssl::context> tls;
  /// One connection per master, the quorum, the node timeout, the clock and
  /// the observer: what every quorum round of this client is sent through.
  std::shared_ptr<node_set> masters;
  std::size_t quorum() const noexcept { return masters->quorum; }
  /// Wake-ups for this client's waiters (its own subscriber connections).
  std::shared_ptr<release_listener> listener;
  /// This client's random id (128 bits): with an owner id, the field that
  /// identifies a reentrant/fair holder on the masters.
  std::string client_id;
  /// Reentrant/fair locks held by this client, by key + '\n' + field.
  std::unordered_map<std::string, std::weak_ptr<lock_state>> held;
  /// One owner, one hold per name: while an owner's first acquisition of a
  /// name is in flight (reentrant, fair, an owned read-write lock), its
  /// further acquisitions of that name wait here, in order, under the same
  /// key as `held` (acquire_start.cpp; docs/algorithm.md, section 16).
  std::unordered_map<std::string, std::deque<std::shared_ptr<queued_acquisition>>> owner_lines;
  bool stopped = false;

  steady_time now() const { return masters->now(); }

  /// 128 bits from the OS CSPRNG, as 32 hex digits (unique per acquisition).
  std::string new_token();
  /// A uniformly random delay in [base - jitter, base + jitter], never negative.
  std::chrono::milliseconds jittered(std::chrono::milliseconds base, std::chrono::milliseconds jitter);
  /// Uniform in [0, n) (n > 0): not secret (a semaphore's first slot).
  unsigned random_below(unsigned n) { return std::uniform_int_distribution<unsigned>(0, n - 1)(jitter_rng_); }

  std::string key_for(std::string_view name) const { return options.key_prefix + std::string(name); }
  /// Where a fair release wakes the head of the queue when it is one of this
  /// client's waiters (the message is the head's owner field).
  std::string wake_channel(const std::string& key) const { return keys::wake_channel(key, client_id); }
  /// Fills in the names node_votes_of left empty (results in node order).
  void name_nodes(std::vector<node_vote>& nodes) const;
  /// Each master's display name, in node order (lock_state::node_names).
  std::shared_ptr<const std::vector<std::string>> node_names;
  /// Ids of reentrant and fair acquisition requests, growing in this client.
  /// Each master keeps the id of the request that took our hold there, so a
  /// late clean-up of an older request cannot delete a newer hold (the owner
  /// field is the same at every acquisition); a lock handed over names the
  /// fair poll whose send time bounds its validity.
  std::uint64_t next_request_id = 1;

  /// This client's own release announcements (a mutex token, a reentrant
  /// release id), numbered in the order sent. Masters publish on their own
  /// connections, so copies can arrive after a later acquisition of ours
  /// began; a release sent before a waiter began is no news to it (the lock
  /// was free, or taken again, before its first attempt).
  void note_own_release(std::string_view payload);
  std::uint64_t own_releases_sent() const noexcept { return own_releases_sent_; }
  /// `payload` announces one of our releases numbered below `before`.
  bool own_release_before(std::string_view payload, std::uint64_t before) const;

  // ---- wake-ups: what this client's releases woke, listed or held back ----
  // The ledger (waiting/wake_ledger.hpp) decides; these send what it says
  // (wake_sends.cpp).

  /// Our release of `key` just woke a waiter on a quorum: the next
  /// acquisition's first round joins the line instead of racing it
  /// (docs/algorithm.md, section 10).
  bool woke_waiter_just_now(const std::string& key) const { return wakes_.woke_waiter_just_now(key, now()); }
  /// This client asked for `key` again at once after such a release.
  void note_reasked(const std::string& key) { wakes_.note_reasked(key); }
  /// The entry the next release of `key` lists this client under, when it
  /// was seen asking again at once after its last such release (and still
  /// listens on the lock's wake channel): the line round of its next
  /// acquisition then costs no call at all (mutex_release.lua, ARGV[5]).
  std::optional<wake_list_entry> relisting(const std::string& key);
  /// A mutex release of `key` by this client was decided; `listed`: the
  /// entry it asked the masters to list (relisting()), or null.
  void note_release_wake(const std::string& key, const quorum_round& release, const wake_list_entry* listed);
  /// The entry our own release listed us under, if any and not yet taken:
  /// the caller now owns it (waits under its id, takes it down when done).
  /// Unclaimed, it is taken down after one node timeout; named by a release
  /// before that, it passes the wake-up on (pass_wake_on) and is spent.
  std::optional<wake_ledger::listing> claim_listing(const std::string& key);

  /// A semaphore whose permit this client released and then asked for again
  /// at once: its next permit release there names no one, and the wake-up is
  /// sent a tenth of a node timeout later if this client has not asked again
  /// by then (docs/algorithm.md, section 12).
  bool retakes_permits(const std::string& semaphore_key) const {
    return !stopped && wakes_.retakes_permits(semaphore_key);
  }
  /// A permit release (slot `permit` of `semaphore_key`, under `token`) by
  /// this client was decided; `quiet`: it named no one (release_wake::report_first).
  void note_permit_release(const std::string& semaphore_key, unsigned permit, const std::string& token,
                           const quorum_round& release, bool quiet);
  /// This client asks for a permit of `semaphore_key`. Returns the slot just
  /// released, to try first, when the release was a moment ago; the wake-up
  /// that release held back then waits for that first attempt's decision
  /// (permit_retake_decided): dropped if it won, sent if not.
  std::optional<unsigned> note_permit_asked(const std::string& semaphore_key) {
    return wakes_.note_permit_asked(semaphore_key, std::chrono::steady_clock::now());
  }
  void permit_retake_decided(const std::string& semaphore_key, bool won);

  /// Closes every connection now (the io_context will not run again).
  void shutdown();
  /// Stops new work and closes the connections once the releases in flight
  /// were answered (bounded: connection::shutdown_after_cleanups), then
  /// calls `then` on the strand.
  void shutdown_after_releases(std::function<void()> then);

 private:
  void refill_entropy();
  std::array<unsigned char, 4096> entropy_{};
  std::size_t entropy_used_ = sizeof(entropy_);
  std::mt19937_64 jitter_rng_;
  // The latest own release announcements, by number modulo their count:
  // each kept as a hash of its payload (no copy of the string per release).
  // A foreign payload with the same 64-bit hash would only be taken for
  // old news: a waiter then retries on its timer instead of at once.
  struct own_release {
    std::size_t payload_hash = 0;
    std::uint64_t number = 0;
  };
  std::array<own_release, 64> own_releases_{};
  std::uint64_t own_releases_sent_ = 0;
  wake_ledger wakes_;
  void take_down(const wake_ledger::unclaimed_listing& unclaimed, bool must_reach = false);
  void sweep_unclaimed_listings();
  void send_held_back(const wake_ledger::held_back_wake& wake);
  void send_due_wakes();
  void arm(std::optional<boost::asio::steady_timer>& timer, std::chrono::steady_clock::time_point at,
           void (client_impl::*fired)());
  /// At shutdown: takes down every unclaimed listing and sends every
  /// held-back wake-up, before the connections drain.
  void settle_wakes();
  std::optional<boost::asio::steady_timer> held_back_wakes_;
  std::optional<boost::asio::steady_timer> listing_sweep_;
};

/// What each master said in `round`, as a lock keeps it (lock_state::answers).
node_answers node_answers_of(const quorum_round& round);
/// The same for an acquire_report, with the masters' names left empty: the
/// report names them when it is handed over (client_impl::name_nodes).
std::vector<node_vote> node_votes_of(const quorum_round& round);

}  // namespace redlock::detail
