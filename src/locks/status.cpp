// SPDX-License-Identifier: Apache-2.0
// Status: each master's view of a lock, read-only (`redlock status`).
#include "connection/resp.hpp"
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
    case key_content::semaphore: return "semaphore";
    case key_content::rwlock: return "rwlock";
  }
  return "unknown";
}

namespace detail {

using boost::system::error_code;

namespace {

template <typename Int>
std::optional<Int> number(const std::string& s) {
  Int v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// status.lua answers { type, token, pttl, fence, {field, count, ...}, {waiter, ...}, about, permits }.
// The outcome keeps it flat: type, token, pttl, fence, about, the number of
// owner entries, of waiters and of permit entries, then the owner entries,
// the waiters and the permit entries (decoded again by decode).
constexpr std::size_t status_head = 8;
verdict classify_status(const redisReply& r, node_outcome& out) {
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 8) return failed_reply(r, out);
  auto& owners = *r.element[4];
  auto& waiters = *r.element[5];
  auto& permits = *r.element[7];
  if (owners.type != REDIS_REPLY_ARRAY || waiters.type != REDIS_REPLY_ARRAY || permits.type != REDIS_REPLY_ARRAY ||
      owners.elements % 2 != 0 || (permits.elements > 0 && permits.elements % 5 != 1))
    return failed_reply(r, out);
  for (std::size_t i = 0; i < 4; ++i) out.fields.push_back(reply_string(*r.element[i]));
  out.fields.push_back(reply_string(*r.element[6]));
  for (auto* list : {&owners, &waiters, &permits}) out.fields.push_back(std::to_string(list->elements));
  for (auto* list : {&owners, &waiters, &permits})
    for (std::size_t i = 0; i < list->elements; ++i) out.fields.push_back(reply_string(*list->element[i]));
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

// A semaphore's record: its number of permits, then per held slot: slot,
// token, pttl, fence, description (shown only for the token it names).
void decode_permits(std::vector<std::string>::const_iterator p, std::vector<std::string>::const_iterator end,
                    node_status& s) {
  if (p == end) return;
  s.content = key_content::semaphore;
  s.permits = number<unsigned>(*p++);
  for (; end - p >= 5; p += 5) {
    permit_hold h;
    h.permit = number<unsigned>(p[0]).value_or(0);
    h.token = p[1];
    h.pttl = std::chrono::milliseconds(number<long long>(p[2]).value_or(-2));
    if (!p[3].empty()) h.fence = number<std::uint64_t>(p[3]);
    node_status slot;
    slot.token = h.token;
    describe_holder(p[4], slot);
    h.description = std::move(slot.description);
    s.permit_holds.push_back(std::move(h));
  }
}

void decode(const std::vector<std::string>& f, node_status& s) {
  const std::string& type = f[0];
  s.pttl = std::chrono::milliseconds(number<long long>(f[2]).value_or(-2));
  if (!f[3].empty()) s.fence = number<std::uint64_t>(f[3]);
  const std::string& about = f[4];
  auto count = [&](std::size_t i) { return std::min(number<std::size_t>(f[i]).value_or(0), f.size()); };
  auto first_owner = f.begin() + status_head;
  auto first_waiter = std::min(f.end(), first_owner + static_cast<std::ptrdiff_t>(count(5)));
  auto first_permit = std::min(f.end(), first_waiter + static_cast<std::ptrdiff_t>(count(6)));
  s.waiters.assign(first_waiter, first_permit);
  if (type == "none") return decode_permits(first_permit, f.end(), s);
  if (type == "string") {
    s.content = key_content::mutex;
    s.token = f[1];
    describe_holder(about, s);
    return;
  }
  if (type == "hash" && first_owner != first_waiter) {
    // A read-write lock: every field a hold, 'r:' or 'w:' and a deadline
    // (rw_acquire.lua). (A lapsed hold the next script will drop may show.)
    bool rw = true;
    for (auto o = first_owner; o + 1 < first_waiter; o += 2) rw &= o->starts_with("r:") || o->starts_with("w:");
    if (rw) {
      s.content = key_content::rwlock;
      for (auto o = first_owner; o + 1 < first_waiter; o += 2) s.owners.push_back({*o, 1});
      return;
    }
  }
  if (type == "hash") {
    s.content = key_content::owners;
    for (auto o = first_owner; o + 1 < first_waiter; o += 2) {
      auto entered = number<std::uint64_t>(o[1]);
      if (!entered) {  // not a count: this hash is someone else's data, not a lock
        s.owners.clear();
        break;
      }
      s.owners.push_back({*o, *entered});
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
      if (!s.error && o.fields.size() >= status_head) decode(o.fields, s);
      out.push_back(std::move(s));
    }
    complete_handler(client, std::move(*h), error_code{}, std::move(out));
  };
  round_ptr round(new quorum_round(client->masters, scripts::status,
                                   {key, keys::fence(key), keys::queue(key), keys::holder(key), keys::permits(key)}, {},
                                   classify_status,
                                   std::move(on_decided)));
  round->wait_for_all();
  round->start();
}

}  // namespace detail
}  // namespace redlock
