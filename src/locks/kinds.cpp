// SPDX-License-Identifier: Apache-2.0
// The rounds each lock kind sends: acquire, release and their clean-ups
// (how their replies read as votes: grant_replies.cpp).
#include "kinds.hpp"

#include "quorum/replies.hpp"

#include "scripts/keys.hpp"
#include "scripts/script.hpp"

#include <redlock/error.hpp>

#include <boost/container/small_vector.hpp>

#include <array>

namespace redlock::detail {

using boost::system::error_code;

std::vector<std::string> with_holder_key(std::vector<std::string> script_keys, const std::string& key,
                                         bool described) {
  if (described) script_keys.push_back(keys::holder(key));
  return script_keys;
}

namespace {
// The words of one call, on the stack for every size the hot paths use.
using call_words = boost::container::small_vector<word, 12>;

// `list`, and `last` after it when there is one (a holder key, a description).
call_words with_last(word_list list, const word* last) {
  call_words out;
  for (std::size_t i = 0; i < list.size(); ++i) out.push_back(list[i]);
  if (last) out.push_back(*last);
  return out;
}

// A waiter's score as the scripts take it: whole microseconds (on the
// stack: every acquisition formats it, few send it).
std::array<char, 32> score_text(double score) {
  std::array<char, 32> text;
  std::snprintf(text.data(), text.size(), "%.0f", score);
  return text;
}
}  // namespace

round_ptr acquire_round(const std::shared_ptr<client_impl>& client, const acquire_request& req,
                        quorum_round::decided_fn done) {
  auto ttl = std::to_string(req.ttl.count());
  auto fenced = req.join_line_only ? "line" : req.fenced ? "1" : "0";
  auto mode = req.reenter ? "reenter" : "first";
  auto hold_id = std::to_string(req.hold_id);
  auto fence = keys::word_of::fence(req.key);
  auto score_chars = score_text(req.queue_score);  // fair, a mutex waiter: the same on every master
  const char* score = score_chars.data();
  // Every acquire script takes the description as its last, optional ARGV
  // (and the holder key as its last KEYS): absent when there is none.
  const bool described = !req.description.empty();
  const word holder = keys::word_of::holder(req.key), description = req.description;
  auto script_round = [&](const script& s, word_list script_keys, word_list args, classify_fn classify) {
    auto all_keys = with_last(script_keys, described ? &holder : nullptr);
    auto all_args = with_last(args, described ? &description : nullptr);
    return round_ptr(new quorum_round(client->masters, s, std::span<const word>(all_keys),
                                      std::span<const word>(all_args), classify, std::move(done)));
  };
  if (!req.keys.empty()) {
    // Names held together: one call per master takes all of them or none.
    std::vector<std::string> script_keys(req.keys.begin(), req.keys.end());
    if (req.fenced)
      for (auto& k : req.keys) script_keys.push_back(keys::fence(k));
    if (described)
      for (auto& k : req.keys) script_keys.push_back(keys::holder(k));
    auto count = std::to_string(req.keys.size());
    auto args = with_last({req.token, ttl, fenced, count}, described ? &description : nullptr);
    return round_ptr(new quorum_round(client->masters, scripts::multi_acquire, script_keys,
                                      std::span<const word>(args), classify_multi_grant, std::move(done)));
  }
  switch (req.kind) {
    case lock_kind::mutex:
      // The canonical RedLock command: no script to run on the masters (a
      // Lua call costs them about four times a SET). A key of another type
      // just refuses it; check_key_types() tells the caller why afterwards.
      // A waiter needs the script, which puts it on the wake list if refused;
      // so does a description, written next to the key.
      if (!req.fenced && req.waiter.empty() && !described && !req.join_line_only)
        return round_ptr(new quorum_round(client->masters, {"SET", req.key, req.token, "NX", "PX", ttl}, classify_grant,
                                    std::move(done)));
      return script_round(scripts::mutex_acquire,
                          {req.key, fence, keys::word_of::wake_list(req.key), keys::word_of::wake_deadlines(req.key)},
                          {req.token, ttl, fenced, req.waiter, score, std::to_string(req.waiter_lapse.count())},
                          req.join_line_only ? classify_line : classify_grant);
    case lock_kind::reentrant:
      return script_round(scripts::reentrant_acquire, {req.key, fence}, {req.token, ttl, fenced, mode, hold_id},
                          classify_grant);
    case lock_kind::fair:
      return script_round(scripts::fair_acquire,
                          {req.key, fence, keys::queue(req.key), keys::queue_deadlines(req.key),
                           keys::queue_terms(req.key)},
                          {req.token, ttl, fenced, mode, score, std::to_string(req.queue_timeout.count()), hold_id,
                           req.may_be_handed ? "1" : "0"},
                          classify_fair_grant);
    case lock_kind::read:
    case lock_kind::write:
      return round_ptr(new quorum_round(
          client->masters, scripts::rw_acquire, {req.key, fence, keys::waiting_writer(req.key)},
          {req.token, ttl, fenced, req.kind == lock_kind::read ? "read" : "write", req.writer_mark,
           std::to_string(req.waiter_lapse.count())},
          classify_grant, std::move(done)));
    case lock_kind::semaphore: {
      // Every slot, from a random first one, the same order on every master:
      // concurrent acquirers start apart, and masters agree unless their
      // slots differ (then the client counts votes per slot).
      std::vector<std::string> slots, fences, holders;
      for (unsigned i = 0; i < req.permits; ++i) {
        auto slot = keys::permit(req.key, permit_slot(req.first_slot, req.permits, static_cast<std::int32_t>(i)));
        if (req.fenced) fences.push_back(keys::fence(slot));
        if (described) holders.push_back(keys::holder(slot));
        slots.push_back(std::move(slot));
      }
      slots.push_back(keys::permits(req.key));
      slots.push_back(keys::wake_list(req.key));
      slots.push_back(keys::wake_deadlines(req.key));
      for (auto* more : {&fences, &holders})
        slots.insert(slots.end(), std::make_move_iterator(more->begin()), std::make_move_iterator(more->end()));
      auto lapse = std::to_string(req.waiter_lapse.count()), permits = std::to_string(req.permits);
      auto args = with_last({req.token, ttl, fenced, req.waiter, score, lapse, permits, permits},
                            described ? &description : nullptr);
      return round_ptr(new quorum_round(client->masters, scripts::semaphore_acquire, slots,
                                        std::span<const word>(args), classify_permit_grant, std::move(done)));
    }
  }
  return nullptr;
}

namespace {

// reentrant_release.lua (reentrant and fair holds); `place`: a fair waiter's
// clean-up that keeps its turn where it gives back a handed hold (may be null).
round_ptr hash_release_round(const std::shared_ptr<client_impl>& client, const std::string& key,
                             const std::string& token, std::uint64_t hold_id, bool last, const char* publish,
                             bool described, const fair_place* place, quorum_round::decided_fn done) {
  // The owner field is the same at every acquisition: the message carries a
  // fresh id instead, so waiters can tell this release from the next.
  auto release_id = std::string_view(publish) != "0" && last ? client->new_token() : std::string();
  if (!release_id.empty()) client->note_own_release(release_id);
  std::vector<std::string> args{token, keys::released_channel(key), last ? "1" : "0", publish, release_id,
                                std::to_string(hold_id)};
  if (place) {
    args.emplace_back(score_text(place->score).data());
    args.push_back(std::to_string(place->queue_timeout.count()));
  }
  return as_release(round_ptr(new quorum_round(client->masters, scripts::reentrant_release,
                              with_holder_key({key, keys::queue(key), keys::queue_deadlines(key),
                                               keys::queue_terms(key)},
                                              key, described),
                              std::move(args), classify_one_zero, std::move(done))));
}
}  // namespace

round_ptr release_round(const std::shared_ptr<client_impl>& client, lock_kind kind, const std::string& key,
                        const std::string& token, std::uint64_t hold_id, bool last, release_wake wake,
                        bool described, const std::string& waiters_key, quorum_round::decided_fn done,
                        const std::string& listed_as, const client_impl::wake_list_entry* relist) {
  bool wakes = wake != release_wake::none;
  auto publish = wake == release_wake::first_waiter ? "1" : wake == release_wake::report_first ? "quiet" : "0";
  if (is_rw_kind(kind)) return rw_release_round(client, key, token, "", wakes, std::move(done));
  if (is_token_kind(kind)) {
    if (wakes) client->note_own_release(token);  // a quiet one may be published later ('pass')
    // On the stack: this is every mutex and semaphore release.
    auto relist_score = relist ? score_text(relist->score) : std::array<char, 32>{};
    auto relist_lapse = relist ? std::to_string(relist->lapse.count()) : std::string();
    std::array<word, 7> args{token, keys::word_of::released_channel(waiters_key), publish};
    std::size_t arg_count = 3;
    if (!listed_as.empty() || relist) args[arg_count++] = listed_as;
    if (relist)
      for (word w : {word(relist->id), word(relist_score.data()), word(relist_lapse)}) args[arg_count++] = w;
    std::array<word, 4> script_keys{key, keys::word_of::wake_list(waiters_key),
                                    keys::word_of::wake_deadlines(waiters_key), keys::word_of::holder(key)};
    // 1 released, 2 released and a waiter named, 3 released and a waiter
    // left to name (mutex_release.lua).
    auto classify = [](const redisReply& r, node_outcome& out) {
      if (r.type != REDIS_REPLY_INTEGER || (r.integer != 2 && r.integer != 3)) return classify_one_zero(r, out);
      out.value = r.integer;
      return verdict::yes;
    };
    return as_release(round_ptr(new quorum_round(
        client->masters, scripts::mutex_release, std::span<const word>(script_keys.data(), described ? 4 : 3),
        std::span<const word>(args.data(), arg_count), classify, std::move(done))));
  }
  return hash_release_round(client, key, token, hold_id, last, publish, described, nullptr, std::move(done));
}

void check_key_types(const std::shared_ptr<client_impl>& client, const std::string& key,
                     std::function<void(bool wrong_type)> done) {
  auto classify = [](const redisReply& r, node_outcome& out) {
    if (r.type == REDIS_REPLY_STATUS && (reply_text(r) == "string" || reply_text(r) == "none")) return verdict::yes;
    out.error = make_error_code(errc::wrong_type);
    return verdict::failed;
  };
  round_ptr round(new quorum_round(client->masters, {"TYPE", key}, classify, [done = std::move(done)](quorum_round& f) {
    bool wrong = false;
    for (auto& o : f.outcomes()) wrong |= o.error == errc::wrong_type;
    done(wrong);
  }));
  round->wait_for_all();
  round->start();
}

void undo_reentry(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& field,
                  const std::vector<std::uint32_t>& nodes) {
  // Best effort, like every undo: a lost undo leaves a count the final
  // release deletes anyway.
  if (!nodes.empty())
    round_ptr(new quorum_round(client->masters, scripts::reentrant_undo, {key}, {field}, classify_one_zero,
                               [](quorum_round&) {}))
        ->start_on(nodes);
}

void leave_queue(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& field,
                 std::uint64_t hold_id, std::optional<milliseconds> extend_to, const std::string& description,
                 quorum_round::decided_fn done) {
  std::vector<std::string> args{field, extend_to ? std::to_string(extend_to->count()) : std::string(),
                                std::to_string(hold_id)};
  if (!description.empty()) args.push_back(description);
  round_ptr round(new quorum_round(client->masters, scripts::fair_dequeue,
                             with_holder_key({keys::queue(key), keys::queue_deadlines(key), keys::queue_terms(key), key},
                                             key, !description.empty()),
                             std::move(args),
                             classify_one_zero, std::move(done)));
  round->start();
}

error_code lease_round_error(const quorum_round& round) {
  if (round.succeeded()) return {};
  if (round.refused_by_quorum()) return errc::not_held;
  for (auto& o : round.outcomes())
    if (o.error) return o.error;
  return errc::timeout;  // (cannot happen once every master answered or timed out)
}

std::vector<std::uint32_t> may_hold(const quorum_round& attempt) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < attempt.outcomes().size(); ++i)
    if (attempt.outcomes()[i].state != node_state::refused) out.push_back(i);
  return out;
}

void release_abandoned(const std::shared_ptr<client_impl>& client, lock_kind kind, const std::string& key,
                       const std::string& token, std::uint64_t hold_id, bool described,
                       const std::vector<std::uint32_t>& nodes, const fair_place* keeps_place) {
  if (nodes.empty()) return;
  // No wake-up: only a holder's release means the lock became free.
  if (keeps_place)
    hash_release_round(client, key, token, hold_id, true, "0", described, keeps_place, [](quorum_round&) {})
        ->start_on(nodes);
  else
    release_round(client, kind, key, token, hold_id, true, release_wake::none, described, key, [](quorum_round&) {})
        ->start_on(nodes);
}

round_ptr rw_release_round(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& token,
                           const std::string& writer_mark, bool wake, quorum_round::decided_fn done) {
  // As for the reentrant lock: a fresh id per release, so waiters count one
  // release's copies (a quorum of them means it is free on a quorum).
  auto release_id = wake ? client->new_token() : std::string();
  if (wake) client->note_own_release(release_id);
  return as_release(round_ptr(new quorum_round(client->masters, scripts::rw_release, {key, keys::waiting_writer(key)},
                                               {token, writer_mark, keys::released_channel(key), release_id},
                                               classify_one_zero, std::move(done))));
}

}  // namespace redlock::detail
