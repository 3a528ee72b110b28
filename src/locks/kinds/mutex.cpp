// SPDX-License-Identifier: Apache-2.0
// The mutex: one string key holding a random token, new at every attempt.
// Its acquire is the canonical SET NX PX unless it needs the script (a
// waiter, a fence, a description); its release wakes the first waiter on
// the wake list by name (docs/algorithm.md, sections 2 and 10). A
// semaphore's permit slot is released the same way (semaphore.cpp).
#include "encoding.hpp"
#include "status_record.hpp"

#include "quorum/replies.hpp"
#include "scripts/keys.hpp"

#include <redlock/error.hpp>

namespace redlock::detail {

verdict classify_grant(const redisReply& r, node_outcome& out) {
  if (r.type == REDIS_REPLY_STATUS) return verdict::yes;
  if (r.type == REDIS_REPLY_INTEGER) {
    out.value = r.integer;  // fence counter
    return verdict::yes;
  }
  if (r.type == REDIS_REPLY_NIL) return verdict::no;
  return failed_reply(r, out);
}

round_ptr one_key_extend(const std::shared_ptr<client_impl>& client, const lock_state& s, milliseconds ttl,
                         quorum_round::decided_fn done) {
  std::vector<std::string> args{s.token, std::to_string(ttl.count()), std::to_string(s.hold_id())};
  return round_ptr(new quorum_round(client->masters, scripts::extend, with_holder_key({s.key}, s.key, s.described),
                                    std::move(args), classify_one_zero, std::move(done)));
}

round_ptr token_release_round(const std::shared_ptr<client_impl>& client, const std::string& key,
                              const std::string& token, release_wake wake, bool described,
                              const std::string& waiters_key, const std::string& listed_as,
                              const wake_list_entry* relist, quorum_round::decided_fn done) {
  if (wake != release_wake::none) client->note_own_release(token);  // a quiet one may be published later ('pass')
  // On the stack: this is every mutex and semaphore release.
  auto relist_score = relist ? score_text(relist->score) : std::array<char, 32>{};
  auto relist_lapse = relist ? std::to_string(relist->lapse.count()) : std::string();
  std::array<word, 7> args{token, keys::word_of::released_channel(waiters_key), publish_word(wake)};
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

round_ptr release_token_hold(const std::shared_ptr<client_impl>& client, const lock_state& s, const release_terms& how,
                             quorum_round::decided_fn done) {
  static const std::string not_listed;  // a permit's holder never is
  auto* mutex = s.fields_if<mutex_fields>();
  return token_release_round(client, s.key, s.token, how.wake, s.described, s.waiters_key(),
                             mutex ? mutex->listed_as : not_listed, how.relist, std::move(done));
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

namespace {

// A round that only joins a mutex's line never takes the lock: nil, or
// whatever else, never a grant.
verdict classify_line(const redisReply& r, node_outcome& out) {
  if (r.type == REDIS_REPLY_NIL) return verdict::no;
  return failed_reply(r, out);
}

round_ptr acquire(const std::shared_ptr<client_impl>& client, const acquire_request& req,
                  quorum_round::decided_fn done) {
  auto ttl = std::to_string(req.ttl.count());
  // The canonical RedLock command: no script to run on the masters (a
  // Lua call costs them about four times a SET). A key of another type
  // just refuses it; check_key_types() tells the caller why afterwards.
  // A waiter needs the script, which puts it on the wake list if refused;
  // so does a description, written next to the key.
  if (!req.fenced && req.waiter.empty() && req.description.empty() && !req.join_line_only)
    return round_ptr(new quorum_round(client->masters, {"SET", req.key, req.token, "NX", "PX", ttl}, classify_grant,
                                      std::move(done)));
  auto score = score_text(req.queue_score);  // a waiter's: the same on every master
  return described_acquire(
      client, req, scripts::mutex_acquire,
      {req.key, keys::word_of::fence(req.key), keys::word_of::wake_list(req.key),
       keys::word_of::wake_deadlines(req.key)},
      {req.token, ttl, fenced_word(req), req.waiter, score.data(), std::to_string(req.waiter_lapse.count())},
      req.join_line_only ? classify_line : classify_grant, std::move(done));
}

void clean_up(const std::shared_ptr<client_impl>& client, const abandoned_attempt& attempt,
              const std::vector<std::uint32_t>& nodes) {
  token_release_round(client, attempt.key, attempt.token, release_wake::none, attempt.described, attempt.key, {},
                      nullptr, [](quorum_round&) {})
      ->start_on(nodes);
}

// The key alone, with NX: where anyone else's key sits, nothing changes.
// Not the holder's description (status reads it from the other masters).
round_ptr repair(const std::shared_ptr<client_impl>& client, const lock_state& s, milliseconds left,
                 quorum_round::decided_fn done) {
  return round_ptr(new quorum_round(client->masters, {"SET", s.key, s.token, "NX", "PX", std::to_string(left.count())},
                                    classify_grant, std::move(done)));
}

bool decode_status(const status_record& record, node_lock_view& s) {
  if (record.type != "string") return false;
  s.content = key_content::mutex;
  s.token = record.token;
  describe_holder(record.about, s);
  return true;
}

}  // namespace

extern const kind_rounds mutex_rounds{lock_kind::mutex, false, acquire, one_key_extend, release_token_hold, clean_up, nullptr,
                               decode_status, repair};

}  // namespace redlock::detail
