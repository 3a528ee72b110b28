// SPDX-License-Identifier: Apache-2.0
// Re-entry of a reentrant or fair hold this owner already has (docs/
// algorithm.md, section 7): one round, no new token, no queue, no retry. It
// succeeds only where our field still is, moves the window like an extend
// (later, never earlier), and a failed re-entry undoes its own increment,
// only where it applied.
#include "kinds.hpp"
#include "lease/report.hpp"
#include "operations.hpp"
#include "quorum/validity.hpp"

#include <redlock/error.hpp>
#include <redlock/observer.hpp>

namespace redlock::detail {

using boost::system::error_code;

namespace {

class reentry_op : public std::enable_shared_from_this<reentry_op> {
 public:
  reentry_op(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> held, acquire_options options,
             acquire_handler handler)
      : client_(std::move(client)), held_(std::move(held)), options_(std::move(options)), handler_(std::move(handler)) {}

  void start() {
    // A hold whose window ended (or that renewal gave up) is over for its
    // owner, whatever the masters still hold: re-entering it would stretch
    // a critical section that already ran out of time.
    if (held_->lapsed()) return complete(errc::not_held);
    // The first acquisition drew no fencing token: there is none to give.
    if (options_.fenced && !held_->fence) return complete(errc::unfenced_hold);
    if (client_->stopped) return complete(errc::shutting_down);
    rounds_ = 1;
    if (auto& obs = client_->options.observer) obs->on_acquire_attempt(held_->name, rounds_);
    acquire_request req{options_.kind, held_->key, held_->token, options_.ttl, /*fenced*/ false, /*reenter*/ true};
    req.hold_id = held_->hold_id();
    req.queue_timeout = options_.queue_timeout;
    auto round = acquire_round(client_, req, [self = shared_from_this()](quorum_round& f) { self->on_decided(f); });
    // A level that lands after a failed re-entry is undone too; a late level
    // of a good one stays.
    round->on_late_reply([self = shared_from_this()](std::uint32_t node, const node_outcome& said) {
      if (self->failed_ && said.state == node_state::locked) undo_reentry(self->client_, self->held_->key, self->held_->token, {node});
    });
    round->settle_failure();  // "not held" only when every refusal was counted
    round->start();
  }

 private:
  void on_decided(quorum_round& f) {
    tally_ = tally(f.outcomes());
    if (options_.report) {
      options_.report->last_attempt = node_votes_of(f);
      client_->name_nodes(options_.report->last_attempt);
    }
    auto why = lease_round_error(f);
    // The owner's last release, the loss of the lease or the end of its
    // window while this round was in flight ends the hold, this level included.
    if (!why && (held_->released || held_->lapsed())) why = errc::not_held;
    if (!why && !f.decision().acquired(options_.ttl, client_->options.drift_factor, options_.min_validity))
      why = errc::validity_expired;
    if (!why) {
      held_->holds.fetch_add(1);
      held_->extend_window(f.decision().window_end(options_.ttl, client_->options.drift_factor));
      return complete({});
    }
    failed_ = true;
    std::vector<std::uint32_t> applied;
    for (std::uint32_t i = 0; i < f.outcomes().size(); ++i)
      if (f.outcomes()[i].state == node_state::locked) applied.push_back(i);
    if (!applied.empty()) undo_reentry(client_, held_->key, held_->token, applied);
    complete(why);
  }

  void complete(error_code ec) {
    if (options_.report) options_.report->attempts = rounds_;
    if (auto& obs = client_->options.observer) {
      auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started_);
      report_acquisition(*obs, {held_->name, options_.kind, ec, took, rounds_}, client_->masters->size(),
                         tally_);
    }
    complete_handler(client_, std::move(handler_), ec, ec ? lock{} : lock_access::make(held_));
  }

  std::shared_ptr<client_impl> client_;
  std::shared_ptr<lock_state> held_;
  acquire_options options_;
  acquire_handler handler_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  unsigned rounds_ = 0;
  round_tally tally_;
  bool failed_ = false;  // the round failed: its late levels are undone too
};

}  // namespace

void start_reentry(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> held, acquire_options options,
                   acquire_handler handler) {
  std::make_shared<reentry_op>(std::move(client), std::move(held), std::move(options), std::move(handler))->start();
}

}  // namespace redlock::detail
