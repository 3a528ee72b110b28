// SPDX-License-Identifier: Apache-2.0
// Reads what the masters hold for a lease, straight from each master's own
// port (never through the fault proxies, never through the library): is the
// lock still ours there, and until when. One thread of its own with plain
// hiredis and short timeouts, so a paused or dead master costs a bounded
// wait and reads as "unreadable". The workload asks while its holder still
// holds the lock and waits for the answer; check_lease_expiry judges it.
#pragma once

#include "history.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace redlock::fault {

class lease_probe {
 public:
  struct target {
    std::uint16_t port = 0;
    /// The master's clock rate now (1: not shimmed): PTTL is in its time.
    std::function<double()> clock_rate;
  };
  /// The masters as read, and the steady time the last reply came in.
  using done_fn = std::function<void(std::vector<master_view>)>;

  explicit lease_probe(std::vector<target> masters);
  ~lease_probe();
  lease_probe(const lease_probe&) = delete;
  lease_probe& operator=(const lease_probe&) = delete;

  /// Queues a read of `key` on every master: ours when it holds `token`
  /// (a string lock) or has the field `token` (a hash lock). `done` runs on
  /// the probe's thread; with no masters read when the job's turn comes
  /// after `not_after` (the holder no longer waits for it).
  void submit(std::string key, std::string token, bool hash, done_fn done, time_point not_after = time_point::max());

 private:
  struct job {
    std::string key, token;
    bool hash = false;
    done_fn done;
    time_point not_after = time_point::max();
  };
  std::vector<master_view> read(const job& j) const;
  void run();

  std::vector<target> masters_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<job> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace redlock::fault
