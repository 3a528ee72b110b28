// SPDX-License-Identifier: Apache-2.0
// One quorum round: a script call (or a plain command) sent to every master
// in parallel, each with its own deadline; each reply is classified and fed
// to the round's quorum_decision, which says when the outcome is known. The
// round only sends and records: replies after the decision are still
// consumed and recorded (a late "yes" can be acted on).
#pragma once

#include "connection/connection.hpp"
#include "inline_function.hpp"
#include "node_set.hpp"
#include "quorum_decision.hpp"
#include "scripts/script_call.hpp"

#include <redlock/node_vote.hpp>
#include <redlock/options.hpp>

#include <boost/container/small_vector.hpp>

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace redlock::detail {

struct node_outcome;
/// Interprets one master's reply, filling `out.value` (a number the
/// operation needs, e.g. a fence counter), `out.fields` or `out.error`.
using classify_fn = verdict (*)(const redisReply& reply, node_outcome& out);

struct node_outcome {
  node_state state = node_state::pending;
  std::vector<std::string> fields;  // array replies, kept only by classifiers that ask for it
  boost::system::error_code error;
  std::int64_t value = 0;
  std::int32_t choice = -1;  // semaphores: the permit slot this master granted (quorum_decision::record)
  bool out_of_line = false;  // fair locks: granted without standing in line (fair_acquire.lua's fast path)
  bool fell_back = false;    // the answer to the EVAL re-sent after NOSCRIPT (later than what was queued meanwhile)
  std::chrono::microseconds latency{0};
};

class quorum_round final : public reply_sink {
 public:
  // Inline: a round is made per attempt and per release, and its callbacks
  // hold shared_ptrs (inline_function.hpp).
  using decided_fn = inline_function<void(quorum_round&)>;
  using late_reply_fn = inline_function<void(std::uint32_t node, const node_outcome& said), 96>;

  /// A script call: EVALSHA, with one EVAL fallback on NOSCRIPT per master.
  /// The command is encoded here, once: `keys` and `args` are only viewed.
  quorum_round(const std::shared_ptr<node_set>& masters, const script& s, word_list keys, word_list args,
               classify_fn classify, decided_fn on_decided);
  /// A plain command (e.g. SET NX PX): `argv` is sent as is.
  quorum_round(const std::shared_ptr<node_set>& masters, word_list argv, classify_fn classify,
               decided_fn on_decided);
  quorum_round(const quorum_round&) = delete;
  quorum_round& operator=(const quorum_round&) = delete;

  /// Sends to every master (call on the strand).
  void start();
  /// Sends to these masters only (fire-and-forget clean-ups).
  void start_on(const std::vector<std::uint32_t>& nodes);

  /// Decide only when every master answered or timed out (a read of each
  /// master's view, not a quorum).
  void wait_for_all() { decision_.set_rule(quorum_decision::failure_rule::every_master); }
  /// Decide success at quorum as usual, but a failure only once every master
  /// answered or timed out: refusals are then counted exactly (a lease is
  /// "not held" only when they alone make a quorum impossible), and the
  /// masters that "may hold" a failed attempt are only those that granted,
  /// erred or timed out, not the ones merely slower to refuse.
  void settle_failure() { decision_.set_rule(quorum_decision::failure_rule::settled); }
  /// A clean-up (a release): it must reach every master that may hold the
  /// key, even one whose connection is in reconnect back-off, and a graceful
  /// shutdown waits for it (connection's delivery::must_reach).
  void must_reach_every_master() { delivery_ = delivery::must_reach; }

  /// Called for each reply that arrives after the decision, with its outcome:
  /// a late grant (`node_state::locked`, for example from a NOSCRIPT fallback
  /// that ran after a release was queued), a refusal, an error, or a deadline
  /// that passed (`node_state::unknown`: it may have applied).
  void on_late_reply(late_reply_fn f) {
    on_late_reply_ = std::move(f);
  }

  const quorum_decision& decision() const noexcept { return decision_; }
  bool succeeded() const noexcept { return decision_.reached(); }
  bool refused_by_quorum() const noexcept { return decision_.refused_by_quorum(); }
  /// Client-clock times: start of the round and moment of the decision.
  steady_time started_at() const noexcept { return decision_.started_at(); }
  steady_time decided_at() const noexcept { return decision_.decided_at(); }
  std::span<const node_outcome> outcomes() const noexcept { return outcomes_; }
  /// The most telling per-master error of a failed round: none when refusals
  /// outnumber errors (the lock is simply held elsewhere), else the first.
  boost::system::error_code failure() const;
  /// Largest `value` among the "yes" replies (for the winning choice, when
  /// they name one).
  std::int64_t max_value() const;

  void on_reply(std::uint32_t node, const boost::system::error_code& ec, const redisReply* reply) override;

 private:
  quorum_round(const std::shared_ptr<node_set>& masters, classify_fn classify, decided_fn on_decided);
  /// What every master is sent: the EVALSHA call, or the plain command.
  std::string_view command() const noexcept { return call_ ? call_->evalsha() : plain_.view(); }
  /// Stamps the round's start and deadline.
  void begin_round(const node_set& masters);

  // Weak: the connections' queues hold rounds, and the client holds the
  // connections; a strong link back would leak them all when the io_context
  // is destroyed without running again.
  std::weak_ptr<node_set> masters_;
  std::shared_ptr<const clock_source> clock_;
  std::shared_ptr<observer> observer_;  // may outlive the client, like the round itself
  std::optional<script_call> call_;  // empty: plain_ is a plain command
  command_buffer<160> plain_;  // inline: SET NX PX on short names fits
  std::string_view name_;  // the script's or the plain command's, for the observer
  classify_fn classify_;
  decided_fn on_decided_;
  late_reply_fn on_late_reply_;
  // Inline up to 9 masters: a round is made per attempt and per release.
  boost::container::small_vector<node_outcome, 9> outcomes_;
  quorum_decision decision_;
  delivery delivery_ = delivery::fail_fast;
  std::chrono::steady_clock::time_point sent_real_{};  // latencies are real time, whatever the clock
  std::chrono::steady_clock::time_point deadline_{};
};

using round_ptr = boost::intrusive_ptr<quorum_round>;

}  // namespace redlock::detail
