// SPDX-License-Identifier: Apache-2.0
#include "storage_register.hpp"

#include <hiredis/hiredis.h>

#include <memory>
#include <stdexcept>

namespace redlock::fault {

// KEYS: reg:N1, log:L1, reg:N2, log:L2, ...  ARGV: kind ('B' or 'R'), sid,
// deadline (wall us), then name and cap per register. Returns the counters
// read, or nil when the holder's deadline has passed (nothing begun).
const char* const register_begin_script = R"(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
if now >= tonumber(ARGV[3]) then return false end
local out = {}
for i = 1, #KEYS / 2 do
  out[i] = redis.call('GET', KEYS[2 * i - 1]) or '0'
  redis.call('RPUSH', KEYS[2 * i], ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ARGV[2 + 2 * i] .. ' ' .. ARGV[3 + 2 * i] .. ' ' .. t[1] .. ' ' .. t[2])
end
return out
)";

// KEYS as above. ARGV: kind ('E' write back, 'Q' end of a read, 'A'
// abandoned), sid, deadline (wall us), then name, cap and the value to
// write per register. Past the deadline nothing is written and the entry
// says 'L'. Returns the kind appended.
const char* const register_end_script = R"(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local kind = ARGV[1]
if kind ~= 'A' and now >= tonumber(ARGV[3]) then kind = 'L' end
for i = 1, #KEYS / 2 do
  if kind == 'E' then redis.call('SET', KEYS[2 * i - 1], ARGV[3 + 3 * i]) end
  redis.call('RPUSH', KEYS[2 * i], kind .. ' ' .. ARGV[2] .. ' ' .. ARGV[1 + 3 * i] .. ' ' .. ARGV[2 + 3 * i] .. ' ' .. t[1] .. ' ' .. t[2])
end
return kind
)";

namespace {

std::vector<std::string> keys_of(const std::vector<register_target>& t) {
  std::vector<std::string> out;
  for (auto& r : t) {
    out.push_back("reg:" + r.name);
    out.push_back("log:" + r.log);
  }
  return out;
}

struct context_deleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using context_ptr = std::unique_ptr<redisContext, context_deleter>;

storage_reply copy(const redisReply* r) {
  storage_reply out;
  if (!r) return out;
  switch (r->type) {
    case REDIS_REPLY_STRING: out.is = storage_reply::type::string; break;
    case REDIS_REPLY_NIL: out.is = storage_reply::type::nil; break;
    case REDIS_REPLY_INTEGER: out.is = storage_reply::type::integer; break;
    case REDIS_REPLY_ERROR: out.is = storage_reply::type::error; break;
    case REDIS_REPLY_STATUS: out.is = storage_reply::type::status; break;
    case REDIS_REPLY_ARRAY: out.is = storage_reply::type::array; break;
    default: out.is = storage_reply::type::none; break;
  }
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STATUS)
    out.text.assign(r->str, r->len);
  out.integer = r->integer;
  if (r->type == REDIS_REPLY_ARRAY)
    for (std::size_t i = 0; i < r->elements; ++i) out.elements.push_back(copy(r->element[i]));
  return out;
}

context_ptr connect(const std::string& host, std::uint16_t port) {
  const timeval connect_timeout{1, 0}, reply_timeout{2, 0};
  context_ptr c(redisConnectWithTimeout(host.c_str(), port, connect_timeout));
  if (!c || c->err || redisSetTimeout(c.get(), reply_timeout) != REDIS_OK) return nullptr;
  return c;
}

storage_reply run(redisContext* c, const std::vector<std::string>& argv) {
  std::vector<const char*> args;
  std::vector<std::size_t> lens;
  for (auto& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(args.size()), args.data(), lens.data()));
  auto out = copy(r);
  if (r) freeReplyObject(r);
  return out;
}

}  // namespace

std::vector<std::string> register_begin_argv(const std::vector<register_target>& t, bool shared,
                                             const std::string& sid, std::int64_t deadline_us) {
  auto keys = keys_of(t);
  std::vector<std::string> argv{"EVAL", register_begin_script, std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), {shared ? "R" : "B", sid, std::to_string(deadline_us)});
  for (auto& r : t) argv.insert(argv.end(), {r.name, std::to_string(r.cap)});
  return argv;
}

std::vector<std::string> register_end_argv(const std::vector<register_target>& t, char kind, const std::string& sid,
                                           std::int64_t deadline_us, const std::vector<long long>& values) {
  auto keys = keys_of(t);
  std::vector<std::string> argv{"EVAL", register_end_script, std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), {std::string(1, kind), sid, std::to_string(deadline_us)});
  for (std::size_t i = 0; i < t.size(); ++i)
    argv.insert(argv.end(), {t[i].name, std::to_string(t[i].cap), std::to_string(i < values.size() ? values[i] : 0)});
  return argv;
}

std::int64_t wall_us(std::chrono::steady_clock::time_point t) {
  auto wall = std::chrono::system_clock::now() +
              std::chrono::duration_cast<std::chrono::system_clock::duration>(t - std::chrono::steady_clock::now());
  return std::chrono::duration_cast<std::chrono::microseconds>(wall.time_since_epoch()).count();
}

register_link::register_link(std::string host, std::uint16_t port)
    : host_(std::move(host)), port_(port), thread_([this] { run(); }) {}

register_link::~register_link() {
  {
    std::lock_guard g(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void register_link::submit(std::vector<std::string> argv, done_fn done) {
  {
    std::lock_guard g(mutex_);
    jobs_.push_back({std::move(argv), std::move(done)});
  }
  wake_.notify_one();
}

void register_link::run() {
  context_ptr c;
  for (;;) {
    job j;
    {
      std::unique_lock g(mutex_);
      wake_.wait(g, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, nothing left
      j = std::move(jobs_.front());
      jobs_.pop_front();
    }
    if (!c || c->err) c = connect(host_, port_);
    j.done(c ? fault::run(c.get(), j.argv) : storage_reply{});
  }
}

storage_reply storage_command(redisContext* c, const std::vector<std::string>& argv) { return run(c, argv); }

storage_reply storage_command(const std::string& host, std::uint16_t port, const std::vector<std::string>& argv) {
  auto c = connect(host, port);
  if (!c) throw std::runtime_error("cannot reach the storage at " + host + ":" + std::to_string(port));
  return run(c.get(), argv);
}

std::pair<std::string, std::uint16_t> host_port(const std::string& uri) {
  auto rest = uri.substr(uri.find("://") == std::string::npos ? 0 : uri.find("://") + 3);
  if (auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  if (auto slash = rest.find('/'); slash != std::string::npos) rest = rest.substr(0, slash);
  auto colon = rest.rfind(':');
  if (colon == std::string::npos) return {rest, 6379};
  return {rest.substr(0, colon), static_cast<std::uint16_t>(std::stoi(rest.substr(colon + 1)))};
}

register_state read_registers(const std::string& host, std::uint16_t port) {
  auto c = connect(host, port);
  if (!c) throw std::runtime_error("cannot reach the storage at " + host + ":" + std::to_string(port));
  register_state out;
  for (auto& k : run(c.get(), {"KEYS", "log:*"}).elements) {
    auto& entries = out.logs[k.text];
    for (auto& e : run(c.get(), {"LRANGE", k.text, "0", "-1"}).elements) entries.push_back(e.text);
  }
  for (auto& k : run(c.get(), {"KEYS", "reg:*"}).elements) {
    auto v = run(c.get(), {"GET", k.text});
    out.counters[k.text] = v.is == storage_reply::type::string ? std::stoll(v.text) : 0;
  }
  return out;
}

}  // namespace redlock::fault
