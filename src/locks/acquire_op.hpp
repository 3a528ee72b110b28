// SPDX-License-Identifier: Apache-2.0
// One acquisition of a lock of any kind, from its first attempt to its
// handler (docs/algorithm.md, sections 2, 9 to 15): the I/O driver of
// acquire_fsm, which makes every decision. The driver sends what the
// machine asks for (attempts, clean-ups, the fence raise), runs its timer,
// listens for releases, and tells the machine what happened: acquire_op.cpp
// (the loop, attempts, clean-up, the end), acquire_fence.cpp (the raise),
// acquire_win.cpp (a won attempt becomes a hold; late grants),
// acquire_wake.cpp (release announcements, the fair hand-over,
// cancellation); the entry point is acquire_start.cpp.
#pragma once

#include "acquire_fsm.hpp"
#include "client_impl.hpp"
#include "hold.hpp"
#include "kinds.hpp"
#include "lease/report.hpp"
#include "operations.hpp"
#include "quorum/quorum_round.hpp"
#include "waiting/fair_handover.hpp"
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
        own_releases_before_(client_->own_releases_sent()),
        fsm_(terms_of(*client_, options_, !keys_.empty())) {}

  void start();
  /// This acquisition heads its owner's line for the name ('' for none):
  /// when it ends, the owner's acquisitions waiting behind it go on.
  void heads_owner_line(std::string line) { owner_line_ = std::move(line); }

 private:
  static acquire_terms terms_of(const client_impl& client, const acquire_options& options, bool together);

  bool is_semaphore() const { return options_.kind == lock_kind::semaphore; }
  bool holds_names_together() const { return !keys_.empty(); }
  // The key a won attempt holds: the lock's, or the semaphore slot it won.
  std::string held_key(const quorum_round& won) const;
  // This acquisition writes a holder description next to the lock.
  bool described() const { return !options_.description.empty(); }

  // Not for fenced waiters: they draw their fence counter themselves.
  bool may_be_handed_the_lock() const { return options_.kind == lock_kind::fair && !options_.fenced; }

  struct win {
    steady_time valid_until;
    std::optional<std::uint64_t> fence;
    node_answers answers;
    fair_win how;  // fair locks only
    std::string key{};  // the key held, when not key_ (a semaphore's slot)
    std::vector<std::uint32_t> in_line_on{};  // fair, won by polls: see begin_holding
  };

  // the loop: one event in, the machine's actions carried out
  acquire_event event(acquire_event::type what) const;
  void drive(acquire_event e);
  /// Drives `e`, about `attempt` (the round decided, or the one whose fence was raised).
  void decide_on(const quorum_round& attempt, const acquire_event& e);
  // attempts
  void send_attempt(const acquire_action& a);
  void on_decided(quorum_round& f, std::uint64_t poll_id);
  // The attempt's token, kept by its late-reply callback: inline, as the
  // callback is (a std::string of 32 characters would be on the heap).
  using late_grant_token = boost::static_string<48>;
  void on_late_grant(std::uint32_t node, const node_outcome& said, std::string_view token, unsigned attempt,
                     unsigned first_slot);
  // fair: a poll's answer after its round was decided (acquire_win.cpp)
  void on_late_poll_reply(std::uint32_t node, const node_outcome& said, unsigned attempt);
  // the fair hand-over (acquire_wake.cpp)
  void on_handed(std::uint32_t node, std::uint64_t poll_id);
  bool won_by_hand_over();
  void hold_handed();
  void abandon_handed();
  std::size_t rank_in_line(const quorum_round& f) const;
  // failure, waiting
  void abandon_attempt(std::vector<std::uint32_t> nodes);
  /// Gives back what an attempt of ours (`token`) may hold on `nodes`,
  /// waking no one (kind_rounds::clean_up).
  void give_back(const std::vector<std::uint32_t>& nodes, const std::string& token, std::uint64_t hold_id,
                 const fair_place* keeps_place = nullptr);
  void wait_for(milliseconds delay);
  // fencing
  void start_raise(const quorum_round& acquired);
  void on_raised(const quorum_round& acquired, const quorum_round& raise, std::uint64_t token_value);
  // success
  void acquired(const quorum_round& f, std::optional<std::uint64_t> fence);
  void hold(win w);
  kind_fields held_fields() const;  // what the hold keeps of its kind
  // wake-ups and cancellation (acquire_wake.cpp)
  void watch_releases();
  std::string release_channel() const;
  bool named_by_release(std::string_view payload);
  // the end: the one place the handler is called
  void complete(boost::system::error_code ec, lock l);

  std::shared_ptr<client_impl> client_;
  std::string name_;
  std::string key_;
  // Names held together (acquire_options::other_names): all of them, sorted,
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
  std::optional<std::int32_t> won_choice_;  // semaphore: the candidate the winning attempt holds
  std::weak_ptr<lock_state> held_;  // what the winning attempt became (a late grant may outlive its release)
  unsigned won_poll_ = 0;           // fair: the attempt that won by polls (0: none)
  double queue_score_ = 0;
  handover_ledger handover_;    // fair: grants releases handed us
  release_news news_;           // mutex, reentrant: releases heard, per master
  std::uint64_t own_releases_before_;  // our own releases sent before we began are no news
  acquire_fsm fsm_;
  acquire_event::type fed_ = acquire_event::type::started;  // the event the machine's actions answer
  boost::intrusive_ptr<const quorum_round> attempt_round_;   // the attempt being decided on (decide_on)
  std::optional<std::uint64_t> raised_fence_;                // its token, once raised
  std::optional<steady_time> handed_until_;                  // fair: the window a quorum of hand-overs vouches for
  bool completed_ = false;
  unsigned abandoned_attempt_ = 0;  // the latest attempt that failed and was released
  std::chrono::steady_clock::time_point started_;
  std::optional<std::chrono::steady_clock::time_point> release_heard_;  // the last release a wake-up came from
  std::optional<boost::asio::steady_timer> timer_;
  std::string channel_;
  release_listener::waiter_id watch_id_ = 0;
  std::vector<node_vote> last_round_;  // for options_.report: the latest round's results
  round_tally last_tally_;               // for the acquisition's span: the same, counted
  std::string owner_line_;  // client_impl::owner_lines: the line this acquisition heads ('' for none)
};

}  // namespace redlock::detail
