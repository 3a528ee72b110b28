// SPDX-License-Identifier: Apache-2.0
#include "fanout.hpp"

#include "client/client_impl.hpp"

#include <redlock/error.hpp>
#include <redlock/observer.hpp>

namespace redlock::detail {

using steady = std::chrono::steady_clock;

fanout::fanout(std::shared_ptr<client_impl> client, const script& s, std::vector<std::string> keys,
               std::vector<std::string> args, classify_fn classify, decided_fn on_decided)
    : client_(client),
      clock_(client->options.clock),
      observer_(client->options.observer),
      script_(&s),
      keys_(std::move(keys)),
      args_(std::move(args)),
      classify_(classify),
      on_decided_(std::move(on_decided)),
      outcomes_(client->nodes.size()),
      fell_back_(client->nodes.size(), false),
      quorum_(client->quorum) {}

steady_time fanout::now() const { return clock_ ? clock_->now() : std::chrono::steady_clock::now(); }

fanout::fanout(std::shared_ptr<client_impl> client, std::vector<std::string> argv, classify_fn classify,
               decided_fn on_decided)
    : client_(client),
      clock_(client->options.clock),
      observer_(client->options.observer),
      script_(nullptr),
      args_(std::move(argv)),
      classify_(classify),
      on_decided_(std::move(on_decided)),
      outcomes_(client->nodes.size()),
      fell_back_(client->nodes.size(), false),
      quorum_(client->quorum) {}

void fanout::encode(std::string& out, bool with_body) const {
  if (!script_) {
    std::vector<std::string_view> argv(args_.begin(), args_.end());
    append_command(out, argv.data(), argv.size());
    return;
  }
  std::vector<std::string_view> argv;
  argv.reserve(3 + keys_.size() + args_.size());
  auto numkeys = std::to_string(keys_.size());
  argv.push_back(with_body ? "EVAL" : "EVALSHA");
  argv.push_back(with_body ? script_->body : script_->sha1);
  argv.push_back(numkeys);
  argv.insert(argv.end(), keys_.begin(), keys_.end());
  argv.insert(argv.end(), args_.begin(), args_.end());
  append_command(out, argv.data(), argv.size());
}

std::string fanout::begin_round(const client_impl& client) {
  started_at_ = now();
  sent_real_ = steady::now();
  deadline_ = sent_real_ + client.options.node_timeout;
  // One encoding, written to every master the round goes to.
  std::string command;
  encode(command, false);
  return command;
}

void fanout::start() {
  auto client = client_.lock();
  auto command = begin_round(*client);
  sink_ptr self(this);
  for (std::uint32_t i = 0; i < outcomes_.size(); ++i) client->nodes[i]->send(command, deadline_, self, i, delivery_);
}

void fanout::start_on(const std::vector<std::uint32_t>& nodes) {
  auto client = client_.lock();
  auto command = begin_round(*client);
  sink_ptr self(this);
  for (auto i : nodes) client->nodes[i]->send(command, deadline_, self, i, delivery_);
}

void fanout::on_reply(std::uint32_t node, const boost::system::error_code& ec, const redisReply* reply) {
  auto& o = outcomes_[node];
  if (reply && script_ && is_noscript(*reply) && !fell_back_[node]) {
    // The master lost its script cache (SCRIPT FLUSH, restart): send the body
    // once, within the same deadline.
    fell_back_[node] = true;
    if (auto client = client_.lock()) {
      std::string command;
      encode(command, true);
      client->nodes[node]->send(command, deadline_, sink_ptr(this), node, delivery_);
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
    o.replied = true;
    v = classify_(*reply, o);
    o.state = v == verdict::yes ? node_state::locked : v == verdict::no ? node_state::refused : node_state::failed;
  }
  (v == verdict::yes ? yes_ : v == verdict::no ? no_ : failed_) += 1;
  if (observer_) observer_->on_node_reply(node, script_ ? script_->name : std::string_view(args_[0]), o.latency, o.error);
  if (decided_ && v == verdict::yes && on_late_yes_) return on_late_yes_(node);
  maybe_decide();
}

void fanout::maybe_decide() {
  if (decided_) return;
  std::size_t n = outcomes_.size();
  bool all = yes_ + no_ + failed_ == n;
  bool lost = no_ + failed_ > n - quorum_ && !settle_failure_;
  bool done = wait_all_ ? all : (yes_ >= quorum_ || lost || all);
  if (!done) return;
  decided_ = true;
  decided_at_ = now();
  auto callback = std::move(on_decided_);
  callback(*this);
}

boost::system::error_code fanout::failure() const {
  if (failed_ <= no_) return {};
  for (auto& o : outcomes_)
    if (o.state == node_state::failed || o.state == node_state::unknown)
      if (o.error) return o.error;
  return {};
}

std::int64_t fanout::max_value() const {
  std::int64_t best = 0;
  for (auto& o : outcomes_)
    if (o.state == node_state::locked) best = std::max(best, o.value);
  return best;
}

}  // namespace redlock::detail
