// SPDX-License-Identifier: Apache-2.0
// Reentrant and fair locks: owner fields in a hash, each counting the levels
// its owner holds; every request carries an id, so that a clean-up of an
// older request cannot touch a newer hold (docs/algorithm.md, sections 7
// and 9). A fair lock adds its queue, and a release that hands the lock to
// the first waiter in it.
#include "encoding.hpp"
#include "status_record.hpp"

#include "quorum/replies.hpp"
#include "scripts/keys.hpp"

namespace redlock::detail {

round_ptr owner_release_round(const std::shared_ptr<client_impl>& client, const std::string& key,
                              const std::string& token, std::uint64_t hold_id, bool last, release_wake wake,
                              bool described, const fair_place* keeps_place, quorum_round::decided_fn done) {
  std::string_view publish = publish_word(wake);
  // The owner field is the same at every acquisition: the message carries a
  // fresh id instead, so waiters can tell this release from the next.
  auto release_id = publish != "0" && last ? client->new_token() : std::string();
  if (!release_id.empty()) client->note_own_release(release_id);
  std::vector<std::string> args{token, keys::released_channel(key), last ? "1" : "0", std::string(publish), release_id,
                                std::to_string(hold_id)};
  if (keeps_place) {
    args.emplace_back(score_text(keeps_place->score).data());
    args.push_back(std::to_string(keeps_place->queue_timeout.count()));
  }
  return as_release(round_ptr(new quorum_round(client->masters, scripts::reentrant_release,
                              with_holder_key({key, keys::queue(key), keys::queue_deadlines(key),
                                               keys::queue_terms(key)},
                                              key, described),
                              std::move(args), classify_one_zero, std::move(done))));
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
                 const std::vector<std::uint32_t>& nodes, quorum_round::decided_fn done) {
  std::vector<std::string> args{field, extend_to ? std::to_string(extend_to->count()) : std::string(),
                                std::to_string(hold_id)};
  if (!description.empty()) args.push_back(description);
  auto script_keys = with_holder_key({keys::queue(key), keys::queue_deadlines(key), keys::queue_terms(key), key}, key,
                                     !description.empty());
  round_ptr round(new quorum_round(client->masters, scripts::fair_dequeue, std::move(script_keys), std::move(args),
                                   classify_one_zero, std::move(done)));
  round->start_on(nodes);
}

namespace {

// As a grant; queued = -1 - rank (value = rank); granted out of line
// (fair_acquire.lua's 'FAST', or {counter} when fenced): a grant, marked.
verdict classify_fair_grant(const redisReply& r, node_outcome& out) {
  if (r.type == REDIS_REPLY_INTEGER && r.integer < 0) {
    out.value = -1 - r.integer;  // our rank in this master's queue
    return verdict::no;
  }
  bool fast = r.type == REDIS_REPLY_STATUS && reply_text(r) == "FAST";
  bool fast_fenced = r.type == REDIS_REPLY_ARRAY && r.elements == 1 && r.element[0]->type == REDIS_REPLY_INTEGER;
  if (!fast && !fast_fenced) return classify_grant(r, out);
  if (fast_fenced) out.value = r.element[0]->integer;  // fence counter
  out.out_of_line = true;
  return verdict::yes;
}

}  // namespace

bool granted_out_of_line(const node_outcome& o) { return o.state == node_state::locked && o.out_of_line; }

namespace {

const char* mode_word(const acquire_request& req) { return req.reenter ? "reenter" : "first"; }

round_ptr acquire_reentrant(const std::shared_ptr<client_impl>& client, const acquire_request& req,
                            quorum_round::decided_fn done) {
  return described_acquire(client, req, scripts::reentrant_acquire, {req.key, keys::word_of::fence(req.key)},
                           {req.token, std::to_string(req.ttl.count()), fenced_word(req), mode_word(req),
                            std::to_string(req.hold_id)},
                           classify_grant, std::move(done));
}

round_ptr acquire_fair(const std::shared_ptr<client_impl>& client, const acquire_request& req,
                       quorum_round::decided_fn done) {
  auto score = score_text(req.queue_score);  // the same on every master
  return described_acquire(client, req, scripts::fair_acquire,
                           {req.key, keys::word_of::fence(req.key), keys::queue(req.key),
                            keys::queue_deadlines(req.key), keys::queue_terms(req.key)},
                           {req.token, std::to_string(req.ttl.count()), fenced_word(req), mode_word(req), score.data(),
                            std::to_string(req.queue_timeout.count()), std::to_string(req.hold_id),
                            req.may_be_handed ? "1" : "0"},
                           classify_fair_grant, std::move(done));
}

round_ptr release(const std::shared_ptr<client_impl>& client, const lock_state& s, const release_terms& how,
                  quorum_round::decided_fn done) {
  return owner_release_round(client, s.key, s.token, s.hold_id(), how.last, how.wake, s.described, nullptr,
                             std::move(done));
}

void clean_up(const std::shared_ptr<client_impl>& client, const abandoned_attempt& attempt,
              const std::vector<std::uint32_t>& nodes) {
  owner_release_round(client, attempt.key, attempt.token, attempt.hold_id, true, release_wake::none,
                      attempt.described, attempt.keeps_place, [](quorum_round&) {})
      ->start_on(nodes);
}

void adopt(const client_impl&, lock_state& s, const adopt_options&) {
  // Which request took the hold is not known here, so extend and release
  // act on any hold of this field. The field names the acquiring client
  // object (its random id), so only that client's own later requests can
  // take a newer hold with it (section 7).
  s.of_kind = owner_fields{lock_state::adopted_hold_id};
}

// Every field an owner, every value its count of levels (a read-write
// lock's hash is read first: rw.cpp).
bool decode_status(const status_record& record, node_lock_view& s) {
  if (record.type != "hash") return false;
  for (auto o = record.owners.begin(); o + 1 < record.owners.end(); o += 2) {
    auto entered = number<std::uint64_t>(o[1]);
    if (!entered) {  // not a count: this hash is someone else's data, not a lock
      s.owners.clear();
      return false;
    }
    s.owners.push_back({*o, *entered});
  }
  if (s.owners.empty()) return false;
  s.content = key_content::reentrant;
  describe_holder(record.about, s);
  return true;
}

}  // namespace

extern const kind_rounds reentrant_rounds{lock_kind::reentrant, false, acquire_reentrant, one_key_extend, release, clean_up,
                                   adopt, decode_status, nullptr};
extern const kind_rounds fair_rounds{lock_kind::fair, false, acquire_fair, one_key_extend, release, clean_up, adopt,
                              decode_status, nullptr};

}  // namespace redlock::detail
