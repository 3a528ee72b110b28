// SPDX-License-Identifier: Apache-2.0
// Options of a client (its masters and timeouts) and of one acquisition.
#pragma once

#include <redlock/clock.hpp>
#include <redlock/node_vote.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redlock {

using std::chrono::milliseconds;
class observer;

namespace detail {
/// The type of a renamed list-of-names option kept for 0.x: setting it
/// warns (a [[deprecated]] data member would warn wherever the options are
/// copied, with GCC 12), reading it does not, so the library can honour it.
struct deprecated_names : std::vector<std::string> {
  deprecated_names() = default;
  [[deprecated("use other_names")]] deprecated_names(std::initializer_list<std::string> names)
      : std::vector<std::string>(names) {}
  [[deprecated("use other_names")]] deprecated_names(std::vector<std::string> names)
      : std::vector<std::string>(std::move(names)) {}
};
}  // namespace detail

/// A client's masters, timeouts and hooks. Checked when the client is built.
struct client_options {
  /// One URI per independent master: redis://[user:password@]host:port[/db]
  /// or rediss:// for TLS. Quorum is nodes.size() / 2 + 1.
  std::vector<std::string> nodes{};
  /// Per-master deadline of each request. Must be much smaller than any TTL.
  milliseconds node_timeout{50};
  /// Bound on the TCP connect and the TLS handshake. (A master that accepts
  /// but never answers AUTH/SELECT is caught by the request deadlines and
  /// stall_timeout.)
  milliseconds connect_timeout{1000};
  /// Clock drift allowance: validity = TTL - elapsed - (TTL * drift_factor + 2 ms).
  double drift_factor = 0.01;
  /// Prepended to every key and channel the library touches.
  std::string key_prefix{};
  /// Reconnect backoff after a failed connect: doubles from min up to max.
  milliseconds reconnect_min{20};
  milliseconds reconnect_max{2000};
  /// A connection with requests outstanding and no byte received for this long
  /// is closed and reconnected (a blackholed or dead master).
  milliseconds stall_timeout{5000};
  /// Caps on what a master may send us in one reply.
  std::size_t max_reply_bytes = 1 << 20;
  std::size_t max_reply_elements = 1 << 16;
  /// Requests outstanding on one connection before new ones fail fast.
  std::size_t max_pending_per_node = 16384;
  /// rediss:// only: verify the server certificate (against ca_file, or the
  /// system store when ca_file is empty).
  bool tls_verify = true;
  std::string tls_ca_file{};
  /// rediss:// only: a client certificate (PEM, the chain after it) and its
  /// private key (PEM, not encrypted), for masters that ask for one
  /// (tls-auth-clients yes). Both or neither; checked when the client is
  /// built: unreadable, or a key that does not fit the certificate, throws
  /// bad_option naming the file.
  std::string tls_cert_file{};
  std::string tls_key_file{};
  /// AUTH for every master whose URI carries no password of its own (a
  /// password kept out of the URIs, and out of a command line: the CLI reads
  /// it from $REDLOCK_PASSWORD or --password-file). `user` empty: the
  /// default user; a user needs a password (bad_option).
  std::string user{};
  std::string password{};
  /// nullptr: std::chrono::steady_clock.
  std::shared_ptr<const clock_source> clock{};
  /// Hooks for metrics and logs (redlock/observer.hpp); nullptr: none.
  std::shared_ptr<redlock::observer> observer{};
  /// async_client only: true when the executor it is given is only ever run
  /// by one thread (an io_context whose run() is called from one thread).
  /// The client then serializes its work on that executor as it is, instead
  /// of on a strand of its own: each reply and timer completes without a
  /// pass through the strand (fewer heap allocations per request, see
  /// redlock-bench alloc). Set it only when that holds: with two threads
  /// running the executor, the client's state would be raced. The sync
  /// client sets it for its own I/O thread.
  bool executor_runs_on_one_thread = false;
};

/// The kinds of lock (docs/algorithm.md):
enum class lock_kind : int {
  mutex,      ///< SET NX PX with a random token; not reentrant
  reentrant,  ///< hash of owner -> hold count; the same owner may re-enter
  fair,       ///< reentrant, and waiters are served in one FIFO order on every master
  semaphore,  ///< at most acquire_options::permits holders at once: each holds one permit slot, a mutex of its own
  read,       ///< a read-write lock's shared side: readers together, never with a writer
  write,      ///< a read-write lock's exclusive side: one writer, no readers
};

/// Why a renewed lock was lost (see acquire_options::renew).
enum class lost_reason : int {
  none = 0,
  expired,      ///< validity ran out before a renewal reached a quorum
  taken_over,   ///< our token is gone from a quorum while validity remained (deleted, flushed, overwritten)
  quorum_lost,  ///< renewals kept failing (masters unreachable) until validity ended
  max_hold,     ///< held for acquire_options::max_hold: renewal stopped; the lease ends within the validity left
};

/// How one acquisition behaves: lease time, waiting, kind, fencing, renewal.
struct acquire_options {
  /// Lease time on each master.
  milliseconds ttl{10000};
  /// Total time to keep retrying; 0 with max_attempts 0 means one attempt.
  milliseconds wait{0};
  /// Upper bound on attempts (0: bounded by `wait` only).
  unsigned max_attempts = 0;
  /// Retry after retry_delay +/- retry_jitter (uniformly random).
  milliseconds retry_delay{50};
  milliseconds retry_jitter{25};
  /// Acquired only if at least this much validity is left.
  milliseconds min_validity{0};
  /// Also obtain a fencing token (one more round trip; see docs/fencing.md).
  bool fenced = false;
  lock_kind kind = lock_kind::mutex;
  /// Reentrant and fair locks: who holds it within this client. The sync
  /// client uses the calling thread when empty; async callers must name the
  /// logical owner (a task, a request), since threads mean little there.
  /// Read-write locks: the same, but optional for async callers (no owner:
  /// no re-entry); an owner holding the lock may take a read inside its read
  /// or write, or a write inside its write (counted by the client), but not
  /// a write inside its read (errc::upgrade_refused).
  std::string owner{};
  /// Fair locks: a waiter that stops polling for this long is dropped from
  /// the queue (so a crashed waiter delays the others at most this long).
  milliseconds queue_timeout{5000};
  /// Keep the lease alive: extend to `ttl` through the quorum every
  /// ttl * renew_fraction while a handle to the lock exists and until it is
  /// released. When renewal cannot keep it, the lock is marked lost
  /// (lock::lost()), its lost_slot() is signalled, and `on_lost` runs.
  bool renew = false;
  double renew_fraction = 1.0 / 3.0;
  /// Runs on the client's executor when a renewed lock is lost.
  std::function<void(lost_reason)> on_lost{};
  /// With renew: hold no longer than this (0: no cap). This long after the
  /// lock was acquired renewal stops and the lock is signalled lost with
  /// lost_reason::max_hold; it stays valid (not released, so the work can
  /// stop cleanly) until its window ends, at most one ttl later. A cap on a
  /// job that hangs while its process keeps renewing.
  milliseconds max_hold{0};
  /// If set, filled with the attempts made and the last attempt's result on
  /// each master when the acquisition ends, won or not: why it failed,
  /// master by master. Shared, so an async caller may read it in its handler.
  std::shared_ptr<acquire_report> report{};
  /// Who holds the lock, in words (say "host:pid job-42"): stored with the
  /// hold on each master while it lasts and shown by status
  /// (node_lock_view::description), for operators. Never read by any decision.
  /// At most max_description_bytes, no control characters; empty: none (a
  /// plain mutex then needs no script on the masters). Not for read-write
  /// locks yet (refused with bad_option).
  std::string description{};
  /// Semaphores (lock_kind::semaphore): how many may hold the name at once,
  /// 1 to max_permits. Every client of one semaphore must give the same
  /// number: a different one is refused with errc::permits_mismatch while
  /// the semaphore is in use (docs/algorithm.md, section 12). 0 for the
  /// other kinds. Where the first waiter has waited longer than this
  /// acquisition's retry_delay + retry_jitter, and its wake-list entry has
  /// no longer left to live than this acquisition's would, the last free
  /// permit is kept for it: this acquisition is then refused with one
  /// permit free.
  unsigned permits = 0;
  /// A mutex over several names, all or none: these other names are held
  /// with the one acquired, under one token, one validity and one release
  /// (docs/algorithm.md, section 13). Order does not matter (names are
  /// sorted, so overlapping sets never deadlock); each name once, at most
  /// max_names in all; mutex only. lock::names() and lock::fences() list them.
  std::vector<std::string> other_names{};
  /// The old name of other_names (it read as a flag); give one or the other.
  /// Goes in 1.0. Last, so that designated initialisers that named it last
  /// still compile.
  detail::deprecated_names together{};
};

/// What async_client::adopt needs to know of a hold beyond its name and
/// token (docs/algorithm.md, section 16). A token names one hold, and the
/// handle acts on that hold alone: a reader's token never frees another
/// reader, a permit's frees one permit, a set's the whole set.
struct adopt_options {
  /// The kind of hold the token names. Unset: read from the token, as the
  /// library writes them: 'r:<hex>' / 'w:<hex>' a read-write lock's read or
  /// write hold, 's:<hex>' a hold of several names together (give them in
  /// `other_names`), '<client id>:<owner>' a reentrant or fair owner, anything
  /// else a mutex's token. A semaphore permit's token looks like a mutex's:
  /// say lock_kind::semaphore, with `permit` and `permits`.
  std::optional<lock_kind> kind{};
  /// Semaphores: the permit slot the token holds (lock::permit()) and the
  /// semaphore's number of permits (acquire_options::permits).
  std::optional<unsigned> permit{};
  unsigned permits = 0;
  /// A hold of several names together ('s:' token): the other names (in
  /// any order; lock::names() lists them all).
  std::vector<std::string> other_names{};
  /// The old name of other_names; give one or the other. Goes in 1.0.
  detail::deprecated_names together{};
};
#define REDLOCK_HAS_ADOPT_OPTIONS 1

namespace detail {
/// The other names asked for (acquire_options, adopt_options), under
/// whichever name they were given: the library reads them only through this.
template <class Options>
const std::vector<std::string>& other_names_of(const Options& o) noexcept {
  return o.other_names.empty() ? o.together : o.other_names;
}
}  // namespace detail

/// The longest acquire_options::description accepted.
inline constexpr std::size_t max_description_bytes = 256;
/// The most permits a semaphore may have (each attempt names every slot on
/// every master).
inline constexpr unsigned max_permits = 1024;
/// The most names one lock may hold together (the name and `other_names`).
inline constexpr std::size_t max_names = 64;

}  // namespace redlock
