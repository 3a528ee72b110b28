// SPDX-License-Identifier: Apache-2.0
#include "lease_probe.hpp"

#include "probe_reading.hpp"

#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>

namespace redlock::fault {

namespace {


struct context_deleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct reply_deleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

void append(redisContext* c, const std::vector<std::string>& words) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (auto& w : words) {
    argv.push_back(w.data());
    lens.push_back(w.size());
  }
  redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data());
}

probe_reply copy(const redisReply* r) {
  probe_reply out;
  if (!r) return out;
  switch (r->type) {
    case REDIS_REPLY_STRING: out.is = probe_reply::type::string; break;
    case REDIS_REPLY_NIL: out.is = probe_reply::type::nil; break;
    case REDIS_REPLY_INTEGER: out.is = probe_reply::type::integer; break;
    case REDIS_REPLY_ERROR: out.is = probe_reply::type::error; break;
    default: out.is = probe_reply::type::other; break;
  }
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_ERROR) out.text.assign(r->str, r->len);
  out.integer = r->integer;
  return out;
}

}  // namespace

lease_probe::lease_probe(std::vector<target> masters) : masters_(std::move(masters)), thread_([this] { run(); }) {}

lease_probe::~lease_probe() {
  {
    std::lock_guard g(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void lease_probe::submit(std::string key, std::string token, bool hash, done_fn done, time_point not_after) {
  {
    std::lock_guard g(mutex_);
    jobs_.push_back({std::move(key), std::move(token), hash, std::move(done), not_after});
  }
  wake_.notify_one();
}

void lease_probe::run() {
  for (;;) {
    job j;
    {
      std::unique_lock g(mutex_);
      wake_.wait(g, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, nothing left
      j = std::move(jobs_.front());
      jobs_.pop_front();
    }
    // A job whose holder stopped waiting is answered unread: a backlog of
    // probes behind a stopped master drains at once.
    j.done(steady::now() < j.not_after ? read(j) : std::vector<master_view>{});
  }
}

std::vector<master_view> lease_probe::read(const job& j) const {
  std::vector<master_view> out;
  const timeval connect_timeout{0, 100'000}, reply_timeout{0, 150'000};
  for (auto& m : masters_) {
    probe_reply owner, pttl;  // none unless they come
    std::unique_ptr<redisContext, context_deleter> c(redisConnectWithTimeout("127.0.0.1", m.port, connect_timeout));
    if (c && !c->err && redisSetTimeout(c.get(), reply_timeout) == REDIS_OK) {
      // Owner and PTTL in one transaction: a key that expires and is taken
      // again between two separate reads would read as ours until the
      // other holder's expiry. Pipelined: a stopped master costs one
      // reply timeout, not four.
      std::vector<std::vector<std::string>> commands{
          {"MULTI"},
          j.hash ? std::vector<std::string>{"HEXISTS", j.key, j.token} : std::vector<std::string>{"GET", j.key},
          {"PTTL", j.key},
          {"EXEC"}};
      for (auto& words : commands) append(c.get(), words);
      std::vector<reply_ptr> replies;
      for (std::size_t i = 0; i < commands.size(); ++i) {
        void* r = nullptr;
        if (redisGetReply(c.get(), &r) != REDIS_OK) break;
        replies.emplace_back(static_cast<redisReply*>(r));
      }
      if (replies.size() == 4 && replies[3] && replies[3]->type == REDIS_REPLY_ARRAY && replies[3]->elements == 2) {
        owner = copy(replies[3]->element[0]);
        pttl = copy(replies[3]->element[1]);
      }
    }
    auto replied = steady::now();
    out.push_back(judge_master_reading(owner, pttl, j.token, j.hash, replied, m.clock_rate ? m.clock_rate() : 1.0));
  }
  return out;
}

}  // namespace redlock::fault
