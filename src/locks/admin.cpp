// SPDX-License-Identifier: Apache-2.0
// The operator's tools (`redlock list`, `redlock release --force`): the lock
// names on every master, walked with SCAN, and a forced release of one name
// (lua/force_release.lua).
#include "connection/resp.hpp"
#include "operations.hpp"
#include "quorum/replies.hpp"
#include "scripts/keys.hpp"
#include "scripts/script.hpp"

#include <redlock/error.hpp>

#include <array>
#include <charconv>
#include <chrono>
#include <optional>
#include <set>

namespace redlock::detail {

using boost::system::error_code;

namespace {

// `text` as a SCAN MATCH pattern that matches it literally.
std::string glob_escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The lock name key `key` stands for under `prefix` (the client's
// key_prefix), or nothing: a lock key is prefix + name; a semaphore has no
// key of its own, and stands as its record of permits ({prefix + name}:permits,
// keys::permits). Every other companion ({R}:fence, :wake, :queue, a permit
// slot...) belongs to its lock and is no name. (So, under an empty prefix, a
// name that itself starts with '{' is taken for a companion and not listed.)
std::optional<std::string_view> lock_name_of(std::string_view key, std::string_view prefix) {
  static constexpr std::string_view record = "}:permits";
  if (key.starts_with('{')) {
    if (!key.ends_with(record) || key.size() <= record.size() + 1) return std::nullopt;
    key = key.substr(1, key.size() - 1 - record.size());
  }
  if (!key.starts_with(prefix) || key.size() == prefix.size()) return std::nullopt;
  return key.substr(prefix.size());
}

// One listing: every master's walk adds to it, on the client's strand.
struct listing {
  // (The handler is moved in at construction: Boost 1.81's move assignment
  // of an any_completion_handler recurses without end.)
  listing(std::shared_ptr<client_impl> c, list_options o, boost::asio::any_completion_handler<list_signature> h)
      : client(std::move(c)), options(o), handler(std::move(h)) {}

  std::shared_ptr<client_impl> client;
  list_options options;
  // What SCAN looks for: the lock keys, then the semaphores' records (with
  // an empty prefix the first pattern finds them too; names are kept once).
  std::array<std::string, 2> patterns;
  std::set<std::string, std::less<>> names;
  lock_listing out;
  std::size_t walking = 0;  // masters whose walk is not over
  boost::asio::any_completion_handler<list_signature> handler;

  bool full() const { return names.size() > options.max_names; }
  void walk_ended() {
    if (--walking > 0) return;
    out.truncated = full();
    for (auto& n : names) {
      if (out.names.size() == options.max_names) break;
      out.names.push_back(n);
    }
    complete_handler(client, std::move(handler), error_code{}, std::move(out));
  }
};

// One master's SCAN cursor, one call at a time, each with the node timeout
// as its deadline: the master serves other clients between calls.
class scan_walk final : public reply_sink {
 public:
  scan_walk(std::shared_ptr<listing> l, std::uint32_t node) : listing_(std::move(l)), node_(node) {}

  void next() {
    auto& l = *listing_;
    command_.clear();
    auto count = std::to_string(l.options.scan_count);
    append_command(command_, {"SCAN", cursor_, "MATCH", l.patterns[pattern_], "COUNT", count});
    (*l.client->masters)[node_].send(command_, std::chrono::steady_clock::now() + l.client->masters->node_timeout,
                                     sink_ptr(this), node_);
  }

  void on_reply(std::uint32_t, const error_code& ec, const redisReply* reply) override {
    auto& l = *listing_;
    auto& error = l.out.nodes[node_].error;
    if (ec || !reply) error = ec;
    else if (reply->type == REDIS_REPLY_ERROR) error = classify_error_reply(reply_text(*reply));
    else if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 || reply->element[1]->type != REDIS_REPLY_ARRAY)
      error = make_error_code(errc::protocol_error);
    if (error) return l.walk_ended();
    auto& keys = *reply->element[1];
    for (std::size_t i = 0; i < keys.elements; ++i)
      if (auto name = lock_name_of(reply_text(*keys.element[i]), l.client->options.key_prefix))
        if (!l.names.contains(*name)) l.names.emplace(*name);
    if (l.full()) return l.walk_ended();  // enough: the other masters stop at their next reply
    cursor_ = reply_string(*reply->element[0]);
    if (cursor_ == "0" && ++pattern_ == l.patterns.size()) return l.walk_ended();
    next();
  }

 private:
  std::shared_ptr<listing> listing_;
  std::uint32_t node_;
  std::size_t pattern_ = 0;
  std::string cursor_ = "0";
  std::string command_;
};

// force_release.lua's answer: { found, then what, token, number, about per hold }.
verdict classify_forced(const redisReply& r, node_outcome& out) {
  if (r.type != REDIS_REPLY_ARRAY || r.elements == 0 || r.elements % 4 != 1) return failed_reply(r, out);
  for (std::size_t i = 0; i < r.elements; ++i) {
    if (r.element[i]->type != REDIS_REPLY_STRING) return failed_reply(r, out);
    out.fields.push_back(reply_string(*r.element[i]));
  }
  return verdict::yes;
}

node_forced_release decode_forced(const std::vector<std::string>& f) {
  node_forced_release n;
  n.found = f.front();
  for (std::size_t i = 1; i + 3 < f.size(); i += 4) {
    removed_hold h{f[i], f[i + 1], std::nullopt, f[i + 3]};
    std::uint64_t number = 0;
    auto& text = f[i + 2];
    if (auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
        ec == std::errc{} && end == text.data() + text.size() && !text.empty())
      h.number = number;
    n.removed.push_back(std::move(h));
  }
  return n;
}

}  // namespace

void start_list(std::shared_ptr<client_impl> client, list_options options,
                boost::asio::any_completion_handler<list_signature> handler) {
  auto l = std::make_shared<listing>(std::move(client), options, std::move(handler));
  auto prefix = glob_escaped(l->client->options.key_prefix);
  l->patterns = {prefix + "*", "\\{" + prefix + "*}:permits"};
  l->walking = l->client->masters->size();
  for (auto& c : l->client->masters->connections) l->out.nodes.push_back({c->display(), {}});
  for (std::uint32_t i = 0; i < l->client->masters->size(); ++i) boost::intrusive_ptr(new scan_walk(l, i))->next();
}

void start_force_release(std::shared_ptr<client_impl> client, std::string name, std::optional<key_content> only,
                         boost::asio::any_completion_handler<force_release_signature> handler) {
  auto key = client->key_for(name);
  auto h = std::make_shared<boost::asio::any_completion_handler<force_release_signature>>(std::move(handler));
  auto on_decided = [client, h](quorum_round& round) {
    std::vector<node_forced_release> out;
    for (std::size_t i = 0; i < round.outcomes().size(); ++i) {
      auto& o = round.outcomes()[i];
      node_forced_release n;
      if (o.state == node_state::pending) n.error = make_error_code(errc::timeout);
      else if (o.error) n.error = o.error;
      else n = decode_forced(o.fields);
      n.node = client->masters->connections[i]->display();
      out.push_back(std::move(n));
    }
    complete_handler(client, std::move(*h), error_code{}, std::move(out));
  };
  // One id for the release's copies on every master: waiters count them.
  auto release_id = client->new_token();
  std::string kind = only ? std::string(key_content_name(*only)) : std::string();
  round_ptr round(new quorum_round(client->masters, scripts::force_release,
                                   {key, keys::holder(key), keys::wake_list(key), keys::wake_deadlines(key),
                                    keys::queue(key), keys::queue_deadlines(key), keys::permits(key)},
                                   {kind, release_id, keys::released_channel(key), keys::leader_channel(key)},
                                   classify_forced, std::move(on_decided)));
  round->wait_for_all();
  round->start();
}

}  // namespace redlock::detail
