// SPDX-License-Identifier: Apache-2.0
// The semaphore: `permits` slots, each a mutex of its own ({R}:permit:<n>),
// and its number of permits ({R}:permits). An attempt names every slot and
// each master grants the first free one; a permit's release is a mutex's,
// waking from the semaphore's wake list (docs/algorithm.md, section 12).
#include "encoding.hpp"
#include "status_record.hpp"

#include "quorum/replies.hpp"
#include "scripts/keys.hpp"

namespace redlock::detail {

void release_permits(const std::shared_ptr<client_impl>& client, const std::string& key, unsigned permits,
                     std::optional<unsigned> keep, const std::string& token, bool described,
                     const std::vector<std::uint32_t>& nodes) {
  if (nodes.empty()) return;
  std::vector<std::string> slots;
  for (unsigned i = 0; i < permits; ++i)
    if (keep != i) slots.push_back(keys::permit(key, i));
  release_all_round(client, slots, token, described, [](quorum_round&) {})->start_on(nodes);
}

namespace {

// The candidate taken (choice) and, fenced, its counter (value); nil = no.
verdict classify_permit_grant(const redisReply& r, node_outcome& out) {
  auto position = [&](const redisReply& e) {
    if (e.type != REDIS_REPLY_INTEGER || e.integer < 0 || e.integer >= max_permits) return false;
    out.choice = static_cast<std::int32_t>(e.integer);
    return true;
  };
  if (r.type == REDIS_REPLY_INTEGER && position(r)) return verdict::yes;
  if (r.type == REDIS_REPLY_ARRAY && r.elements == 2 && position(*r.element[0]) &&
      r.element[1]->type == REDIS_REPLY_INTEGER) {
    out.value = r.element[1]->integer;  // the slot's fence counter
    return verdict::yes;
  }
  if (r.type == REDIS_REPLY_NIL) return verdict::no;
  return failed_reply(r, out);
}

round_ptr acquire(const std::shared_ptr<client_impl>& client, const acquire_request& req,
                  quorum_round::decided_fn done) {
  // Every slot, from a random first one, the same order on every master:
  // concurrent acquirers start apart, and masters agree unless their
  // slots differ (then the client counts votes per slot).
  const bool described = !req.description.empty();
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
  auto ttl = std::to_string(req.ttl.count()), lapse = std::to_string(req.waiter_lapse.count()),
       permits = std::to_string(req.permits);
  auto score = score_text(req.queue_score);  // a waiter's: the same on every master
  const word description = req.description;
  auto reserve = std::to_string(req.reserve_after.count());
  auto args = with_last({req.token, ttl, fenced_word(req), req.waiter, score.data(), lapse, permits, permits, reserve},
                        described ? &description : nullptr);
  return round_ptr(new quorum_round(client->masters, scripts::semaphore_acquire, slots, std::span<const word>(args),
                                    classify_permit_grant, std::move(done)));
}

// A permit also keeps its semaphore's number of permits alive (extend.lua):
// it takes the holder key, described or not, before the permits' key.
round_ptr extend(const std::shared_ptr<client_impl>& client, const lock_state& s, milliseconds ttl,
                 quorum_round::decided_fn done) {
  auto& permit = std::get<permit_fields>(s.of_kind);
  // No hold id ("0"): extend.lua needs one for an owner's hash only.
  std::vector<std::string> args{s.token, std::to_string(ttl.count()), "0", std::to_string(permit.permits)};
  return round_ptr(new quorum_round(client->masters, scripts::extend,
                                    {s.key, keys::holder(s.key), keys::permits(permit.semaphore_key)}, std::move(args),
                                    classify_one_zero, std::move(done)));
}

// Every slot the attempt may have taken.
void clean_up(const std::shared_ptr<client_impl>& client, const abandoned_attempt& attempt,
              const std::vector<std::uint32_t>& nodes) {
  release_permits(client, attempt.key, attempt.permits, std::nullopt, attempt.token, attempt.described, nodes);
}

// The permit is its slot, a mutex of its own; its release wakes the
// semaphore's waiters, and its extend keeps the number of permits.
void adopt(const client_impl&, lock_state& s, const adopt_options& how) {
  auto semaphore_key = std::move(s.key);
  s.key = keys::permit(semaphore_key, *how.permit);
  s.of_kind = permit_fields{*how.permit, how.permits, std::move(semaphore_key)};
}

// No key under the name itself: a semaphore when its record is there.
bool decode_status(const status_record& record, node_lock_view& s) {
  if (record.type != "none" || record.permits.empty()) return false;
  auto p = record.permits.begin(), end = record.permits.end();
  s.content = key_content::semaphore;
  s.permits = number<unsigned>(*p++);
  for (; end - p >= 5; p += 5) {
    permit_hold h;
    h.permit = number<unsigned>(p[0]).value_or(0);
    h.token = p[1];
    h.pttl = std::chrono::milliseconds(number<long long>(p[2]).value_or(-2));
    if (!p[3].empty()) h.fence = number<std::uint64_t>(p[3]);
    node_lock_view slot;
    slot.token = h.token;
    describe_holder(p[4], slot);
    h.description = std::move(slot.description);
    s.permit_holds.push_back(std::move(h));
  }
  return true;
}

}  // namespace

// A permit's release is a mutex's, waking the semaphore's waiters
// (lock_state::waiters_key).
extern const kind_rounds semaphore_rounds{lock_kind::semaphore, false, acquire, extend, release_token_hold, clean_up, adopt,
                                   decode_status, nullptr};

}  // namespace redlock::detail
