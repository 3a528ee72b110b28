// SPDX-License-Identifier: Apache-2.0
#include "cluster.hpp"

#include <sstream>
#include <stdexcept>

namespace redlock::fault {

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

cluster::cluster(cluster_options o) : options_(std::move(o)) {
  char tmpl[] = "/tmp/redlock-fault-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("cluster: mkdtemp failed");
  dir_ = tmpl;
  testing::redis_options ro;
  ro.aof = options_.aof;
  // Lock masters never evict (docs/safety.md).
  ro.extra_args = {"--maxmemory-policy", "noeviction"};
  if (!options_.listen_ip.empty())
    ro.extra_args.insert(ro.extra_args.end(), {"--bind", "127.0.0.1", options_.listen_ip, "--protected-mode", "no"});
  for (std::size_t i = 0; i < options_.masters; ++i) {
    auto r = ro;
    if (options_.clock_shim) {
      clocks_.push_back(std::make_unique<clock_control>(dir_ / ("clock" + std::to_string(i))));
      r.preload = REDLOCK_CLOCKSHIM_PATH;
      r.extra_env = {clocks_.back()->env()};
    }
    masters_.push_back(std::make_unique<testing::redis_process>(r));
    if (options_.proxies && options_.listen_ip.empty())
      proxies_.push_back(std::make_unique<fault_proxy>(masters_.back()->port(), options_.seed * 131 + i));
  }
  if (!proxies_.empty())
    for (std::size_t c = 0; c < options_.client_views; ++c) {
      links_.emplace_back();
      for (std::size_t i = 0; i < masters_.size(); ++i)
        links_.back().push_back(std::make_unique<fault_proxy>(proxies_[i]->port(), options_.seed * 977 + c * 31 + i));
    }
  testing::redis_options so;
  if (!options_.listen_ip.empty())
    so.extra_args = {"--bind", "127.0.0.1", options_.listen_ip, "--protected-mode", "no"};
  storage_ = std::make_unique<testing::redis_process>(so);
}

cluster::~cluster() {
  links_.clear();
  proxies_.clear();
  masters_.clear();
  storage_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::vector<std::string> cluster::uris() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < masters_.size(); ++i) {
    if (!proxies_.empty())
      out.push_back(proxies_[i]->uri());
    else if (!options_.listen_ip.empty())
      out.push_back("redis://" + options_.listen_ip + ":" + std::to_string(masters_[i]->port()));
    else
      out.push_back(masters_[i]->uri());
  }
  return out;
}

std::vector<std::string> cluster::uris_of(std::size_t c) const {
  if (c >= links_.size()) return uris();
  std::vector<std::string> out;
  for (auto& l : links_[c]) out.push_back(l->uri());
  return out;
}

std::vector<std::string> cluster::loopback_uris() const {
  std::vector<std::string> out;
  for (auto& m : masters_) out.push_back(m->uri());
  return out;
}

std::string cluster::storage_uri() const {
  if (!options_.listen_ip.empty()) return "redis://" + options_.listen_ip + ":" + std::to_string(storage_->port());
  return storage_->uri();
}

std::shared_ptr<lease_probe> cluster::make_probe() {
  std::vector<lease_probe::target> targets;
  for (std::size_t i = 0; i < masters_.size(); ++i) {
    lease_probe::target t;
    t.port = masters_[i]->port();
    if (auto* clk = clock(i)) t.clock_rate = [clk] { return clk->rate(); };
    targets.push_back(std::move(t));
  }
  return std::make_shared<lease_probe>(std::move(targets));
}

std::vector<key_state> cluster::keys() {
  std::vector<key_state> out;
  for (std::size_t i = 0; i < masters_.size(); ++i) {
    auto& m = *masters_[i];
    if (!m.running()) continue;
    for (auto& k : words(m.command({"KEYS", "*"}))) {
      long long pttl = std::stoll(m.command({"PTTL", k}));
      // (append, not "m" + ...: g++ 12 reports a false -Wrestrict for that in optimized builds)
      out.push_back({std::string("m").append(std::to_string(i)).append(" (").append(m.uri()).append(")"), k, pttl});
    }
  }
  return out;
}

void cluster::heal_all() {
  for (auto& p : proxies_) p->heal();
  for (auto& per_client : links_)
    for (auto& l : per_client) l->heal();
  for (auto& m : masters_) {
    m->resume();
    if (!m->running()) m->restart(false);
    m->command({"CLIENT", "UNPAUSE"});
  }
}

}  // namespace redlock::fault
