// SPDX-License-Identifier: Apache-2.0
#include "adopt.hpp"

#include "kinds.hpp"

namespace redlock::detail {

token_shape shape_of(std::string_view token) noexcept {
  if (token.starts_with("r:")) return token_shape::read;
  if (token.starts_with("w:")) return token_shape::write;
  if (token.starts_with(set_token_prefix)) return token_shape::set;
  // An owner never contains ':' (check_acquire), so the field's only ':'
  // follows the client id.
  return token.find(':') == std::string_view::npos ? token_shape::plain : token_shape::owner_field;
}

lock_kind kind_of(token_shape shape) noexcept {
  switch (shape) {
    case token_shape::owner_field: return lock_kind::reentrant;
    case token_shape::read: return lock_kind::read;
    case token_shape::write: return lock_kind::write;
    case token_shape::plain:
    case token_shape::set: return lock_kind::mutex;
  }
  return lock_kind::mutex;
}

std::shared_ptr<lock_state> adopted_state(const client_impl& client, const std::string& name, const std::string& token,
                                          milliseconds ttl, const adopt_options& how) {
  auto s = std::make_shared<lock_state>();
  s->name = name;
  s->key = client.key_for(name);
  s->token = token;
  s->ttl = ttl;
  s->clock = client.options.clock;
  s->owner = &client;
  s->node_names = client.node_names;
  s->set_valid_until(steady_time{});
  s->has_window = false;  // until extended: no window of ours has ended
  s->kind = how.kind.value_or(kind_of(shape_of(token)));
  if (auto adopt = rounds_of(s->kind, !other_names_of(how).empty()).adopt) adopt(client, *s, how);
  return s;
}

}  // namespace redlock::detail
