// SPDX-License-Identifier: Apache-2.0
// How common replies read as verdicts (the lock kinds add their own).
#pragma once

#include "quorum_round.hpp"

namespace redlock::detail {

/// An error reply, or one of an unexpected type: failed, with the error.
verdict failed_reply(const redisReply& r, node_outcome& out);
/// 1 = yes, 0 = no (scripts that check ownership, then act).
verdict classify_one_zero(const redisReply& r, node_outcome& out);

}  // namespace redlock::detail
