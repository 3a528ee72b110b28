// SPDX-License-Identifier: Apache-2.0
// Names held together (acquire_options::other_names): a mutex on each name,
// one token for all of them ('s:<hex>'), taken and released by one call per
// master, all or none (docs/algorithm.md, section 13). A release frees each
// name for that name's waiters. A semaphore's stray slots are given back the
// same way (release_all.lua).
#include "encoding.hpp"

#include "quorum/replies.hpp"
#include "scripts/keys.hpp"

#include <algorithm>

namespace redlock::detail {

namespace {

// release_all.lua over `lock_keys`; `wake`: a holder's release, which wakes
// each freed name's first mutex waiter.
round_ptr release_keys_round(const std::shared_ptr<client_impl>& client, std::span<const std::string> lock_keys,
                             const std::string& token, bool described, bool wake, quorum_round::decided_fn done) {
  std::vector<std::string> script_keys(lock_keys.begin(), lock_keys.end());
  std::vector<std::string> args{token, std::to_string(lock_keys.size()), wake ? "wake" : ""};
  if (wake) {
    for (auto& k : lock_keys) {
      script_keys.push_back(keys::wake_list(k));
      script_keys.push_back(keys::wake_deadlines(k));
      args.push_back(keys::released_channel(k));
    }
  }
  if (described)
    for (auto& k : lock_keys) script_keys.push_back(keys::holder(k));
  return as_release(round_ptr(new quorum_round(client->masters, scripts::release_all, std::move(script_keys),
                                               std::move(args), classify_one_zero, std::move(done))));
}

}  // namespace

round_ptr release_all_round(const std::shared_ptr<client_impl>& client, const std::vector<std::string>& lock_keys,
                            const std::string& token, bool described, quorum_round::decided_fn done) {
  return release_keys_round(client, lock_keys, token, described, false, std::move(done));
}

namespace {

// 'OK', or (fenced) each name's counter in `fields`; nil = no.
verdict classify_multi_grant(const redisReply& r, node_outcome& out) {
  if (r.type == REDIS_REPLY_ARRAY) {
    for (std::size_t i = 0; i < r.elements; ++i) {
      // Counters are never negative: anything else is not our script's answer.
      if (r.element[i]->type != REDIS_REPLY_INTEGER || r.element[i]->integer < 0) return failed_reply(r, out);
      out.fields.push_back(std::to_string(r.element[i]->integer));
    }
    return verdict::yes;
  }
  return classify_grant(r, out);
}

// One call per master takes all of them or none.
round_ptr acquire(const std::shared_ptr<client_impl>& client, const acquire_request& req,
                  quorum_round::decided_fn done) {
  const bool described = !req.description.empty();
  std::vector<std::string> script_keys(req.keys.begin(), req.keys.end());
  if (req.fenced)
    for (auto& k : req.keys) script_keys.push_back(keys::fence(k));
  if (described)
    for (auto& k : req.keys) script_keys.push_back(keys::holder(k));
  auto ttl = std::to_string(req.ttl.count()), count = std::to_string(req.keys.size());
  const word description = req.description;
  auto args = with_last({req.token, ttl, fenced_word(req), count}, described ? &description : nullptr);
  return round_ptr(new quorum_round(client->masters, scripts::multi_acquire, script_keys, std::span<const word>(args),
                                    classify_multi_grant, std::move(done)));
}

// Every key, then their holder keys (multi_extend.lua).
round_ptr extend(const std::shared_ptr<client_impl>& client, const lock_state& s, milliseconds ttl,
                 quorum_round::decided_fn done) {
  auto& set = std::get<set_fields>(s.of_kind);
  auto script_keys = set.keys;
  if (s.described)
    for (auto& k : set.keys) script_keys.push_back(keys::holder(k));
  std::vector<std::string> args{s.token, std::to_string(ttl.count()), std::to_string(set.keys.size())};
  return round_ptr(new quorum_round(client->masters, scripts::multi_extend, std::move(script_keys), std::move(args),
                                    classify_one_zero, std::move(done)));
}

round_ptr release(const std::shared_ptr<client_impl>& client, const lock_state& s, const release_terms&,
                  quorum_round::decided_fn done) {
  return release_keys_round(client, std::get<set_fields>(s.of_kind).keys, s.token, s.described, true, std::move(done));
}

void clean_up(const std::shared_ptr<client_impl>& client, const abandoned_attempt& attempt,
              const std::vector<std::uint32_t>& nodes) {
  release_keys_round(client, attempt.keys, attempt.token, attempt.described, false, [](quorum_round&) {})
      ->start_on(nodes);
}

// All the names, sorted, and their keys, as an acquisition keeps them.
void adopt(const client_impl& client, lock_state& s, const adopt_options& how) {
  set_fields set{other_names_of(how), {}, {}};
  set.names.push_back(s.name);
  std::sort(set.names.begin(), set.names.end());
  for (auto& n : set.names) set.keys.push_back(client.key_for(n));
  s.of_kind = std::move(set);
}

}  // namespace

// A set's keys are mutexes: status reads them as such.
extern const kind_rounds set_rounds{lock_kind::mutex, true, acquire, extend, release, clean_up, adopt, nullptr, nullptr};

}  // namespace redlock::detail
