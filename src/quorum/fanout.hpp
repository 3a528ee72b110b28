// SPDX-License-Identifier: Apache-2.0
// The quorum coordinator: one script call sent to every master in parallel,
// each with its own deadline; decided as soon as the outcome is known (quorum
// of "yes", or so many "no"/failures that quorum is impossible). Replies after
// the decision are still consumed and recorded.
#pragma once

#include "connection/connection.hpp"
#include "scripts/script.hpp"

#include <redlock/lock.hpp>
#include <redlock/observer.hpp>

#include <functional>
#include <string>
#include <vector>

namespace redlock::detail {

class client_impl;

enum class verdict : std::uint8_t { yes, no, failed };

struct node_outcome;
/// Interprets one master's reply to a script, filling `out.value` (a number
/// the operation needs, e.g. a fence counter) or `out.error` (for `failed`).
using classify_fn = verdict (*)(const redisReply& reply, node_outcome& out);

struct node_outcome {
  node_state state = node_state::pending;
  std::vector<std::string> fields;  // array replies, kept only by classifiers that ask for it
  bool replied = false;  // false: still waiting (pending) or timed out (unknown)
  boost::system::error_code error;
  std::int64_t value = 0;
  std::chrono::microseconds latency{0};
};

class fanout final : public reply_sink {
 public:
  using decided_fn = std::function<void(fanout&)>;

  fanout(std::shared_ptr<client_impl> client, const script& s, std::vector<std::string> keys,
         std::vector<std::string> args, classify_fn classify, decided_fn on_decided);
  /// A plain command instead of a script (e.g. SET NX PX): `argv` is sent as is.
  fanout(std::shared_ptr<client_impl> client, std::vector<std::string> argv, classify_fn classify,
         decided_fn on_decided);

  /// Sends to every master (call on the strand).
  void start();
  /// Sends to these masters only (fire-and-forget rounds: it never decides).
  void start_on(const std::vector<std::uint32_t>& nodes);

  /// Decide only when every master answered or timed out (for reads that
  /// want each master's view, not a quorum).
  void wait_for_all() { wait_all_ = true; }
  /// Decide success at quorum as usual, but a failure only once every master
  /// answered or timed out: then the masters that "may hold" it are only those
  /// that granted, erred or timed out, not the ones merely slower to refuse.
  void settle_failure() { settle_failure_ = true; }
  /// A clean-up (a release): sent even to a master whose connection is in
  /// reconnect back-off, and a graceful shutdown waits for it (connection.hpp).
  void must_reach_every_master() { delivery_ = delivery::must_reach; }

  /// Called for each "yes" that arrives after the decision (a late grant, for
  /// example from a NOSCRIPT fallback that ran after a release was queued).
  void on_late_yes(std::function<void(std::uint32_t node)> f) { on_late_yes_ = std::move(f); }

  bool succeeded() const noexcept { return yes_ >= quorum_; }
  /// So many masters answered "no" that a quorum of "yes" was impossible
  /// whatever the others did: a definite refusal (for a lease: not held),
  /// unlike a round that merely missed its quorum through timeouts or errors.
  bool refused_by_quorum() const noexcept { return no_ > outcomes_.size() - quorum_; }
  std::size_t yes_count() const noexcept { return yes_; }
  /// Client-clock times: start of the round and moment of the decision.
  steady_time started_at() const noexcept { return started_at_; }
  steady_time decided_at() const noexcept { return decided_at_; }
  const std::vector<node_outcome>& outcomes() const noexcept { return outcomes_; }
  /// The most telling per-master error, for a failed round (a "no" beats errors:
  /// then the lock is simply held elsewhere).
  boost::system::error_code failure() const;
  /// Largest `value` among the "yes" replies.
  std::int64_t max_value() const;

  void on_reply(std::uint32_t node, const boost::system::error_code& ec, const redisReply* reply) override;

 private:
  void encode(std::string& out, bool with_body) const;
  /// Stamps the round's start and deadline; returns the encoded command.
  std::string begin_round(const client_impl& client);
  void maybe_decide();
  steady_time now() const;

  // Weak: the connections' queues hold fanouts, and the client holds the
  // connections; a strong link back would leak all three when the io_context
  // is destroyed without running again.
  std::weak_ptr<client_impl> client_;
  std::shared_ptr<const clock_source> clock_;
  std::shared_ptr<observer> observer_;  // may outlive the client, like the fanout itself
  const script* script_;  // null: args_ is a plain command
  std::vector<std::string> keys_;
  std::vector<std::string> args_;
  classify_fn classify_;
  decided_fn on_decided_;
  std::function<void(std::uint32_t)> on_late_yes_;
  std::vector<node_outcome> outcomes_;
  std::vector<bool> fell_back_;  // EVAL already tried after NOSCRIPT
  std::size_t quorum_;
  std::size_t yes_ = 0, no_ = 0, failed_ = 0;
  bool decided_ = false;
  bool wait_all_ = false;
  bool settle_failure_ = false;
  delivery delivery_ = delivery::fail_fast;
  steady_time started_at_{}, decided_at_{};
  std::chrono::steady_clock::time_point sent_real_{};
  std::chrono::steady_clock::time_point deadline_{};
};

}  // namespace redlock::detail
