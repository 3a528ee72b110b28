// SPDX-License-Identifier: Apache-2.0
#include "quorum_round.hpp"

#include "scripts/script_call.hpp"

#include <redlock/error.hpp>
#include <redlock/observer.hpp>

#include <algorithm>
#include <array>

namespace redlock::detail {

using steady = std::chrono::steady_clock;

quorum_round::quorum_round(const std::shared_ptr<node_set>& masters, const script& s, std::vector<std::string> keys,
                           std::vector<std::string> args, classify_fn classify, decided_fn on_decided)
    : quorum_round(masters, &s, std::move(keys), std::move(args), classify, std::move(on_decided)) {}

quorum_round::quorum_round(const std::shared_ptr<node_set>& masters, std::vector<std::string> argv,
                           classify_fn classify, decided_fn on_decided)
    : quorum_round(masters, nullptr, {}, std::move(argv), classify, std::move(on_decided)) {}

quorum_round::quorum_round(const std::shared_ptr<node_set>& masters, const script* s, std::vector<std::string> keys,
                           std::vector<std::string> args, classify_fn classify, decided_fn on_decided)
    : masters_(masters),
      clock_(masters->clock),
      observer_(masters->observer),
      script_(s),
      keys_(std::move(keys)),
      args_(std::move(args)),
      classify_(classify),
      on_decided_(std::move(on_decided)),
      outcomes_(masters->size()),
      fell_back_(masters->size(), false),
      decision_(masters->size(), masters->quorum) {}

void quorum_round::encode(std::string& out, bool with_body) const {
  if (script_) return append_script_call(out, *script_, keys_, args_, with_body);
  // Plain commands are short (SET NX PX: 6 words): no vector for their views.
  constexpr std::size_t inline_words = 8;
  if (args_.size() <= inline_words) {
    std::array<std::string_view, inline_words> argv;
    std::copy(args_.begin(), args_.end(), argv.begin());
    return append_command(out, argv.data(), args_.size());
  }
  std::vector<std::string_view> argv(args_.begin(), args_.end());
  append_command(out, argv.data(), argv.size());
}

std::string quorum_round::begin_round(const node_set& masters) {
  decision_.start(masters.now());
  sent_real_ = steady::now();
  deadline_ = sent_real_ + masters.node_timeout;
  // One encoding, written to every master the round goes to.
  std::string command;
  encode(command, false);
  return command;
}

void quorum_round::start() {
  auto masters = masters_.lock();
  auto command = begin_round(*masters);
  sink_ptr self(this);
  for (std::uint32_t i = 0; i < outcomes_.size(); ++i) (*masters)[i].send(command, deadline_, self, i, delivery_);
}

void quorum_round::start_on(const std::vector<std::uint32_t>& nodes) {
  auto masters = masters_.lock();
  auto command = begin_round(*masters);
  sink_ptr self(this);
  for (auto i : nodes) (*masters)[i].send(command, deadline_, self, i, delivery_);
}

void quorum_round::on_reply(std::uint32_t node, const boost::system::error_code& ec, const redisReply* reply) {
  auto& o = outcomes_[node];
  if (reply && script_ && is_noscript(*reply) && !fell_back_[node]) {
    // The master lost its script cache (SCRIPT FLUSH, restart): send the body
    // once, within the same deadline.
    fell_back_[node] = true;
    if (auto masters = masters_.lock()) {
      std::string command;
      encode(command, true);
      (*masters)[node].send(command, deadline_, sink_ptr(this), node, delivery_);
      return;
    }
  }
  o.latency = std::chrono::duration_cast<std::chrono::microseconds>(steady::now() - sent_real_);
  o.fell_back = fell_back_[node];
  verdict v = verdict::failed;
  if (ec) {
    o.error = ec;
    // Sent but unanswered: it may have applied. Never sent: it did not.
    o.state = (ec == errc::timeout || ec == errc::connection_lost) ? node_state::unknown : node_state::failed;
  } else {
    v = classify_(*reply, o);
    o.state = v == verdict::yes ? node_state::locked : v == verdict::no ? node_state::refused : node_state::failed;
  }
  if (observer_) observer_->on_node_reply(node, script_ ? script_->name : std::string_view(args_[0]), o.latency, o.error);
  switch (decision_.record(v, clock_ ? clock_->now() : steady::now(), o.choice)) {
    case quorum_decision::effect::pending:
      return;
    case quorum_decision::effect::late:
      if (on_late_reply_) on_late_reply_(node, o);
      return;
    case quorum_decision::effect::decided: {
      auto callback = std::move(on_decided_);
      callback(*this);
      return;
    }
  }
}

boost::system::error_code quorum_round::failure() const {
  if (decision_.failed() <= decision_.refused_or_outvoted()) return {};
  for (auto& o : outcomes_)
    if (o.state == node_state::failed || o.state == node_state::unknown)
      if (o.error) return o.error;
  return {};
}

std::int64_t quorum_round::max_value() const {
  std::int64_t best = 0;
  for (auto& o : outcomes_)
    if (o.state == node_state::locked && o.choice == decision_.winner()) best = std::max(best, o.value);
  return best;
}

}  // namespace redlock::detail
