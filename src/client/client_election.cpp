// SPDX-License-Identifier: Apache-2.0
// The sync client's leader election: campaign, resign, leader.
#include "client/options_check.hpp"
#include "client/sync_bridge.hpp"

namespace redlock {

using boost::system::error_code;
using namespace detail::sync_bridge;

lock client::campaign(const std::string& name, const acquire_options& given) {
  return campaign(name, given, std::stop_token{});
}

lock client::campaign(const std::string& name, const acquire_options& given, std::stop_token stop) {
  error_code ec;
  std::string message;
  std::shared_ptr<acquire_report> report;
  auto l = wait_campaign(name, given, std::move(stop), ec, message, report);
  if (ec && !message.empty()) throw_error(ec, message);
  if (ec) throw_not_acquired(ec, name, std::move(report));
  return l;
}

lock client::campaign(const std::string& name, const acquire_options& given, error_code& ec) {
  return campaign(name, given, std::stop_token{}, ec);
}

lock client::campaign(const std::string& name, const acquire_options& given, std::stop_token stop, error_code& ec) {
  std::string message;
  std::shared_ptr<acquire_report> report;
  return wait_campaign(name, given, std::move(stop), ec, message, report);
}

lock client::wait_campaign(const std::string& name, const acquire_options& given, std::stop_token stop,
                           error_code& ec, std::string& message, std::shared_ptr<acquire_report>& report) {
  io_->check_not_io_thread();
  auto opts = given;
  opts.fenced = opts.renew = true;
  if (auto bad = detail::check_acquire(name, opts, async_->options().node_timeout, async_->options().key_prefix)) {
    ec = bad.code;
    message = bad.message;
    return lock{};
  }
  if (stop.stop_requested()) {
    ec = cancelled;
    return lock{};
  }
  if (!opts.report) opts.report = std::make_shared<acquire_report>();
  report = opts.report;
  auto [result, l] =
      wait_for<error_code, lock>(on_strand(), std::move(stop),
                                 [&](auto done) { async_->async_campaign(name, opts, std::move(done)); });
  // A refusal that was not retried into success reads as "not acquired".
  ec = result == errc::validity_expired ? make_error_code(errc::not_acquired) : result;
  return ec ? lock{} : std::move(l);
}

void client::resign(const lock& leadership) {
  error_code ec;
  resign(leadership, ec);
  if (ec) throw_error(ec, "resign '" + (leadership ? leadership.name() : std::string()) + "'");
}

void client::resign(const lock& leadership, error_code& ec) {
  io_->check_not_io_thread();
  ec = std::get<0>(wait_for<error_code>([&](auto done) { async_->async_resign(leadership, std::move(done)); }));
}

std::optional<leader_info> client::leader(const std::string& name) {
  return leader_of(status(name), async_->quorum());
}

std::optional<leader_info> client::leader(const std::string& name, error_code& ec) {
  auto views = status(name, ec);
  if (ec) return std::nullopt;
  return leader_of(views, async_->quorum());
}

}  // namespace redlock
