// SPDX-License-Identifier: Apache-2.0
// Status: each master's view of a lock, read-only (`redlock status`).
#include "kinds.hpp"
#include "operations.hpp"
#include "quorum/replies.hpp"
#include "scripts/script.hpp"

#include <redlock/error.hpp>

namespace redlock::detail {

using boost::system::error_code;

namespace {

// status: {type, holder, pttl, fence, waiters}
verdict classify_status(const redisReply& r, node_outcome& out) {
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 5) return failed_reply(r, out);
  for (std::size_t i = 0; i < r.elements; ++i) {
    auto* e = r.element[i];
    out.fields.push_back(e->type == REDIS_REPLY_INTEGER ? std::to_string(e->integer) : std::string(e->str, e->len));
  }
  return verdict::yes;
}

}  // namespace

void start_status(std::shared_ptr<client_impl> client, std::string name, status_handler handler) {
  auto key = client->key_for(name);
  auto h = std::make_shared<status_handler>(std::move(handler));
  auto on_decided = [client, h](quorum_round& f) {
    std::vector<node_status> out;
    for (std::size_t i = 0; i < f.outcomes().size(); ++i) {
      auto& o = f.outcomes()[i];
      node_status s;
      s.node = client->masters->connections[i]->display();
      s.error = o.state == node_state::pending ? make_error_code(errc::timeout) : o.error;
      if (o.fields.size() == 5) {
        s.type = o.fields[0];
        s.holder = o.fields[1];
        s.pttl = std::chrono::milliseconds(std::stoll(o.fields[2]));
        if (!o.fields[3].empty()) s.fence = std::stoull(o.fields[3]);
        s.waiters = o.fields[4];
      }
      out.push_back(std::move(s));
    }
    complete_handler(client, std::move(*h), error_code{}, std::move(out));
  };
  round_ptr round(new quorum_round(client->masters, scripts::status,
                             {key, keys::fence(key), keys::queue(key)}, {}, classify_status,
                             std::move(on_decided)));
  round->wait_for_all();
  round->start();
}

}  // namespace redlock::detail
