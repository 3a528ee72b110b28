// SPDX-License-Identifier: Apache-2.0
// redlock-bench scenario floor: one master, plain blocking hiredis.
#include "scenario_tools.hpp"

#include <poll.h>
#include <stdexcept>

namespace bench {

using namespace std::chrono_literals;

// The same two rounds the library sends for an unfenced mutex (SET NX PX to
// every master, then the compare-and-delete script), hand-written on plain
// non-blocking hiredis contexts with poll(), each round done at quorum: what
// N masters on this machine cost before any library code. Late replies are
// drained outside the timed part.
std::optional<std::vector<double>> quorum_floor(settings& s, std::size_t n) {
  std::vector<hiredis_ptr> ctx;
  for (auto& m : s.masters) {
    if (m.tls) return std::nullopt;
    ctx.push_back(connect_blocking(m, 2000ms));
  }
  const std::string release =
      "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) end return 0";
  std::string sha;
  for (auto& c : ctx) {
    auto* rep = static_cast<redisReply*>(redisCommand(c.get(), "SCRIPT LOAD %s", release.c_str()));
    if (!rep || rep->type != REDIS_REPLY_STRING) throw std::runtime_error("quorum floor: SCRIPT LOAD failed");
    sha.assign(rep->str, rep->len);
    freeReplyObject(rep);
  }
  const std::size_t quorum = ctx.size() / 2 + 1;
  const std::string ttl = std::to_string(s.ttl.count());
  std::vector<std::size_t> owed(ctx.size(), 0);  // replies not read yet, per master
  // Sends argv to every master; returns once `need` replies to it arrived.
  // A master's late reply to the previous round is read first and not
  // counted: counting it let a round finish before a quorum answered it.
  auto round = [&](const std::vector<std::string>& argv, std::size_t need) {
    std::vector<std::size_t> earlier = owed;
    std::vector<const char*> a;
    std::vector<size_t> l;
    for (auto& x : argv) {
      a.push_back(x.data());
      l.push_back(x.size());
    }
    for (std::size_t i = 0; i < ctx.size(); ++i) {
      redisAppendCommandArgv(ctx[i].get(), int(a.size()), a.data(), l.data());
      int done = 0;
      while (!done)
        if (redisBufferWrite(ctx[i].get(), &done) != REDIS_OK) throw std::runtime_error("quorum floor: write failed");
      ++owed[i];
    }
    std::size_t got = 0;
    std::vector<pollfd> fds(ctx.size());
    while (got < need) {
      for (std::size_t i = 0; i < ctx.size(); ++i) fds[i] = {ctx[i]->fd, short(owed[i] ? POLLIN : 0), 0};
      if (::poll(fds.data(), fds.size(), 2000) <= 0) throw std::runtime_error("quorum floor: no reply");
      for (std::size_t i = 0; i < ctx.size(); ++i) {
        if (!(fds[i].revents & POLLIN)) continue;
        if (redisBufferRead(ctx[i].get()) != REDIS_OK) throw std::runtime_error("quorum floor: read failed");
        void* rep = nullptr;
        while (owed[i] && redisGetReplyFromReader(ctx[i].get(), &rep) == REDIS_OK && rep) {
          freeReplyObject(rep);
          --owed[i];
          if (earlier[i] > 0)
            --earlier[i];
          else
            ++got;
          rep = nullptr;
        }
      }
    }
  };
  auto drain = [&] {
    std::size_t left = 0;
    for (auto o : owed) left += o;
    if (left) round({"PING"}, ctx.size());  // a PING queues behind them: all read once every PING is
  };
  std::vector<double> pairs;
  pairs.reserve(n);
  const std::size_t warm = n / 5;
  for (std::size_t i = 0; i < warm + n; ++i) {
    auto key = s.tag + ":floor:q:" + std::to_string(i);
    auto t0 = steady::now();
    round({"SET", key, "bench", "NX", "PX", ttl}, quorum);
    round({"EVALSHA", sha, "1", key, "bench"}, quorum);
    auto t1 = steady::now();
    drain();
    if (i >= warm) pairs.push_back(micros(t0, t1));
  }
  return pairs;
}

outcome run_floor(settings& s) {
  outcome r;
  auto& m = s.masters.front();
  if (m.tls) {
    r.skipped = "the first master uses rediss://; the floor's plain hiredis context speaks TCP only";
    return r;
  }
  auto c = connect_blocking(m, 2000ms);
  const std::string script = "if redis.call('SET',KEYS[1],ARGV[1],'NX','PX',ARGV[2]) then return 1 end return 0";
  std::string sha;
  {
    auto* rep = static_cast<redisReply*>(redisCommand(c.get(), "SCRIPT LOAD %s", script.c_str()));
    if (!rep || rep->type != REDIS_REPLY_STRING) {
      if (rep) freeReplyObject(rep);
      throw std::runtime_error("floor: SCRIPT LOAD failed");
    }
    sha.assign(rep->str, rep->len);
    freeReplyObject(rep);
  }
  const std::size_t warm = s.sized<std::size_t>(2000, 500, 100);
  const std::size_t n = s.sized<std::size_t>(20000, 3000, 500);
  const std::string ttl = std::to_string(s.ttl.count());
  std::vector<double> evalsha, set;
  evalsha.reserve(n);
  set.reserve(n);
  auto command = [&](const std::vector<std::string>& argv, auto check) {
    const char* args[8];
    size_t lens[8];
    for (std::size_t i = 0; i < argv.size(); ++i) {
      args[i] = argv[i].data();
      lens[i] = argv[i].size();
    }
    auto t0 = steady::now();
    auto* rep = static_cast<redisReply*>(redisCommandArgv(c.get(), int(argv.size()), args, lens));
    auto t1 = steady::now();
    if (!rep) throw std::runtime_error("floor: " + argv[0] + " failed: " + std::string(c->errstr));
    bool ok = check(*rep);
    freeReplyObject(rep);
    if (!ok) throw std::runtime_error("floor: unexpected reply to " + argv[0]);
    return micros(t0, t1);
  };
  // Interleaved, so that drift of the machine's load affects both alike.
  for (std::size_t i = 0; i < warm + n; ++i) {
    std::vector<std::string> e{"EVALSHA", sha, "1", s.tag + ":floor:e:" + std::to_string(i), "bench", ttl};
    double te = command(e, [](const redisReply& rep) { return rep.type == REDIS_REPLY_INTEGER && rep.integer == 1; });
    std::vector<std::string> p{"SET", s.tag + ":floor:s:" + std::to_string(i), "bench", "PX", ttl};
    double ts = command(p, [](const redisReply& rep) { return rep.type == REDIS_REPLY_STATUS; });
    if (i >= warm) {
      evalsha.push_back(te);
      set.push_back(ts);
    }
  }
  r.data["node"] = m.uri;
  r.data["samples"] = n;
  r.data["script"] = script;
  r.data["evalsha_us"] = to_json(summarize(evalsha));
  r.data["set_us"] = to_json(summarize(set));
  if (auto q = quorum_floor(s, s.sized<std::size_t>(10000, 2000, 300))) r.data["quorum_pair_us"] = to_json(summarize(*q));
  return r;
}

}  // namespace bench
