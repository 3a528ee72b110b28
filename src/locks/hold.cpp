// SPDX-License-Identifier: Apache-2.0
#include "hold.hpp"

#include "kinds.hpp"
#include "lease/watchdog.hpp"
#include "operations.hpp"
#include "quorum/validity.hpp"

#include <boost/asio/post.hpp>

namespace redlock::detail {

std::shared_ptr<lock_state> find_hold(client_impl& client, const std::string& key, const std::string& field) {
  auto it = client.held.find(registry_key(key, field));
  if (it == client.held.end()) return nullptr;
  auto held = it->second.lock();
  if (held && (held->released || held->holds.load() <= 0)) return nullptr;
  return held;
}

std::shared_ptr<lock_state> new_lock_state(const client_impl& client, const acquire_options& options,
                                           acquired_hold hold) {
  auto s = std::make_shared<lock_state>();
  s->name = std::move(hold.name);
  s->key = std::move(hold.key);
  s->token = std::move(hold.token);
  s->ttl = options.ttl;
  s->clock = client.options.clock;
  s->owner = &client;
  s->kind = options.kind;
  s->hold_id = hold.hold_id;
  s->set_valid_until(hold.valid_until);
  s->fence = hold.fence;
  s->described = !options.description.empty();
  s->permits = options.permits;
  s->nodes = std::move(hold.nodes);
  return s;
}

void begin_holding(const std::shared_ptr<client_impl>& client, const std::shared_ptr<lock_state>& state,
                   const acquire_options& options, bool confirm_handover) {
  if (is_rw_kind(options.kind)) {
    if (!options.owner.empty()) {
      state->registry_key = registry_key(state->key, rw_owner_field(client->client_id, options.owner));
      client->held[state->registry_key] = state;
    }
  } else if (!is_token_kind(options.kind)) {
    state->registry_key = registry_key(state->key, state->token);
    client->held[state->registry_key] = state;
  }
  // Granted at quorum: masters that did not grant it may still queue us
  // (ahead of others there). Leave every queue now, not at the sweep; but
  // only once the caller has its lock: sending to every master first
  // delayed it by about 100 µs in the contended_fair bench (each write wakes
  // a master that competes for the CPU).
  if (options.kind == lock_kind::fair) {
    std::optional<milliseconds> extend_to;
    if (confirm_handover) extend_to = options.ttl;
    auto drift_factor = client->options.drift_factor;
    auto on_left = [weak = std::weak_ptr<lock_state>(state), confirm_handover, drift_factor](quorum_round& f) {
      auto s = weak.lock();
      if (!confirm_handover || !s || !f.succeeded()) return;
      s->extend_window(window_end(f.started_at(), s->ttl, drift_factor));
    };
    // A hold handed over by a release was written by the releaser's script,
    // which knows no description: the confirmation writes it.
    auto description = confirm_handover ? options.description : std::string();
    boost::asio::post(client->strand, [client, key = state->key, token = state->token, hold_id = state->hold_id,
                                       extend_to, description = std::move(description),
                                       on_left = std::move(on_left)]() mutable {
      leave_queue(client, key, token, hold_id, extend_to, description, std::move(on_left));
    });
  }
  if (options.renew) {
    state->on_lost = options.on_lost;
    // The extend script compares our token on each master: a renewal can
    // never extend a lock someone else holds now.
    auto renew = [weak = std::weak_ptr<client_impl>(client)](const std::shared_ptr<lock_state>& s,
                                                             std::function<void(boost::system::error_code)> done) {
      auto c = weak.lock();
      if (c && !c->stopped) run_extend(c, s, s->ttl, std::move(done));
    };
    state->dog = std::make_shared<watchdog>(client->strand, client->executor, client->options.observer, state,
                                            options.renew_fraction, options.max_hold, std::move(renew));
    state->dog->start();
  }
}

}  // namespace redlock::detail
