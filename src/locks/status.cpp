// SPDX-License-Identifier: Apache-2.0
// Status: each master's view of a lock, read-only (`redlock status`).
#include "kinds.hpp"
#include "operations.hpp"
#include "quorum/replies.hpp"
#include "scripts/keys.hpp"
#include "scripts/script.hpp"

#include <redlock/error.hpp>

#include <algorithm>
#include <charconv>

namespace redlock {

std::string_view key_content_name(key_content c) noexcept {
  switch (c) {
    case key_content::free: return "free";
    case key_content::mutex: return "mutex";
    case key_content::owners: return "owners";
    case key_content::foreign: return "foreign";
  }
  return "unknown";
}

namespace detail {

using boost::system::error_code;

namespace {

std::string text_of(const redisReply& e) {
  return e.type == REDIS_REPLY_INTEGER ? std::to_string(e.integer) : std::string(e.str ? e.str : "", e.len);
}

template <typename Int>
std::optional<Int> number(const std::string& s) {
  Int v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// status.lua answers { type, token, pttl, fence, {field, count, ...}, {waiter, ...}, about }.
// The outcome keeps it flat: type, token, pttl, fence, about, the number of
// owner entries, the entries, then the waiters (decoded again by decode).
verdict classify_status(const redisReply& r, node_outcome& out) {
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 7) return failed_reply(r, out);
  auto& owners = *r.element[4];
  auto& waiters = *r.element[5];
  if (owners.type != REDIS_REPLY_ARRAY || waiters.type != REDIS_REPLY_ARRAY || owners.elements % 2 != 0)
    return failed_reply(r, out);
  for (std::size_t i = 0; i < 4; ++i) out.fields.push_back(text_of(*r.element[i]));
  out.fields.push_back(text_of(*r.element[6]));
  out.fields.push_back(std::to_string(owners.elements));
  for (std::size_t i = 0; i < owners.elements; ++i) out.fields.push_back(text_of(*owners.element[i]));
  for (std::size_t i = 0; i < waiters.elements; ++i) out.fields.push_back(text_of(*waiters.element[i]));
  return verdict::yes;
}

// The description is shown only while the one it names holds the lock: a
// leftover of an earlier holder (crashed before its release) names a token
// or owner that is no longer there.
void describe_holder(const std::string& about, node_status& s) {
  auto take_if_named = [&](const std::string& who) {
    if (!who.empty() && about.size() > who.size() && about.compare(0, who.size(), who) == 0 && about[who.size()] == ' ')
      s.description = about.substr(who.size() + 1);
  };
  take_if_named(s.token);
  for (auto& o : s.owners) take_if_named(o.owner);
}

void decode(const std::vector<std::string>& f, node_status& s) {
  const std::string& type = f[0];
  s.pttl = std::chrono::milliseconds(number<long long>(f[2]).value_or(-2));
  if (!f[3].empty()) s.fence = number<std::uint64_t>(f[3]);
  const std::string& about = f[4];
  const std::size_t first_owner = 6;
  const std::size_t owner_entries = number<std::size_t>(f[5]).value_or(0);
  const std::size_t first_waiter = std::min(f.size(), first_owner + owner_entries);
  s.waiters.assign(f.begin() + static_cast<std::ptrdiff_t>(first_waiter), f.end());
  if (type == "none") return;
  if (type == "string") {
    s.content = key_content::mutex;
    s.token = f[1];
    describe_holder(about, s);
    return;
  }
  if (type == "hash") {
    s.content = key_content::owners;
    for (std::size_t i = first_owner; i + 1 < first_waiter; i += 2) {
      auto count = number<std::uint64_t>(f[i + 1]);
      if (!count) {  // not a count: this hash is someone else's data, not a lock
        s.owners.clear();
        break;
      }
      s.owners.push_back({f[i], *count});
    }
    if (!s.owners.empty()) {
      describe_holder(about, s);
      return;
    }
  }
  s.content = key_content::foreign;
  s.foreign_type = type;
}

}  // namespace

void start_status(std::shared_ptr<client_impl> client, std::string name, status_handler handler) {
  auto key = client->key_for(name);
  auto h = std::make_shared<status_handler>(std::move(handler));
  auto on_decided = [client, h](quorum_round& f) {
    std::vector<node_status> out;
    for (std::size_t i = 0; i < f.outcomes().size(); ++i) {
      auto& o = f.outcomes()[i];
      node_status s;
      s.node = client->masters->connections[i]->display();
      s.error = o.state == node_state::pending ? make_error_code(errc::timeout) : o.error;
      if (!s.error && o.fields.size() >= 6) decode(o.fields, s);
      out.push_back(std::move(s));
    }
    complete_handler(client, std::move(*h), error_code{}, std::move(out));
  };
  round_ptr round(new quorum_round(client->masters, scripts::status,
                                   {key, keys::fence(key), keys::queue(key), keys::holder(key)}, {},
                                   classify_status,
                                   std::move(on_decided)));
  round->wait_for_all();
  round->start();
}

}  // namespace detail
}  // namespace redlock
