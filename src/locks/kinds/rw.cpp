// SPDX-License-Identifier: Apache-2.0
// Read-write locks: a hash with one field per hold ('r:<hex>', 'w:<hex>')
// and its deadline; a writer that waits puts its mark up ({R}:writer) so
// that new readers wait for it (docs/algorithm.md, section 15). Re-entry is
// counted by the client alone; read-write holds write no description.
#include "encoding.hpp"
#include "status_record.hpp"

#include "quorum/replies.hpp"
#include "scripts/keys.hpp"

namespace redlock::detail {

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

namespace {

round_ptr acquire(const std::shared_ptr<client_impl>& client, const acquire_request& req,
                  quorum_round::decided_fn done) {
  return round_ptr(new quorum_round(
      client->masters, scripts::rw_acquire, {req.key, keys::word_of::fence(req.key), keys::waiting_writer(req.key)},
      {req.token, std::to_string(req.ttl.count()), fenced_word(req), req.kind == lock_kind::read ? "read" : "write",
       req.writer_mark, std::to_string(req.waiter_lapse.count())},
      classify_grant, std::move(done)));
}

round_ptr extend(const std::shared_ptr<client_impl>& client, const lock_state& s, milliseconds ttl,
                 quorum_round::decided_fn done) {
  return round_ptr(new quorum_round(client->masters, scripts::rw_extend, {s.key},
                                    {s.token, std::to_string(ttl.count())}, classify_one_zero, std::move(done)));
}

// A holder's release, which takes a writer's mark down with it.
round_ptr release(const std::shared_ptr<client_impl>& client, const lock_state& s, const release_terms&,
                  quorum_round::decided_fn done) {
  return rw_release_round(client, s.key, s.token, std::get<rw_fields>(s.of_kind).writer_mark, true, std::move(done));
}

void clean_up(const std::shared_ptr<client_impl>& client, const abandoned_attempt& attempt,
              const std::vector<std::uint32_t>& nodes) {
  rw_release_round(client, attempt.key, attempt.token, "", false, [](quorum_round&) {})->start_on(nodes);
}

void adopt(const client_impl&, lock_state& s, const adopt_options&) {
  s.of_kind = rw_fields{};
  s.described = false;
}

// Every field a hold, 'r:' or 'w:', and its deadline (rw_acquire.lua). (A
// lapsed hold the next script will drop may show.)
bool decode_status(const status_record& record, node_lock_view& s) {
  if (record.type != "hash" || record.owners.empty()) return false;
  for (auto o = record.owners.begin(); o + 1 < record.owners.end(); o += 2)
    if (!o->starts_with("r:") && !o->starts_with("w:")) return false;
  s.content = key_content::rwlock;
  for (auto o = record.owners.begin(); o + 1 < record.owners.end(); o += 2) s.owners.push_back({*o, 1});
  return true;
}

}  // namespace

extern const kind_rounds read_rounds{lock_kind::read, false, acquire, extend, release, clean_up, adopt, decode_status,
                               nullptr};
extern const kind_rounds write_rounds{lock_kind::write, false, acquire, extend, release, clean_up, adopt, decode_status,
                                nullptr};

}  // namespace redlock::detail
