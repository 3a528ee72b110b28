// SPDX-License-Identifier: Apache-2.0
// One acquisition of a lock of any kind, from its first attempt to its
// handler (docs/algorithm.md, sections 2, 9 to 15). The attempt, retry and
// success steps are in acquire_op.cpp, the fence raise in acquire_fence.cpp,
// the entry point in acquire_start.cpp; being woken by a release or handed
// the lock by one, and cancellation, in acquire_wake.cpp.
#pragma once

#include "client_impl.hpp"
#include "fair_handover.hpp"
#include "hold.hpp"
#include "kinds.hpp"
#include "operations.hpp"
#include "quorum/quorum_round.hpp"
#include "waiting/release_news.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/static_string/static_string.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace redlock::detail {

class acquire_op : public std::enable_shared_from_this<acquire_op> {
 public:
  acquire_op(std::shared_ptr<client_impl> client, std::string name, std::string key, std::string field,
             acquire_options options, std::chrono::system_clock::time_point asked_at, acquire_handler handler,
             std::vector<std::string> names_together = {}, std::vector<std::string> keys_together = {})
      : client_(std::move(client)),
        name_(std::move(name)),
        key_(std::move(key)),
        names_(std::move(names_together)),
        keys_(std::move(keys_together)),
        token_(std::move(field)),
        options_(std::move(options)),
        handler_(std::move(handler)),
        queue_score_(waiter_score(asked_at)),
        handover_(client_->masters->size(), client_->quorum()),
        news_(client_->quorum()),
        own_releases_before_(client_->own_releases_sent()) {}

  void start();
  /// This acquisition heads its owner's line for the name ('' for none):
  /// when it ends, the owner's acquisitions waiting behind it go on.
  void heads_owner_line(std::string line) { owner_line_ = std::move(line); }

 private:
  /// Where the operation is. Cancellation and release announcements are
  /// remembered in it until the step in flight ends.
  enum class phase : std::uint8_t {
    attempting,        ///< an attempt's round (or its fence raise) is in flight
    attempting_woken,  ///< ... and a release was announced meanwhile: if it fails, retry at once
    waiting,           ///< on the retry timer between attempts (a release wakes it early)
    cancelled,         ///< the caller cancelled: release what the step in flight took, then finish
    done,              ///< the caller's handler has been called
  };

  bool is_hash_kind() const { return options_.kind == lock_kind::reentrant || options_.kind == lock_kind::fair; }
  bool is_semaphore() const { return options_.kind == lock_kind::semaphore; }
  bool holds_names_together() const { return !keys_.empty(); }
  bool is_rw() const { return options_.kind == lock_kind::read || options_.kind == lock_kind::write; }
  // The key a won attempt holds: the lock's, or the semaphore slot it won.
  std::string held_key(const quorum_round& won) const;
  // This acquisition writes a holder description next to the lock.
  bool described() const { return !options_.description.empty(); }
  bool cancelled() const { return phase_ == phase::cancelled; }

  // Not for fenced waiters: they draw their fence counter themselves.
  bool may_be_handed_the_lock() const { return options_.kind == lock_kind::fair && !options_.fenced; }

  struct win {
    steady_time valid_until;
    std::optional<std::uint64_t> fence;
    node_answers answers;
    fair_win how;  // fair locks only
    std::string key{};  // the key held, when not key_ (a semaphore's slot)
  };

  // attempts
  void attempt();
  void on_decided(quorum_round& f, std::uint64_t poll_id);
  // The attempt's token, kept by its late-reply callback: inline, as the
  // callback is (a std::string of 32 characters would be on the heap).
  using late_grant_token = boost::static_string<48>;
  void on_late_grant(std::uint32_t node, const node_outcome& said, std::string_view token, unsigned attempt,
                     unsigned first_slot);
  // the fair hand-over (acquire_wake.cpp)
  void on_handed(std::uint32_t node, std::uint64_t poll_id);
  bool won_by_hand_over();
  void abandon_handed();
  std::size_t rank_in_line(const quorum_round& f) const;
  void wait_behind_woken(const client_impl::listing& listed);
  // failure, retry
  void abandon_attempt(boost::system::error_code why, std::vector<std::uint32_t> nodes);
  void retry_or_fail(boost::system::error_code why);
  void finish_failed(boost::system::error_code why);
  // fencing
  void start_raise(const quorum_round& acquired);
  void on_raised(const quorum_round& acquired, const quorum_round& raise, std::uint64_t token_value);
  // success
  void acquired(const quorum_round& f, std::optional<std::uint64_t> fence);
  void hold(win w);
  // wake-ups and cancellation (acquire_wake.cpp)
  void wake();
  void watch_releases();
  std::string release_channel() const;
  bool named_by_release(std::string_view payload);
  void cancel();
  // the end: the one place the handler is called
  void complete(boost::system::error_code ec, lock l);

  std::shared_ptr<client_impl> client_;
  std::string name_;
  std::string key_;
  // Names held together (acquire_options::together): all of them, sorted,
  // and their keys; empty for one name. Their tokens once raised.
  std::vector<std::string> names_, keys_;
  std::vector<std::uint64_t> fences_;
  std::string token_;  // random per attempt (mutex) or the owner field (reentrant, fair)
  std::string waiter_id_;  // mutex, when it may wait: its name on the wake list ('<client id>:<n>')
  std::string writer_mark_;  // read-write lock, a writer that may wait: its mark ('<client id>:<n>')
  acquire_options options_;
  acquire_handler handler_;
  std::uint64_t latest_request_ = 0;  // reentrant/fair: the id of our latest request
  unsigned first_slot_ = 0;           // semaphore: where this attempt's candidates start
  std::optional<unsigned> retake_slot_;  // semaphore: the slot our release just gave back
  std::optional<std::int32_t> won_choice_;
  std::weak_ptr<lock_state> held_;  // what the winning attempt became (a late grant may outlive its release)  // semaphore: the candidate the winning attempt holds
  double queue_score_ = 0;
  std::size_t queue_rank_ = 0;  // fair: waiters ahead of us at the last attempt
  handover_ledger handover_;    // fair: grants releases handed us
  release_news news_;           // mutex, reentrant: releases heard, per master
  std::uint64_t own_releases_before_;  // our own releases sent before we began are no news
  phase phase_ = phase::attempting;
  unsigned attempts_ = 0;
  // The first round only joined the mutex's wake list (attempt()).
  bool joins_line_ = false, joined_line_ = false;
  unsigned abandoned_attempt_ = 0;  // the latest attempt that failed and was released
  // Mutex waiters (docs/algorithm.md, section 10): a wake-up came since the
  // last attempt; until when our wake-list entries, written by the last
  // script attempt that a quorum refused, surely outlive a retry; whether
  // the attempt in flight is a plain SET NX PX that relies on them.
  bool woken_ = false;
  steady_time listed_until_{};
  bool plain_retry_ = false;
  std::chrono::steady_clock::time_point started_, wait_deadline_;
  std::optional<std::chrono::steady_clock::time_point> release_heard_;  // the last release a wake-up came from
  std::optional<boost::asio::steady_timer> timer_;
  std::string channel_;
  release_listener::waiter_id watch_id_ = 0;
  std::vector<node_result> last_round_;  // for options_.report: the latest round's results
  std::string owner_line_;  // client_impl::owner_lines: the line this acquisition heads ('' for none)
};

}  // namespace redlock::detail
