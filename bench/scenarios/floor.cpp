// SPDX-License-Identifier: Apache-2.0
// redlock-bench scenario floor: one master, then N at quorum, on raw links
// (plain TCP or TLS, hiredis's encoder and reader, no library code).
#include "raw_link.hpp"
#include "scenario_tools.hpp"

#include <poll.h>
#include <stdexcept>

namespace bench {

using namespace std::chrono_literals;

// The two round trips of an unfenced mutex (SET NX PX to every master, then
// a compare-and-delete script, lighter on the master than the library's
// release script, which also tends the wake list), hand-written on raw links
// with poll(), each round done at quorum: what N masters on this machine
// cost before any library code, over TCP or TLS alike. Late replies are
// drained outside the timed part.
struct quorum_floor::links {
  std::vector<std::unique_ptr<raw_link>> to;
  std::vector<std::size_t> owed;  // replies not read yet, per master
};

quorum_floor::quorum_floor(settings& s) : s_(s), links_(std::make_unique<links>()) {
  auto& to = links_->to;
  for (auto& m : s.masters) to.push_back(std::make_unique<raw_link>(m, s.tls_ca_file, 2000ms));
  links_->owed.assign(to.size(), 0);
  const std::string release =
      "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) end return 0";
  for (auto& l : to) {
    auto rep = l->command({"SCRIPT", "LOAD", release});
    if (rep->type != REDIS_REPLY_STRING) throw std::runtime_error("quorum floor: SCRIPT LOAD failed");
    release_sha_.assign(rep->str, rep->len);
  }
}

quorum_floor::~quorum_floor() = default;

void quorum_floor::pairs(std::size_t n, std::vector<double>& out) {
  auto& to = links_->to;
  auto& owed = links_->owed;
  const std::size_t quorum = to.size() / 2 + 1;
  const std::string ttl = std::to_string(s_.ttl.count());
  // Sends argv to every master; returns once `need` replies to it arrived.
  // A master's late reply to the previous round is read first and not
  // counted: counting it let a round finish before a quorum answered it.
  auto round = [&](const std::vector<std::string>& argv, std::size_t need) {
    std::vector<std::size_t> earlier = owed;
    for (std::size_t i = 0; i < to.size(); ++i) {
      to[i]->send(argv);
      ++owed[i];
    }
    std::size_t got = 0;
    std::vector<pollfd> fds(to.size());
    while (got < need) {
      for (std::size_t i = 0; i < to.size(); ++i) fds[i] = {to[i]->fd(), short(owed[i] ? POLLIN : 0), 0};
      if (::poll(fds.data(), fds.size(), 2000) <= 0) throw std::runtime_error("quorum floor: no reply");
      for (std::size_t i = 0; i < to.size(); ++i) {
        // An error or hang-up without data: the read reports it.
        if (!(fds[i].revents & (POLLIN | POLLERR | POLLHUP))) continue;
        to[i]->read_available();
        while (owed[i] && to[i]->next_reply()) {
          --owed[i];
          if (earlier[i] > 0)
            --earlier[i];
          else
            ++got;
        }
      }
    }
  };
  auto drain = [&] {
    std::size_t left = 0;
    for (auto o : owed) left += o;
    if (left) round({"PING"}, to.size());  // a PING queues behind them: all read once every PING is
  };
  for (std::size_t i = 0; i < n; ++i) {
    auto key = s_.tag + ":floor:q:" + std::to_string(next_key_++);
    auto t0 = steady::now();
    round({"SET", key, "bench", "NX", "PX", ttl}, quorum);
    round({"EVALSHA", release_sha_, "1", key, "bench"}, quorum);
    auto t1 = steady::now();
    drain();
    out.push_back(micros(t0, t1));
  }
}

std::vector<double> quorum_floor_pairs(settings& s, std::size_t n) {
  quorum_floor floor(s);
  std::vector<double> warm, pairs;
  floor.pairs(n / 5, warm);
  pairs.reserve(n);
  floor.pairs(n, pairs);
  return pairs;
}

outcome run_floor(settings& s) {
  outcome r;
  auto& m = s.masters.front();
  raw_link c(m, s.tls_ca_file, 2000ms);
  const std::string script = "if redis.call('SET',KEYS[1],ARGV[1],'NX','PX',ARGV[2]) then return 1 end return 0";
  std::string sha;
  {
    auto rep = c.command({"SCRIPT", "LOAD", script});
    if (rep->type != REDIS_REPLY_STRING) throw std::runtime_error("floor: SCRIPT LOAD failed");
    sha.assign(rep->str, rep->len);
  }
  const std::size_t warm = s.sized<std::size_t>(2000, 500, 100);
  const std::size_t n = s.sized<std::size_t>(20000, 3000, 500);
  const std::string ttl = std::to_string(s.ttl.count());
  std::vector<double> evalsha, set;
  evalsha.reserve(n);
  set.reserve(n);
  auto command = [&](const std::vector<std::string>& argv, auto check) {
    auto t0 = steady::now();
    auto rep = c.command(argv);
    auto t1 = steady::now();
    if (!check(*rep)) throw std::runtime_error("floor: unexpected reply to " + argv[0]);
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
  r.data["tls"] = m.tls;
  auto q = quorum_floor_pairs(s, s.sized<std::size_t>(10000, 2000, 300));
  r.data["quorum_pair_us"] = to_json(summarize(q));
  return r;
}

}  // namespace bench
