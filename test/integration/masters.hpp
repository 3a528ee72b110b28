// SPDX-License-Identifier: Apache-2.0
// A set of real redis-server masters for one test, and helpers to look at
// what they hold.
#pragma once

#include <redis_process.hpp>

#include "scripts/keys.hpp"

#include <redlock/client.hpp>
#include <redlock/error.hpp>
#include <redlock/options.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
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
  /// Whether `key` is held on the masters that granted `l`, and those are a
  /// quorum. Not "on every master": a lock is won at a quorum, so a woken
  /// waiter's round can reach a master before the previous holder's release
  /// (which returned at a quorum too) and be refused there. A master still
  /// pending when `l` was decided may or may not have granted it since.
  bool held_where_granted(const std::string& key, const lock& l) {
    std::size_t granted = 0, maybe = 0;
    for (auto& n : l.nodes()) {
      granted += n.state == node_state::locked;
      maybe += n.state == node_state::locked || n.state == node_state::pending;
    }
    auto n = holding(key);
    return granted > size() / 2 && n >= granted && n <= maybe;
  }
  /// Runs one command on every running master.
  void on_all(const std::vector<std::string>& argv) {
    for (auto& s : servers_)
      if (s->running()) s->command(argv);
  }

 private:
  std::vector<std::unique_ptr<redis_process>> servers_;
};

/// The redlock error code `f` throws, or errc{} when it does not throw.
inline errc code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const error& e) {
    return static_cast<errc>(e.code().value());
  }
  return errc{};
}

/// Polls `p` until it holds or `limit` passes (replies after a quorum
/// decision may still be on their way to the other masters).
template <typename Pred>
bool eventually(Pred p, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return p();
}

/// Whether a waiter is woken by a release: `held` is released 300 ms after
/// `c` starts acquiring `name` with `waiting`, whose retry delay is set to 2 s
/// so that only a wake-up brings it in well before. Returns the time the
/// acquisition took (the new hold is released).
inline std::chrono::milliseconds wait_ended_by_release(client& c, const std::string& name, lock held,
                                                       acquire_options waiting) {
  waiting.wait = std::chrono::milliseconds(5000);
  waiting.retry_delay = std::chrono::milliseconds(2000);
  waiting.retry_jitter = std::chrono::milliseconds(0);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    c.release(held);
  });
  auto started = std::chrono::steady_clock::now();
  auto got = c.acquire(name, waiting);
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  releaser.join();
  c.release(got);
  return waited;
}

/// Calls a master has executed of the given commands (INFO commandstats).
inline long command_calls(redis_process& s, std::initializer_list<const char*> commands) {
  auto info = s.command({"INFO", "commandstats"});
  long total = 0;
  for (const char* cmd : commands) {
    auto needle = std::string("cmdstat_") + cmd + ":calls=";
    auto at = info.find(needle);
    if (at != std::string::npos) total += std::stol(info.substr(at + needle.size()));
  }
  return total;
}

/// Every master has `n` waiters on the wake list of `name` (a mutex's or a
/// semaphore's).
inline bool wake_list_is(masters& m, const std::string& name, std::size_t n) {
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i].command({"ZCARD", detail::keys::wake_list(name)}) != std::to_string(n)) return false;
  return true;
}

/// How many clients listen for their waiters' names on every master.
inline std::size_t listening_clients(masters& m, const std::string& name) {
  std::size_t fewest = SIZE_MAX;
  for (std::size_t i = 0; i < m.size(); ++i) {
    auto channels = m[i].command({"PUBSUB", "CHANNELS", detail::keys::wake_channel(name, "*")});
    auto n = channels.empty() ? 0 : static_cast<std::size_t>(std::count(channels.begin(), channels.end(), ' ')) + 1;
    fewest = std::min(fewest, n);
  }
  return fewest;
}

/// Lock commands (SET for the mutex, scripts for everything else).
inline long lock_calls(redis_process& s) { return command_calls(s, {"set", "evalsha", "eval"}); }
inline long script_calls(redis_process& s) { return command_calls(s, {"evalsha", "eval"}); }

}  // namespace redlock::testing
