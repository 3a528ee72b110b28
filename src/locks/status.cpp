// SPDX-License-Identifier: Apache-2.0
// Status: each master's view of a lock, read-only (`redlock status`).
#include "connection/resp.hpp"
#include "kinds.hpp"
#include "kinds/status_record.hpp"
#include "operations.hpp"
#include "quorum/replies.hpp"
#include "scripts/keys.hpp"
#include "scripts/script.hpp"

#include <redlock/error.hpp>

#include <algorithm>

namespace redlock {

std::string_view key_content_name(key_content c) noexcept {
  switch (c) {
    case key_content::free: return "free";
    case key_content::mutex: return "mutex";
    case key_content::reentrant: return "owners";
    case key_content::foreign: return "foreign";
    case key_content::semaphore: return "semaphore";
    case key_content::rwlock: return "rwlock";
  }
  return "unknown";
}

namespace detail {

using boost::system::error_code;

namespace {

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

// What is under the name, as the first kind that recognises it reads it
// (every_kind_rounds); a key that none does is someone else's data.
void decode(const std::vector<std::string>& f, node_lock_view& s) {
  s.pttl = std::chrono::milliseconds(number<long long>(f[2]).value_or(-2));
  if (!f[3].empty()) s.fence = number<std::uint64_t>(f[3]);
  auto count = [&](std::size_t i) { return std::min(number<std::size_t>(f[i]).value_or(0), f.size()); };
  auto first_owner = f.begin() + status_head;
  auto first_waiter = std::min(f.end(), first_owner + static_cast<std::ptrdiff_t>(count(5)));
  auto first_permit = std::min(f.end(), first_waiter + static_cast<std::ptrdiff_t>(count(6)));
  s.waiters.assign(first_waiter, first_permit);
  const status_record record{f[0], f[1], f[4], {first_owner, first_waiter}, {first_permit, f.end()}};
  for (auto* kind : every_kind_rounds())
    if (kind->decode_status && kind->decode_status(record, s)) return;
  if (record.type == "none") return;  // free
  s.content = key_content::foreign;
  s.foreign_type = record.type;
}

}  // namespace

void describe_holder(const std::string& about, node_lock_view& s) {
  auto take_if_named = [&](const std::string& who) {
    if (!who.empty() && about.size() > who.size() && about.compare(0, who.size(), who) == 0 && about[who.size()] == ' ')
      s.description = about.substr(who.size() + 1);
  };
  take_if_named(s.token);
  for (auto& o : s.owners) take_if_named(o.owner);
}

void start_status(std::shared_ptr<client_impl> client, std::string name, status_handler handler) {
  auto key = client->key_for(name);
  auto h = std::make_shared<status_handler>(std::move(handler));
  auto on_decided = [client, h](quorum_round& f) {
    std::vector<node_lock_view> out;
    for (std::size_t i = 0; i < f.outcomes().size(); ++i) {
      auto& o = f.outcomes()[i];
      node_lock_view s;
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
