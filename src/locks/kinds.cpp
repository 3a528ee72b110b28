// SPDX-License-Identifier: Apache-2.0
// The table of the lock kinds (each kind's entry is in its own file under
// kinds/), and what every kind's rounds share.
#include "kinds.hpp"
#include "kinds/encoding.hpp"

#include "quorum/replies.hpp"
#include "scripts/keys.hpp"

#include <redlock/error.hpp>

namespace redlock::detail {

using boost::system::error_code;

// Each kind's entry, defined in its file under kinds/ (`extern`: a const
// at namespace scope is file-local otherwise). A new kind is a new file
// there, its line here and in every_kind, and its lock_kind.
extern const kind_rounds mutex_rounds, reentrant_rounds, fair_rounds, semaphore_rounds, read_rounds, write_rounds,
    set_rounds;

namespace {
// In the order status tries them on a key: a read-write lock's hash before
// an owners' hash, whose values are numbers too.
constexpr const kind_rounds* every_kind[] = {&mutex_rounds,    &semaphore_rounds, &read_rounds, &write_rounds,
                                             &reentrant_rounds, &fair_rounds,      &set_rounds};
}  // namespace

const kind_rounds& rounds_of(lock_kind kind, bool together) {
  for (auto* rounds : every_kind)
    if (rounds->kind == kind && rounds->together == together) return *rounds;
  return mutex_rounds;  // not reached: only a mutex may hold names together (check_acquire, check_adopt)
}

std::span<const kind_rounds* const> every_kind_rounds() { return every_kind; }

void clean_up_attempt(const std::shared_ptr<client_impl>& client, lock_kind kind, const abandoned_attempt& attempt,
                      const std::vector<std::uint32_t>& nodes) {
  if (!nodes.empty()) rounds_of(kind, !attempt.keys.empty()).clean_up(client, attempt, nodes);
}

std::vector<std::string> with_holder_key(std::vector<std::string> script_keys, const std::string& key,
                                         bool described) {
  if (described) script_keys.push_back(keys::holder(key));
  return script_keys;
}

round_ptr described_acquire(const std::shared_ptr<client_impl>& client, const acquire_request& req, const script& s,
                            word_list script_keys, word_list args, classify_fn classify,
                            quorum_round::decided_fn done) {
  const bool described = !req.description.empty();
  const word holder = keys::word_of::holder(req.key), description = req.description;
  auto all_keys = with_last(script_keys, described ? &holder : nullptr);
  auto all_args = with_last(args, described ? &description : nullptr);
  return round_ptr(new quorum_round(client->masters, s, std::span<const word>(all_keys),
                                    std::span<const word>(all_args), classify, std::move(done)));
}

error_code lease_round_error(const quorum_round& round) {
  if (round.succeeded()) return {};
  if (round.refused_by_quorum()) return errc::not_held;
  for (auto& o : round.outcomes())
    if (o.error) return o.error;
  return errc::timeout;  // (cannot happen once every master answered or timed out)
}

std::vector<std::uint32_t> may_hold(const quorum_round& attempt) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < attempt.outcomes().size(); ++i)
    if (attempt.outcomes()[i].state != node_state::refused) out.push_back(i);
  return out;
}

}  // namespace redlock::detail
