// SPDX-License-Identifier: Apache-2.0
#include "probes.hpp"

#include "scripts/keys.hpp"
#include "scripts/script.hpp"

#include <algorithm>
#include <cctype>

namespace redlock::detail {

lock_names names_of_lock(const std::string& key_prefix, const std::string& name) {
  auto key = key_prefix + name;
  // A fair waiter's wake-up channel ends with its client's random id.
  auto sample_client_id = std::string(32, '0');
  return {key,
          keys::fence(key),
          keys::queue(key),
          keys::queue_deadlines(key),
          keys::queue_terms(key),
          keys::released_channel(key),
          keys::wake_channel(key, sample_client_id),
          keys::wake_list(key),
          keys::wake_deadlines(key),
          keys::holder(key),
          keys::permit(key, 0),
          keys::permits(key),
          keys::waiting_writer(key),
          keys::leader_channel(key)};
}

std::vector<std::vector<std::string>> acl_probes(const lock_names& l) {
  const std::string field = std::string(32, '0') + ":owner";
  std::vector<std::vector<std::string>> p = {
      // Sent by the library itself.
      {"EVALSHA", std::string(scripts::mutex_acquire.sha1), "8", l.key, l.fence, l.queue, l.deadlines, l.terms,
       l.wake_list, l.wake_deadlines, l.holder},
      {"EVAL", "return 0", "8", l.key, l.fence, l.queue, l.deadlines, l.terms, l.wake_list, l.wake_deadlines,
       l.holder},
      {"SCRIPT", "LOAD", "return 0"},
      {"SUBSCRIBE", l.channel},
      {"SUBSCRIBE", l.wake_channel},
      {"UNSUBSCRIBE", l.channel},
      {"TYPE", l.key},
      // Called by the scripts (lua/*.lua); rights are checked at each call.
      {"SET", l.key, field, "NX", "PX", "10000"},
      {"GET", l.key},
      {"DEL", l.key},
      {"EXISTS", l.key},
      {"PEXPIRE", l.key, "10000"},
      {"PTTL", l.key},
      {"HEXISTS", l.key, field},
      {"HGET", l.key, field},
      {"HMGET", l.key, field, ":hold-id"},
      {"HGETALL", l.key},
      {"HINCRBY", l.key, field, "1"},
      {"HSET", l.key, field, "1"},
      {"HDEL", l.key, field},
      {"INCR", l.fence},
      {"GET", l.fence},
      {"SET", l.fence, "1"},
      {"ZADD", l.queue, "1", field},
      {"ZADD", l.deadlines, "1", field},
      {"ZRANGE", l.queue, "0", "-1"},
      {"ZRANGEBYSCORE", l.deadlines, "-inf", "1"},
      {"ZRANK", l.queue, field},
      {"ZCARD", l.queue},
      {"ZSCORE", l.queue, field},
      {"ZREM", l.queue, field},
      {"ZREM", l.deadlines, field},
      {"HGET", l.terms, field},
      {"HSET", l.terms, field, "1 10000"},
      {"HDEL", l.terms, field},
      {"PTTL", l.queue},
      {"PEXPIRE", l.queue, "10000"},
      {"PEXPIRE", l.deadlines, "10000"},
      {"PEXPIRE", l.terms, "10000"},
      {"ZADD", l.wake_list, "NX", "1", field},
      {"ZADD", l.wake_deadlines, "1", field},
      {"ZRANGE", l.wake_list, "0", "0"},
      {"ZRANGEBYSCORE", l.wake_deadlines, "-inf", "1"},
      {"ZREM", l.wake_list, field},
      {"ZREM", l.wake_deadlines, field},
      {"PTTL", l.wake_list},
      {"PTTL", l.wake_deadlines},
      {"PEXPIRE", l.wake_list, "10000"},
      {"PEXPIRE", l.wake_deadlines, "10000"},
      {"SET", l.holder, field + " host:1", "PX", "10000"},
      {"GET", l.holder},
      {"DEL", l.holder},
      {"PTTL", l.holder},
      {"PEXPIRE", l.holder, "10000"},
      {"HLEN", l.key},
      {"SET", l.permit_slot, field, "NX", "PX", "10000"},
      {"GET", l.permit_slot},
      {"DEL", l.permit_slot},
      {"GET", l.permits},
      {"SET", l.permits, "3", "PX", "10000"},
      {"PTTL", l.permits},
      {"GET", l.writer},
      {"SET", l.writer, field, "PX", "10000"},
      {"DEL", l.writer},
      {"SUBSCRIBE", l.leader_channel},
      {"PUBLISH", l.leader_channel, "1"},
      {"PUBLISH", l.channel, "1"},
      {"PUBLISH", l.wake_channel, "1"},
      {"TIME"},
  };
  return p;
}

std::vector<std::string> script_commands() {
  std::vector<std::string> out;
  for (const script* s : scripts::all) {
    std::string_view body = s->body;
    for (std::string_view call : {"redis.call(", "redis.pcall("}) {
      for (auto at = body.find(call); at != std::string_view::npos; at = body.find(call, at + 1)) {
        auto open = at + call.size();
        if (open >= body.size() || (body[open] != '\'' && body[open] != '"')) continue;
        auto close = body.find(body[open], open + 1);
        if (close == std::string_view::npos) continue;
        std::string name(body.substr(open + 1, close - open - 1));
        for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
      }
    }
  }
  return out;
}

}  // namespace redlock::detail
