// SPDX-License-Identifier: Apache-2.0
#include "hold.hpp"

#include "kinds.hpp"
#include "lease/report.hpp"
#include "lease/watchdog.hpp"
#include "operations.hpp"
#include "quorum/validity.hpp"

#include <redlock/error.hpp>

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
  s->of_kind = std::move(hold.of_kind);
  s->set_valid_until(hold.valid_until);
  s->fence = hold.fence;
  s->described = !options.description.empty();
  s->answers = std::move(hold.answers);
  s->node_names = client.node_names;
  return s;
}

namespace {

// Fair: leave every queue, and for a hand-over, extend the hold to the ttl
// (the window with it) and write the description the releaser could not.
void confirm_fair_hold(const std::shared_ptr<client_impl>& client, const std::shared_ptr<lock_state>& state,
                       fair_win how, const std::string& description, const std::vector<std::uint32_t>& nodes) {
  std::optional<milliseconds> extend_to;
  if (how == fair_win::handed_short) extend_to = state->ttl;
  auto drift_factor = client->options.drift_factor;
  // The confirmation moves the window as an extend does: the observer hears
  // it as an extend span (a tracer, and the fault suite's check that a
  // window never comes back unless a round moved it, see it).
  auto on_left = [weak = std::weak_ptr<lock_state>(state), extend_to, drift_factor, obs = client->options.observer,
                  began = std::chrono::steady_clock::now()](quorum_round& f) {
    auto s = weak.lock();
    if (!extend_to || !s || !f.succeeded()) return;
    bool moved = s->extend_window(window_end(f.started_at(), s->ttl, drift_factor));
    auto ec = moved ? boost::system::error_code{} : make_error_code(errc::validity_expired);
    if (obs) report_round_span(*obs, span_kind::extend, *s, f, ec, began);
  };
  leave_queue(client, state->key, state->token, state->hold_id(), extend_to, description, nodes, std::move(on_left));
}

}  // namespace

void begin_holding(const std::shared_ptr<client_impl>& client, const std::shared_ptr<lock_state>& state,
                   const acquire_options& options, fair_win how, std::vector<std::uint32_t> in_line_on) {
  if (auto& obs = client->options.observer) {
    state->hold_observer = obs;
    state->held_since = std::chrono::steady_clock::now();
    obs->on_hold_begin(state->name, state->kind);
  }
  if (is_rw_kind(options.kind)) {
    if (!options.owner.empty()) {
      state->registry_key = registry_key(state->key, rw_owner_field(client->client_id, options.owner));
      client->held[state->registry_key] = state;
    }
  } else if (!is_token_kind(options.kind)) {
    state->registry_key = registry_key(state->key, state->token);
    client->held[state->registry_key] = state;
  }
  // Won by polls: the masters that queued us or granted us in line keep us
  // in line until we win (fair_acquire.lua); `in_line_on` lists them, and
  // those that have not answered yet (acquire_op::on_late_poll_reply sends
  // to them when they do). Leave those queues now, not at the sweep; but
  // only once the caller has its lock: sending first delays it (each write
  // wakes a master that competes for the CPU; bench/README.md, "What the
  // measurements decided"). Granted out of line everywhere (the lock was
  // free, nobody waiting): nothing to send.
  // Won by hand-over: the masters that handed it over took us out of line,
  // and wherever else we are still in line our release takes us out
  // (reentrant_release.lua); meanwhile that entry lets no one else win, as
  // we hold a quorum. So the round is sent only for what it adds: the
  // description, at once; the ttl of a hold handed over for only our queue
  // timeout, when a third of that window has passed (a renewed lock gets it
  // from its watchdog's extend instead); nothing at all for a lock released
  // before then, which saves a script call per master per hand-off.
  if (options.kind == lock_kind::fair) {
    bool by_poll = how == fair_win::by_poll;
    if (by_poll ? !in_line_on.empty() : !options.description.empty()) {
      // A hold handed over was written by the releaser's script, which knows
      // no description: the confirmation writes it, on every master.
      auto description = by_poll ? std::string() : options.description;
      if (!by_poll) in_line_on = client->masters->all();
      boost::asio::post(client->strand, [client, state, how, description = std::move(description),
                                         nodes = std::move(in_line_on)] {
        confirm_fair_hold(client, state, how, description, nodes);
      });
    } else if (how == fair_win::handed_short && !options.renew) {
      auto third = (state->get_valid_until() - state->now()) / 3;
      auto timer = std::make_shared<boost::asio::steady_timer>(client->strand, third);
      state->confirmation = timer;
      timer->async_wait([timer, weak_client = std::weak_ptr<client_impl>(client),
                         weak_state = std::weak_ptr<lock_state>(state)](boost::system::error_code ec) {
        auto c = weak_client.lock();
        auto s = weak_state.lock();
        if (ec || !c || c->stopped || !s || s->released || s->lost.load() != 0) return;
        confirm_fair_hold(c, s, fair_win::handed_short, {}, c->masters->all());
      });
    }
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
    auto dog = std::make_shared<watchdog>(client->strand, client->executor, client->options.observer, state,
                                          options.renew_fraction, options.max_hold, std::move(renew));
    state->dog = dog;
    dog->start();  // from here its pending wait or renewal keeps it alive
  }
}

}  // namespace redlock::detail
