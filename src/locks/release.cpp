// SPDX-License-Identifier: Apache-2.0
// Release: one round on every master; the lock has no validity left from
// the moment it is asked for (docs/algorithm.md, section 4).
#include "kinds.hpp"
#include "lease/report.hpp"
#include "lease/watchdog.hpp"
#include "operations.hpp"

#include <redlock/error.hpp>

namespace redlock::detail {

using boost::system::error_code;

void start_release(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state, done_handler handler) {
  // Reentrant and fair holds: the client's count decides which release is
  // the last; earlier ones only lower the masters' counts.
  bool last = true;
  if (!is_token_kind(state->kind)) {
    int left = state->holds.fetch_sub(1) - 1;
    if (left < 0) {
      state->holds.store(0);
      return complete_handler(client, std::move(handler), make_error_code(errc::not_held));
    }
    last = left == 0;
    // A read-write lock's re-entries were the client's alone.
    if (!last && is_rw_kind(state->kind)) return complete_handler(client, std::move(handler), error_code{});
  }
  if (last) {
    // Released means no validity, from the moment the release is asked for:
    // no round decided from now on (a renewal in flight) may bring it back.
    state->released = true;
    state->set_valid_until(steady_time{});
    if (auto dog = state->dog.lock()) dog->stop();
    if (auto confirmation = state->confirmation.lock()) confirmation->cancel();
    if (!state->registry_key.empty()) client->held.erase(state->registry_key);
    state->end_hold(hold_end::released);
  }
  // A mutex release that wakes a waiter may also list this client behind
  // it, when it was seen asking again at once: its next acquisition then
  // waits in line without a round of its own (section 10). Not a permit's:
  // a semaphore releaser that waited in line instead of taking its slot
  // back costs throughput (bench/README.md, "What the measurements
  // decided"). Such a
  // releaser's permit release names no one instead, and holds the wake-up
  // back until it is seen not to ask again (section 12).
  bool wakes_by_name = std::holds_alternative<mutex_fields>(state->of_kind);
  auto relist = wakes_by_name ? client->relisting(state->waiters_key()) : std::nullopt;
  auto* permit = state->fields_if<permit_fields>();
  bool quiet = permit && client->retakes_permits(state->waiters_key());
  // Before the caller hears of it: a mutex release that woke a waiter
  // makes this client's next acquisition of the lock join the line.
  auto on_decided = [client, h = std::move(handler), state, wakes_by_name, relist, permit, quiet,
                     began = std::chrono::steady_clock::now()](quorum_round& f) mutable {
    if (wakes_by_name) client->note_release_wake(state->waiters_key(), f, relist ? &*relist : nullptr);
    if (permit) client->note_permit_release(state->waiters_key(), permit->permit, state->token, f, quiet);
    auto ec = lease_round_error(f);
    if (auto& obs = client->options.observer) report_round_span(*obs, span_kind::release, *state, f, ec, began);
    complete_handler(client, std::move(h), ec);
  };
  release_terms how{last, quiet ? release_wake::report_first : release_wake::first_waiter,
                    relist ? &*relist : nullptr};
  auto round = rounds_of(*state).release(client, *state, how, std::move(on_decided));
  round->settle_failure();  // "not held" needs every refusal counted
  round->start();
}

}  // namespace redlock::detail
