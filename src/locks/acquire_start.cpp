// SPDX-License-Identifier: Apache-2.0
// Where an acquisition starts: a read-write owner's re-entry (counted by the
// client alone), a reentrant or fair owner's re-entry (reentry.cpp), or a new
// acquire_op (with the names held together sorted).
#include "acquire_op.hpp"
#include "hold.hpp"
#include "operations.hpp"

#include <redlock/error.hpp>

#include <algorithm>

namespace redlock::detail {

using boost::system::error_code;

namespace {

// An owner that holds a read-write lock takes another read of it, or a
// write inside its write, at no cost on the masters: its hold already
// excludes what the new one would. A write inside its read is refused: it
// would wait for its own read (and two owners doing it, for each other).
void reenter_rw(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> held, const acquire_options& options,
                acquire_handler handler) {
  error_code ec;
  if (options.kind == lock_kind::write && held->kind == lock_kind::read)
    ec = errc::upgrade_refused;
  else if (held->lapsed())
    ec = errc::not_held;
  else if (options.fenced && !held->fence)
    ec = errc::unfenced_hold;
  if (ec) return complete_handler(client, std::move(handler), ec, lock{});
  held->holds.fetch_add(1);
  complete_handler(client, std::move(handler), error_code{}, lock_access::make(std::move(held)));
}

}  // namespace

void start_acquire(std::shared_ptr<client_impl> client, std::string name, acquire_options options,
                   std::chrono::system_clock::time_point asked_at, acquire_handler handler) {
  auto key = client->key_for(name);
  std::string field;
  if ((options.kind == lock_kind::read || options.kind == lock_kind::write) && !options.owner.empty()) {
    if (auto held = find_hold(*client, key, rw_owner_field(client->client_id, options.owner)))
      return reenter_rw(std::move(client), std::move(held), options, std::move(handler));
  }
  if (options.kind == lock_kind::reentrant || options.kind == lock_kind::fair) {
    field = client->client_id + ":" + options.owner;
    // The same owner again, while it holds the lock: one more level.
    if (auto held = find_hold(*client, key, field))
      return start_reentry(std::move(client), std::move(held), std::move(options), std::move(handler));
  }
  // Names held together: sorted, so that two overlapping sets take their
  // common names in one order (one script per master takes them anyway).
  std::vector<std::string> names, keys;
  if (!options.together.empty()) {
    names = options.together;
    names.push_back(name);
    std::sort(names.begin(), names.end());
    for (auto& n : names) keys.push_back(client->key_for(n));
  }
  std::make_shared<acquire_op>(std::move(client), std::move(name), std::move(key), std::move(field),
                               std::move(options), asked_at, std::move(handler), std::move(names), std::move(keys))
      ->start();
}

}  // namespace redlock::detail
