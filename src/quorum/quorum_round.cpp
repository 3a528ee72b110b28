// SPDX-License-Identifier: Apache-2.0
#include "quorum_round.hpp"

#include <redlock/error.hpp>
#include <redlock/observer.hpp>

#include <algorithm>

namespace redlock::detail {

using steady = std::chrono::steady_clock;

quorum_round::quorum_round(const std::shared_ptr<node_set>& masters, const script& s, word_list keys,
                           word_list args, classify_fn classify, decided_fn on_decided)
    : quorum_round(masters, classify, std::move(on_decided)) {
  call_.emplace(s, keys, args);
  name_ = s.name;
}

quorum_round::quorum_round(const std::shared_ptr<node_set>& masters, word_list argv, classify_fn classify,
                           decided_fn on_decided)
    : quorum_round(masters, classify, std::move(on_decided)) {
  append_command(plain_, argv);
  // The command's name, inside the encoding: after the array header and
  // its first word's length line.
  if (argv.size() == 0) return;  // (no caller sends nothing)
  auto name_size = argv[0].size();
  name_ = plain_.view().substr(array_header_size(argv.size()) + bulk_size(name_size) - name_size - 2,
                                          name_size);
}

quorum_round::quorum_round(const std::shared_ptr<node_set>& masters, classify_fn classify, decided_fn on_decided)
    : masters_(masters),
      clock_(masters->clock),
      observer_(masters->observer),
      classify_(classify),
      on_decided_(std::move(on_decided)),
      outcomes_(masters->size()),
      decision_(masters->size(), masters->quorum) {}

void quorum_round::begin_round(const node_set& masters) {
  decision_.start(masters.now());
  sent_real_ = steady::now();
  deadline_ = sent_real_ + masters.node_timeout;
}

void quorum_round::start() {
  auto masters = masters_.lock();
  begin_round(*masters);
  sink_ptr self(this);
  for (std::uint32_t i = 0; i < outcomes_.size(); ++i) (*masters)[i].send(command(), deadline_, self, i, delivery_);
}

void quorum_round::start_on(const std::vector<std::uint32_t>& nodes) {
  auto masters = masters_.lock();
  begin_round(*masters);
  decision_.ask_only(nodes.size());
  sink_ptr self(this);
  for (auto i : nodes) (*masters)[i].send(command(), deadline_, self, i, delivery_);
}

void quorum_round::on_reply(std::uint32_t node, const boost::system::error_code& ec, const redisReply* reply) {
  auto& o = outcomes_[node];
  if (reply && call_ && is_noscript(*reply) && !o.fell_back) {
    // The master lost its script cache (SCRIPT FLUSH, restart): send the body
    // once, within the same deadline.
    o.fell_back = true;
    if (auto masters = masters_.lock()) {
      (*masters)[node].send(call_->eval(), deadline_, sink_ptr(this), node, delivery_);
      return;
    }
  }
  o.latency = std::chrono::duration_cast<std::chrono::microseconds>(steady::now() - sent_real_);
  verdict v = verdict::failed;
  if (ec) {
    o.error = ec;
    // Sent but unanswered: it may have applied. Never sent: it did not.
    o.state = (ec == errc::timeout || ec == errc::connection_lost) ? node_state::unknown : node_state::failed;
  } else {
    v = classify_(*reply, o);
    o.state = v == verdict::yes ? node_state::locked : v == verdict::no ? node_state::refused : node_state::failed;
  }
  if (observer_) observer_->on_node_reply(node, name_, o.latency, o.error);
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
