// SPDX-License-Identifier: Apache-2.0
// Leader election on top of the fenced, renewed mutex (docs/algorithm.md,
// section 14): the campaign, the resignation and the observers' watch.
#pragma once

#include "locks/client_impl.hpp"
#include "operations.hpp"

#include <redlock/election.hpp>

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <functional>
#include <optional>

namespace redlock::detail {

/// Acquires as a fenced, renewed mutex, then proclaims the epoch.
void start_campaign(std::shared_ptr<client_impl> client, std::string name, acquire_options options,
                    std::chrono::system_clock::time_point asked_at, acquire_handler handler);
/// Releases, then tells the observers.
void start_resign(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state, done_handler handler);

/// One async_client::observe: re-reads the masters when a campaign or
/// resignation announces a change, when the known leader's lease would end,
/// and (no leader known) every `fallback`; reports changes of leader.
class leader_watch : public std::enable_shared_from_this<leader_watch> {
 public:
  using change_fn = std::function<void(const std::optional<leader_info>&)>;
  leader_watch(std::shared_ptr<client_impl> client, std::string name, change_fn on_change,
               std::chrono::milliseconds fallback)
      : client_(client), name_(std::move(name)), on_change_(std::move(on_change)), fallback_(fallback) {}
  void start();  // on any thread
  void stop();   // on any thread

 private:
  void refresh();
  void on_views(const std::vector<node_lock_view>& views);

  std::weak_ptr<client_impl> client_;
  std::string name_;
  change_fn on_change_;
  std::chrono::milliseconds fallback_;
  std::atomic<bool> stopped_{false};
  // Strand only:
  // The timer of the next read is owned by its pending wait, not by this
  // watch: a leader_subscription may outlive its client, and an I/O object must
  // not be destroyed after its io_context (as lock_state's watchdog and
  // confirmation timer). The io_context's destruction destroys it with the
  // wait.
  std::weak_ptr<boost::asio::steady_timer> timer_;
  release_listener::waiter_id watch_id_ = 0;
  std::string channel_;
  bool reading_ = false, read_again_ = false, reported_ = false;
  std::optional<leader_info> last_;
};

}  // namespace redlock::detail
