// SPDX-License-Identifier: Apache-2.0
// Release, extend and status: one round each through the quorum coordinator.
#include "kinds.hpp"
#include "lease/watchdog.hpp"
#include "operations.hpp"
#include "quorum/validity.hpp"
#include "scripts/script.hpp"

#include <redlock/error.hpp>

namespace redlock::detail {

using boost::system::error_code;

namespace {

// status: {type, holder, pttl, fence, waiters}
verdict classify_status(const redisReply& r, node_outcome& out) {
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 5) {
    out.error = r.type == REDIS_REPLY_ERROR ? classify_error_reply(reply_text(r)) : make_error_code(errc::protocol_error);
    return verdict::failed;
  }
  for (std::size_t i = 0; i < r.elements; ++i) {
    auto* e = r.element[i];
    out.fields.push_back(e->type == REDIS_REPLY_INTEGER ? std::to_string(e->integer) : std::string(e->str, e->len));
  }
  return verdict::yes;
}

}  // namespace

void start_release(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state, done_handler handler) {
  // Reentrant and fair holds: the client's count decides which release is
  // the last; earlier ones only lower the masters' counts.
  bool last = true;
  if (state->kind != lock_kind::mutex) {
    int left = state->holds.fetch_sub(1) - 1;
    if (left < 0) {
      state->holds.store(0);
      return complete_handler(client, std::move(handler), make_error_code(errc::not_held));
    }
    last = left == 0;
  }
  if (last) {
    // Released means no validity, from the moment the release is asked for:
    // no round decided from now on (a renewal in flight) may bring it back.
    state->released = true;
    state->set_valid_until(steady_time{});
    if (state->dog) state->dog->stop();
    if (!state->registry_key.empty()) client->held.erase(state->registry_key);
  }
  auto h = std::make_shared<done_handler>(std::move(handler));
  auto on_decided = [client, h](fanout& f) { complete_handler(client, std::move(*h), lease_round_error(f)); };
  auto round =
      release_round(client, state->kind, state->key, state->token, state->hold_id, last, true, std::move(on_decided));
  round->settle_failure();  // "not held" needs every refusal counted
  round->start();
}

void run_extend(const std::shared_ptr<client_impl>& client, const std::shared_ptr<lock_state>& state, milliseconds ttl,
                std::function<void(error_code)> done) {
  if (state->released) return done(errc::not_held);
  auto on_decided = [client, state, ttl, done = std::move(done)](fanout& f) {
    auto ec = lease_round_error(f);
    if (!ec) {
      auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(f.decided_at() - f.started_at());
      if (state->released)
        ec = errc::not_held;  // released while this round was in flight
      else if (validity_left(ttl, elapsed, client->options.drift_factor) > std::chrono::microseconds(0))
        state->extend_window(f.started_at() + ttl - drift_allowance(ttl, client->options.drift_factor));
      else
        ec = errc::validity_expired;
    }
    // A failed round changed nothing the window relies on: extend never
    // shortens a key (lua/extend.lua), so the window stays where it was.
    done(ec);
  };
  round_ptr round(new fanout(client, scripts::extend, {state->key},
                             {state->token, std::to_string(ttl.count()), std::to_string(state->hold_id)},
                             classify_one_zero, std::move(on_decided)));
  round->settle_failure();  // "not held" needs every refusal counted
  round->start();
}

void start_extend(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state, milliseconds ttl,
                  done_handler handler) {
  auto h = std::make_shared<done_handler>(std::move(handler));
  run_extend(client, state, ttl, [client, h](error_code ec) { complete_handler(client, std::move(*h), ec); });
}

void start_status(std::shared_ptr<client_impl> client, std::string name, status_handler handler) {
  auto key = client->key_for(name);
  auto h = std::make_shared<status_handler>(std::move(handler));
  auto on_decided = [client, h](fanout& f) {
    std::vector<node_status> out;
    for (std::size_t i = 0; i < f.outcomes().size(); ++i) {
      auto& o = f.outcomes()[i];
      node_status s;
      s.node = client->nodes[i]->display();
      s.error = o.state == node_state::pending ? make_error_code(errc::timeout) : o.error;
      if (o.fields.size() == 5) {
        s.type = o.fields[0];
        s.holder = o.fields[1];
        s.pttl = std::chrono::milliseconds(std::stoll(o.fields[2]));
        if (!o.fields[3].empty()) s.fence = std::stoull(o.fields[3]);
        s.waiters = o.fields[4];
      }
      out.push_back(std::move(s));
    }
    complete_handler(client, std::move(*h), error_code{}, std::move(out));
  };
  round_ptr round(new fanout(client, scripts::status,
                             {key, client_impl::fence_key(key), client_impl::queue_key(key)}, {}, classify_status,
                             std::move(on_decided)));
  round->wait_for_all();
  round->start();
}

}  // namespace redlock::detail
