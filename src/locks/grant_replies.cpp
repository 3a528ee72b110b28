// SPDX-License-Identifier: Apache-2.0
// How the acquire scripts' and SET NX PX's replies read as votes: a grant
// (with its fence counter or permit slot), a refusal, or a failure.
#include "kinds.hpp"

#include "quorum/replies.hpp"

namespace redlock::detail {

verdict classify_grant(const redisReply& r, node_outcome& out) {
  if (r.type == REDIS_REPLY_STATUS) return verdict::yes;
  if (r.type == REDIS_REPLY_INTEGER) {
    out.value = r.integer;  // fence counter
    return verdict::yes;
  }
  if (r.type == REDIS_REPLY_NIL) return verdict::no;
  return failed_reply(r, out);
}

// A round that only joins a mutex's line never takes the lock: nil, or
// whatever else, never a grant.
verdict classify_line(const redisReply& r, node_outcome& out) {
  if (r.type == REDIS_REPLY_NIL) return verdict::no;
  return failed_reply(r, out);
}

verdict classify_fair_grant(const redisReply& r, node_outcome& out) {
  if (r.type == REDIS_REPLY_INTEGER && r.integer < 0) {
    out.value = -1 - r.integer;  // our rank in this master's queue
    return verdict::no;
  }
  return classify_grant(r, out);
}

verdict classify_permit_grant(const redisReply& r, node_outcome& out) {
  auto position = [&](const redisReply& e) {
    if (e.type != REDIS_REPLY_INTEGER || e.integer < 0 || e.integer >= max_permits) return false;
    out.choice = static_cast<std::int32_t>(e.integer);
    return true;
  };
  if (r.type == REDIS_REPLY_INTEGER && position(r)) return verdict::yes;
  if (r.type == REDIS_REPLY_ARRAY && r.elements == 2 && position(*r.element[0]) &&
      r.element[1]->type == REDIS_REPLY_INTEGER) {
    out.value = r.element[1]->integer;  // the slot's fence counter
    return verdict::yes;
  }
  if (r.type == REDIS_REPLY_NIL) return verdict::no;
  return failed_reply(r, out);
}

verdict classify_multi_grant(const redisReply& r, node_outcome& out) {
  if (r.type == REDIS_REPLY_ARRAY) {
    for (std::size_t i = 0; i < r.elements; ++i) {
      // Counters are never negative: anything else is not our script's answer.
      if (r.element[i]->type != REDIS_REPLY_INTEGER || r.element[i]->integer < 0) return failed_reply(r, out);
      out.fields.push_back(std::to_string(r.element[i]->integer));
    }
    return verdict::yes;
  }
  return classify_grant(r, out);
}

}  // namespace redlock::detail
