// A set of real redis-server masters for one test, and helpers to look at
// what they hold.
#pragma once

#include <redis_process.hpp>

#include <redlock/options.hpp>

#include <memory>
#include <string>
#include <vector>

namespace redlock::testing {

class masters {
 public:
  explicit masters(std::size_t n, const redis_options& o = {}) {
    for (std::size_t i = 0; i < n; ++i) servers_.push_back(std::make_unique<redis_process>(o));
  }
  std::size_t size() const { return servers_.size(); }
  redis_process& operator[](std::size_t i) { return *servers_[i]; }

  std::vector<std::string> uris() const {
    std::vector<std::string> out;
    for (auto& s : servers_) out.push_back(s->uri());
    return out;
  }
  client_options options(std::chrono::milliseconds node_timeout = std::chrono::milliseconds(100)) const {
    client_options o;
    o.nodes = uris();
    o.node_timeout = node_timeout;
    return o;
  }
  /// How many masters hold `key` (any type). Paused masters are skipped.
  std::size_t holding(const std::string& key) {
    std::size_t n = 0;
    for (auto& s : servers_)
      if (s->running() && s->command({"EXISTS", key}) == "1") ++n;
    return n;
  }
  /// Runs one command on every running master.
  void on_all(const std::vector<std::string>& argv) {
    for (auto& s : servers_)
      if (s->running()) s->command(argv);
  }

 private:
  std::vector<std::unique_ptr<redis_process>> servers_;
};

}  // namespace redlock::testing
