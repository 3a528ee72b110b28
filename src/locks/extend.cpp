// SPDX-License-Identifier: Apache-2.0
// Extend (and the watchdog's renewals): one round on a quorum that
// lengthens our keys, never shortens them (docs/algorithm.md, section 3,
// "Lease rules").
#include "kinds.hpp"
#include "lease/report.hpp"
#include "operations.hpp"
#include "quorum/validity.hpp"

#include <redlock/error.hpp>
#include <redlock/observer.hpp>

#include <algorithm>

namespace redlock::detail {

using boost::system::error_code;

namespace {

// A lease that won a quorum sets its key again (a mutex: SET NX,
// kind_rounds::repair) on the masters that answered this round that it was
// not ours (restarted empty, evicted), for what is left of the round's ttl:
// the lease is backed by those masters again, as after its acquisition.
// Why each limit:
// - only after a quorum vouched in this round, and not once released (a
//   release queued before the repair would be undone by it);
// - only on the masters that refused: a release by our token from elsewhere
//   (an operator, an adopting process) landing between our extend and the
//   repair deletes the keys where the extend found them, and those are a
//   quorum; the repair never sets them again there, so the next renewal
//   finds no quorum and the release stands;
// - NX: where anyone else's key sits (or a partial grant of another
//   client), nothing is touched;
// - never longer than the round's ttl, counted from its start (a client
//   clock that went back must not make the key outlive the others).
// A refusal that comes after the decision is repaired when it comes: a
// master restarted empty lost its scripts too, and its answer (after the
// NOSCRIPT fallback) is usually the last. Masters that did not answer are
// left to a later renewal.
bool repairs_keys(const lock_state& state) { return rounds_of(state).repair != nullptr; }

void repair_keys(const std::shared_ptr<client_impl>& client, const std::shared_ptr<lock_state>& state,
                 steady_time round_started, milliseconds ttl, const std::vector<std::uint32_t>& gone) {
  if (gone.empty() || state->released) return;
  auto elapsed = std::max(milliseconds(0), std::chrono::ceil<milliseconds>(state->now() - round_started));
  auto left = ttl - elapsed;
  if (left <= milliseconds(0)) return;
  auto on_done = [client, state](quorum_round& f) {
    std::size_t repaired = 0;
    for (auto& o : f.outcomes()) repaired += o.state == node_state::locked;
    if (repaired > 0)
      if (auto& obs = client->options.observer) obs->on_lease_repaired(state->name, repaired);
  };
  auto round = rounds_of(*state).repair(client, *state, left, std::move(on_done));
  round->wait_for_all();  // decided once every master asked answered: the repairs are counted
  round->start_on(gone);
}

std::vector<std::uint32_t> refused_by(const quorum_round& round) {
  std::vector<std::uint32_t> nodes;
  auto outcomes = round.outcomes();
  for (std::uint32_t i = 0; i < outcomes.size(); ++i)
    if (outcomes[i].state == node_state::refused) nodes.push_back(i);
  return nodes;
}

}  // namespace

void run_extend(const std::shared_ptr<client_impl>& client, const std::shared_ptr<lock_state>& state, milliseconds ttl,
                std::function<void(error_code)> done) {
  if (state->released) return done(errc::not_held);
  // This round extended the window, so refusals may be repaired (only kinds
  // that can be: no allocation for the others).
  auto vouched = repairs_keys(*state) ? std::make_shared<bool>(false) : nullptr;
  auto on_decided = [client, state, ttl, vouched, done = std::move(done), began = std::chrono::steady_clock::now()](
                        quorum_round& f) {
    auto ec = lease_round_error(f);
    if (!ec) {
      auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(f.decided_at() - f.started_at());
      if (state->released)
        ec = errc::not_held;  // released while this round was in flight
      else if (validity_left(ttl, elapsed, client->options.drift_factor) <= std::chrono::microseconds(0) ||
               !state->extend_window(f.started_at() + ttl - drift_allowance(ttl, client->options.drift_factor)))
        ec = errc::validity_expired;  // too slow, or the window ended while the round was in flight
    }
    // A failed round changed nothing the window relies on: extend never
    // shortens a key (lua/extend.lua), so the window stays where it was.
    if (auto& obs = client->options.observer) report_round_span(*obs, span_kind::extend, *state, f, ec, began);
    if (vouched) *vouched = !ec;
    if (!ec && vouched) repair_keys(client, state, f.started_at(), ttl, refused_by(f));
    done(ec);
  };
  auto round = rounds_of(*state).extend(client, *state, ttl, std::move(on_decided));
  round->settle_failure();  // "not held" needs every refusal counted
  if (vouched)
    round->on_late_reply([client, state, ttl, vouched, r = round.get()](std::uint32_t node, const node_outcome& said) {
      if (*vouched && said.state == node_state::refused) repair_keys(client, state, r->started_at(), ttl, {node});
    });
  round->start();
}

void start_extend(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state, milliseconds ttl,
                  done_handler handler) {
  auto h = std::make_shared<done_handler>(std::move(handler));
  run_extend(client, state, ttl, [client, h](error_code ec) { complete_handler(client, std::move(*h), ec); });
}

}  // namespace redlock::detail
