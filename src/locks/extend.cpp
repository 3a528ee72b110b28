// SPDX-License-Identifier: Apache-2.0
// Extend (and the watchdog's renewals): one round on a quorum that
// lengthens our keys, never shortens them (docs/algorithm.md, section 3,
// "Lease rules").
#include "kinds.hpp"
#include "lease/report.hpp"
#include "operations.hpp"
#include "quorum/validity.hpp"

#include <redlock/error.hpp>

namespace redlock::detail {

using boost::system::error_code;

void run_extend(const std::shared_ptr<client_impl>& client, const std::shared_ptr<lock_state>& state, milliseconds ttl,
                std::function<void(error_code)> done) {
  if (state->released) return done(errc::not_held);
  auto on_decided = [client, state, ttl, done = std::move(done), began = std::chrono::steady_clock::now()](
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
    done(ec);
  };
  auto round = rounds_of(*state).extend(client, *state, ttl, std::move(on_decided));
  round->settle_failure();  // "not held" needs every refusal counted
  round->start();
}

void start_extend(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state, milliseconds ttl,
                  done_handler handler) {
  auto h = std::make_shared<done_handler>(std::move(handler));
  run_extend(client, state, ttl, [client, h](error_code ec) { complete_handler(client, std::move(*h), ec); });
}

}  // namespace redlock::detail
