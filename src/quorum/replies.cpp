// SPDX-License-Identifier: Apache-2.0
#include "replies.hpp"

#include <redlock/error.hpp>

namespace redlock::detail {

verdict failed_reply(const redisReply& r, node_outcome& out) {
  out.error = r.type == REDIS_REPLY_ERROR ? classify_error_reply(reply_text(r)) : make_error_code(errc::protocol_error);
  return verdict::failed;
}

verdict classify_one_zero(const redisReply& r, node_outcome& out) {
  if (r.type == REDIS_REPLY_INTEGER) return r.integer == 1 ? verdict::yes : verdict::no;
  return failed_reply(r, out);
}

}  // namespace redlock::detail
