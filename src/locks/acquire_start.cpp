// SPDX-License-Identifier: Apache-2.0
// Where an acquisition starts: a read-write owner's re-entry (counted by the
// client alone), a reentrant or fair owner's re-entry (reentry.cpp), or a new
// acquire_op (with the names held together sorted).
#include "acquire_op.hpp"
#include "hold.hpp"
#include "kinds/kind_traits.hpp"
#include "operations.hpp"

#include <redlock/error.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>

namespace redlock::detail {

namespace asio = boost::asio;
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

// An acquisition waiting for the same owner's first acquisition of the name
// (client_impl::owner_lines).
struct queued_acquisition {
  std::string name;
  acquire_options options;
  std::chrono::system_clock::time_point asked_at;
  std::chrono::steady_clock::time_point queued_at;
  acquire_handler handler;
  bool cancelled = false;  // strand only
};

namespace {

// The key `client.held` knows this acquisition's hold by, for the kinds
// whose holds belong to an owner ('' for the others: a mutex, a semaphore,
// a read-write lock without an owner, have one hold per acquisition).
std::string owner_line_key(const client_impl& client, const std::string& key, const acquire_options& options) {
  if (is_owner_kind(options.kind))
    return registry_key(key, client.client_id + ":" + options.owner);
  if (is_rw_kind(options.kind) && !options.owner.empty())
    return registry_key(key, rw_owner_field(client.client_id, options.owner));
  return {};
}

void complete_cancelled(const std::shared_ptr<client_impl>& client, queued_acquisition& queued) {
  auto slot = asio::get_associated_cancellation_slot(queued.handler);
  if (slot.is_connected()) slot.clear();
  complete_handler(client, std::move(queued.handler), make_error_code(asio::error::operation_aborted), lock{});
}

// Waits behind the owner's acquisition in flight; a cancellation ends the
// wait at once (nothing was sent for it), or, if the line is moving on
// already, when its turn comes.
void wait_in_owner_line(const std::shared_ptr<client_impl>& client, const std::string& line,
                        std::shared_ptr<queued_acquisition> queued) {
  auto slot = asio::get_associated_cancellation_slot(queued->handler);
  if (slot.is_connected()) {
    slot.assign([weak_client = std::weak_ptr<client_impl>(client), line,
                 weak = std::weak_ptr<queued_acquisition>(queued), strand = client->strand](asio::cancellation_type) {
      asio::post(strand, [weak_client, line, weak] {
        auto client = weak_client.lock();
        auto queued = weak.lock();
        if (!client || !queued || queued->cancelled) return;
        queued->cancelled = true;
        auto it = client->owner_lines.find(line);
        if (it == client->owner_lines.end()) return;  // resumed soon: it ends then
        auto at = std::find(it->second.begin(), it->second.end(), queued);
        if (at == it->second.end()) return;
        it->second.erase(at);
        complete_cancelled(client, *queued);
      });
    });
  }
  client->owner_lines[line].push_back(std::move(queued));
}

}  // namespace

void start_acquire(std::shared_ptr<client_impl> client, std::string name, acquire_options options,
                   std::chrono::system_clock::time_point asked_at, acquire_handler handler) {
  auto key = client->key_for(name);
  std::string field;
  if (is_rw_kind(options.kind) && !options.owner.empty()) {
    if (auto held = find_hold(*client, key, rw_owner_field(client->client_id, options.owner)))
      return reenter_rw(std::move(client), std::move(held), options, std::move(handler));
  }
  if (is_owner_kind(options.kind)) {
    field = client->client_id + ":" + options.owner;
    // The same owner again, while it holds the lock: one more level.
    if (auto held = find_hold(*client, key, field))
      return start_reentry(std::move(client), std::move(held), std::move(options), std::move(handler));
  }
  // The same owner again while its first acquisition is in flight: two
  // first acquisitions would both be granted (the masters cannot tell them
  // apart: one owner field), and the release of one would free the other's
  // hold. It waits for the first, then re-enters the hold or, if there is
  // none, acquires in its turn.
  auto line = owner_line_key(*client, key, options);
  if (!line.empty()) {
    if (client->owner_lines.contains(line))
      return wait_in_owner_line(client, line,
                                std::make_shared<queued_acquisition>(queued_acquisition{
                                    std::move(name), std::move(options), asked_at,
                                    std::chrono::steady_clock::now(), std::move(handler)}));
    client->owner_lines[line];  // this acquisition heads the line
  }
  // Names held together: sorted, so that two overlapping sets take their
  // common names in one order (one script per master takes them anyway).
  std::vector<std::string> names, keys;
  if (!other_names_of(options).empty()) {
    names = other_names_of(options);
    names.push_back(name);
    std::sort(names.begin(), names.end());
    for (auto& n : names) keys.push_back(client->key_for(n));
  }
  auto op = std::make_shared<acquire_op>(std::move(client), std::move(name), std::move(key), std::move(field),
                                         std::move(options), asked_at, std::move(handler), std::move(names),
                                         std::move(keys));
  op->heads_owner_line(std::move(line));
  op->start();
}

void end_owner_line(const std::shared_ptr<client_impl>& client, const std::string& line) {
  auto it = client->owner_lines.find(line);
  if (it == client->owner_lines.end()) return;
  auto waiting = std::move(it->second);
  client->owner_lines.erase(it);
  if (waiting.empty()) return;
  // After the handler of the acquisition that ended (posted, as it may be):
  // each waiting one starts again in order, re-entering the hold that
  // acquisition took, or (none) the first acquiring and the rest waiting
  // behind it again. Each has waited that long already.
  asio::post(client->strand, [client, waiting = std::move(waiting)]() mutable {
    for (auto& queued : waiting) {
      if (queued->cancelled) {
        complete_cancelled(client, *queued);
        continue;
      }
      auto slot = asio::get_associated_cancellation_slot(queued->handler);
      if (slot.is_connected()) slot.clear();
      auto waited = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - queued->queued_at);
      queued->options.wait = std::max(milliseconds(0), queued->options.wait - waited);
      start_acquire(client, std::move(queued->name), std::move(queued->options), queued->asked_at,
                    std::move(queued->handler));
    }
  });
}

}  // namespace redlock::detail
