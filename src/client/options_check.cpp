// SPDX-License-Identifier: Apache-2.0
#include "options_check.hpp"

#include <algorithm>

#include "locks/adopt.hpp"
#include "locks/kinds/kind_traits.hpp"
#include "locks/retry_policy.hpp"
#include "scripts/keys.hpp"

#include <redlock/error.hpp>
#include <redlock/lock.hpp>

namespace redlock::detail {

namespace {
check_result fail(errc e, std::string message) { return {make_error_code(e), std::move(message)}; }
std::string ms(milliseconds d) { return std::to_string(d.count()) + " ms"; }
}  // namespace

check_result check_client_options(const client_options& o, std::vector<node_address>& addresses) {
  if (o.nodes.empty()) return fail(errc::empty_node_list, "no Redis master given: the node list is empty");
  if (!o.user.empty() && o.password.empty())
    return fail(errc::bad_option, "user '" + o.user + "' is given without a password (AUTH needs one)");
  if (o.tls_cert_file.empty() != o.tls_key_file.empty())
    return fail(errc::bad_option, o.tls_cert_file.empty()
                                      ? "TLS client key file '" + o.tls_key_file + "' is given without its certificate"
                                      : "TLS client certificate file '" + o.tls_cert_file +
                                            "' is given without its key");
  addresses.clear();
  for (auto& uri : o.nodes) {
    std::string why;
    auto a = parse_node_uri(uri, why);
    if (!a) return fail(errc::bad_uri, why);
    // A URI's own credentials win: the default is for the URIs without.
    if (a->password.empty() && !o.password.empty()) {
      a->user = o.user;
      a->password = o.password;
    }
    addresses.push_back(std::move(*a));
  }
  if (o.node_timeout <= milliseconds(0))
    return fail(errc::node_timeout_too_large, "node timeout must be > 0 (got " + ms(o.node_timeout) + ")");
  if (!(o.drift_factor >= 0.0 && o.drift_factor < 1.0))
    return fail(errc::bad_drift_factor,
                "drift factor must be in [0, 1) (got " + std::to_string(o.drift_factor) + ")");
  if (o.connect_timeout <= milliseconds(0)) return fail(errc::bad_option, "connect timeout must be > 0");
  if (o.reconnect_min <= milliseconds(0) || o.reconnect_max < o.reconnect_min)
    return fail(errc::bad_option, "reconnect backoff must satisfy 0 < reconnect_min <= reconnect_max");
  if (o.stall_timeout <= o.node_timeout)
    return fail(errc::bad_option, "stall timeout must be longer than the node timeout");
  if (o.max_reply_bytes < 1024 || o.max_reply_elements < 16 || o.max_pending_per_node < 1)
    return fail(errc::bad_option, "reply caps must allow at least 1024 bytes and 16 elements, and 1 pending request");
  return {};
}

check_result check_ttl(milliseconds ttl, milliseconds node_timeout) {
  if (ttl <= milliseconds(0)) return fail(errc::bad_ttl, "TTL must be > 0 (got " + ms(ttl) + ")");
  if (node_timeout >= ttl)
    return fail(errc::node_timeout_too_large, "node timeout (" + ms(node_timeout) +
                                                  ") must be much smaller than the TTL (" + ms(ttl) + ")");
  return {};
}

namespace {
// A name whose key (the client's key prefix and the name) is another lock's
// companion, '{R}:holder' say, names no lock of its own (keys::companion_of).
check_result check_not_a_companion(std::string_view key_prefix, std::string_view name) {
  // Every companion key begins with '{': any other key is answered without
  // building it, so the hot path allocates nothing here.
  if (!(key_prefix.empty() ? name : key_prefix).starts_with('{')) return {};
  std::string key(key_prefix);
  key.append(name);
  auto c = keys::companion_of(key);
  if (!c) return {};
  return fail(errc::bad_option, "lock name '" + std::string(name) + "' makes key '" + key +
                                    "', the '" + std::string(c->what) + "' companion of the lock at key '" +
                                    std::string(c->lock_key) +
                                    "', which that lock's scripts write and delete (docs/algorithm.md, section 1): "
                                    "choose another name, or a key_prefix");
}

// `name` and the other names, held as one lock: each once, none empty,
// max_names in all; the other names given under one name, the new or the old.
template <class Options>
check_result check_names_together(std::string_view name, const Options& o, std::string_view key_prefix) {
  if (!o.other_names.empty() && !o.together.empty())
    return fail(errc::bad_option, "other_names and its old name `together` are both set: give other_names only");
  const auto& others = other_names_of(o);
  if (others.size() + 1 > max_names)
    return fail(errc::bad_option, "at most " + std::to_string(max_names) + " names in one lock (got " +
                                      std::to_string(others.size() + 1) + ")");
  std::vector<std::string_view> all(others.begin(), others.end());
  all.push_back(name);
  std::sort(all.begin(), all.end());
  if (all.front().empty()) return fail(errc::empty_name, "a name held together is empty");
  auto twice = std::adjacent_find(all.begin(), all.end());
  if (twice != all.end()) return fail(errc::bad_option, "name '" + std::string(*twice) + "' is given twice");
  for (auto other : others)
    if (auto r = check_not_a_companion(key_prefix, other)) return r;
  return {};
}

const char* shape_words(token_shape shape) {
  switch (shape) {
    case token_shape::plain: return "a mutex's or a semaphore permit's";
    case token_shape::owner_field: return "a reentrant or fair owner's ('<client id>:<owner>')";
    case token_shape::read: return "a reader's ('r:...')";
    case token_shape::write: return "a writer's ('w:...')";
    case token_shape::set: return "a hold of several names together ('s:...')";
  }
  return "an unknown kind of";
}
}  // namespace

check_result check_adopt(std::string_view name, std::string_view token, milliseconds ttl, const adopt_options& how,
                         milliseconds node_timeout, std::string_view key_prefix) {
  if (name.empty()) return fail(errc::empty_name, "lock name is empty");
  if (auto r = check_not_a_companion(key_prefix, name)) return r;
  if (token.empty()) return fail(errc::bad_option, "token is empty");
  if (auto r = check_ttl(ttl, node_timeout)) return r;
  auto shape = shape_of(token);
  auto kind = how.kind.value_or(kind_of(shape));
  // What each kind's token looks like: a token of another shape names no
  // hold of that kind, and acting on it as one could touch another hold.
  bool fits = false;
  switch (kind) {
    // A string key's token may be anyone's value (another client's lock),
    // ':' included: only the shapes of our hash kinds' fields are refused.
    case lock_kind::mutex: fits = shape != token_shape::read && shape != token_shape::write; break;
    case lock_kind::semaphore: fits = shape == token_shape::plain || shape == token_shape::owner_field; break;
    case lock_kind::reentrant:
    case lock_kind::fair: fits = shape == token_shape::owner_field; break;
    case lock_kind::read: fits = shape == token_shape::read; break;
    case lock_kind::write: fits = shape == token_shape::write; break;
  }
  if (!fits)
    return fail(errc::bad_option, "token '" + std::string(token) + "' is " + shape_words(shape) +
                                      " token, not one of a " + std::string(to_string(kind)) + " hold");
  if (shape == token_shape::set && other_names_of(how).empty())
    return fail(errc::bad_option, "token '" + std::string(token) + "' holds several names together: adopt it with "
                                      "all of them (adopt_options::other_names), or a release would free only '" +
                                      std::string(name) + "'");
  if (!other_names_of(how).empty()) {
    if (shape != token_shape::set)
      return fail(errc::bad_option, "adopt_options::other_names is for a hold of several names ('s:...' token)");
    if (auto r = check_names_together(name, how, key_prefix)) return r;
  }
  if (kind == lock_kind::semaphore) {
    if (how.permits < 1 || how.permits > max_permits)
      return fail(errc::bad_option, "adopting a semaphore permit needs the number of permits, 1 to " +
                                        std::to_string(max_permits) + " (adopt_options::permits, got " +
                                        std::to_string(how.permits) + ")");
    if (!how.permit || *how.permit >= how.permits)
      return fail(errc::bad_option, "adopting a semaphore permit needs its slot, 0 to permits - 1 "
                                    "(adopt_options::permit: lock::permit(), REDLOCK_PERMIT)");
  } else if (how.permit || how.permits != 0) {
    return fail(errc::bad_option, "adopt_options::permit and permits are for semaphore permits only");
  }
  return {};
}

check_result check_acquire(std::string_view name, const acquire_options& o, milliseconds node_timeout,
                           std::string_view key_prefix) {
  if (name.empty()) return fail(errc::empty_name, "lock name is empty");
  if (auto r = check_not_a_companion(key_prefix, name)) return r;
  if (auto r = check_ttl(o.ttl, node_timeout)) return r;
  if (o.wait < milliseconds(0)) return fail(errc::bad_option, "wait must be >= 0");
  if (o.retry_delay < milliseconds(0) || o.retry_jitter < milliseconds(0))
    return fail(errc::bad_option, "retry delay and jitter must be >= 0");
  if (o.min_validity < milliseconds(0) || o.min_validity >= o.ttl)
    return fail(errc::bad_option, "min_validity must be >= 0 and smaller than the TTL");
  if (o.kind == lock_kind::fair) {
    auto gap = longest_poll_gap(o, node_timeout);
    if (o.queue_timeout <= gap)
      return fail(errc::bad_option, "queue_timeout (" + ms(o.queue_timeout) +
                                        ") must exceed the longest gap between two polls of a waiter (" + ms(gap) +
                                        ": two node timeouts plus the longest retry delay or back-off), or a "
                                        "waiter is dropped from the queue between its own polls");
  }
  if (o.kind == lock_kind::semaphore && (o.permits < 1 || o.permits > max_permits))
    return fail(errc::bad_option, "permits must be 1 to " + std::to_string(max_permits) + " for a semaphore (got " +
                                      std::to_string(o.permits) + ")");
  if (o.kind != lock_kind::semaphore && o.permits != 0)
    return fail(errc::bad_option, "permits (" + std::to_string(o.permits) +
                                      ") is for semaphores: set kind = lock_kind::semaphore, or permits = 0");
  if (!other_names_of(o).empty()) {
    if (o.kind != lock_kind::mutex) return fail(errc::bad_option, "names held together are for the mutex kind only");
    if (auto r = check_names_together(name, o, key_prefix)) return r;
  }
  if (is_rw_kind(o.kind) && !o.description.empty())
    return fail(errc::bad_option, "description is not kept for read-write locks yet (leave it empty)");
  if (o.owner.find(':') != std::string::npos || o.owner.size() > 256)
    return fail(errc::bad_option, "owner must not contain ':' and must be at most 256 characters");
  if (o.description.size() > max_description_bytes)
    return fail(errc::bad_option, "description must be at most " + std::to_string(max_description_bytes) +
                                      " bytes (got " + std::to_string(o.description.size()) + ")");
  // One line in `redlock status`, whatever it holds.
  for (unsigned char c : o.description)
    if (c < 0x20 || c == 0x7f)
      return fail(errc::bad_option, "description must not contain control characters (found byte " +
                                        std::to_string(c) + ")");
  if (o.renew && !(o.renew_fraction > 0.0 && o.renew_fraction < 1.0))
    return fail(errc::bad_option, "renew_fraction must be in (0, 1) (got " + std::to_string(o.renew_fraction) + ")");
  if (o.renew && o.ttl * o.renew_fraction <= node_timeout)
    return fail(errc::bad_option, "ttl * renew_fraction must exceed the node timeout, or renewals cannot finish in time");
  if (o.max_hold < milliseconds(0)) return fail(errc::bad_option, "max_hold must be >= 0 (0: no cap)");
  // Without renewal the lease ends at its ttl anyway: a cap there would be
  // silently meaningless.
  if (o.max_hold > milliseconds(0) && !o.renew)
    return fail(errc::bad_option, "max_hold caps renewal: it needs renew = true (without renewal the ttl caps the hold)");
  return {};
}

}  // namespace redlock::detail
