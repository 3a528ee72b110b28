// SPDX-License-Identifier: Apache-2.0
#include <redlock/client.hpp>

#include "client/options_check.hpp"
#include "client/sync_bridge.hpp"
#include "locks/kinds/kind_traits.hpp"

#include <boost/asio/post.hpp>

#include <sstream>

namespace redlock {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace detail::sync_bridge;

client::client(client_options options) : io_(std::make_unique<io_thread>()) {
  options.executor_runs_on_one_thread = true;  // io_thread: one thread runs it
  try {
    async_ = std::make_unique<async_client>(io_->context.get_executor(), std::move(options));
  } catch (...) {
    io_.reset();
    throw;
  }
}

client::~client() {
  if (async_ && io_) {
    // Wait until the shutdown has run on the client's strand: it clears every
    // connection's queue of requests, whose callbacks hold the operations and
    // through them the client. A marker posted to the io_context instead can
    // run first while the strand is busy, and stopping the I/O thread then
    // leaves that cycle behind (a leak LeakSanitizer caught).
    // Releases still in flight (a release returns at quorum; the other
    // masters' answers come later) are waited for first: the connections
    // bound that by connect_timeout + node_timeout; the margin is for a
    // busy machine.
    auto drained = std::make_shared<std::promise<void>>();
    auto done = drained->get_future();
    async_->shutdown_then([drained] { drained->set_value(); });
    auto& o = async_->options();
    done.wait_for(o.connect_timeout + o.node_timeout + std::chrono::seconds(2));
  }
  async_.reset();
}

async_client& client::async() noexcept { return *async_; }

std::function<void(std::function<void()>)> client::on_strand() {
  return [this](std::function<void()> f) { async_->post_on_strand(std::move(f)); };
}

std::pair<error_code, lock> client::wait_acquire(const std::string& name, const acquire_options& given,
                                                 std::stop_token stop, std::string& message,
                                                 std::shared_ptr<acquire_report>& report) {
  io_->check_not_io_thread();
  if (auto bad = detail::check_acquire(name, given, async_->options().node_timeout, async_->options().key_prefix)) {
    message = bad.message;
    return {bad.code, lock{}};
  }
  if (stop.stop_requested()) return {cancelled, lock{}};
  // Reentrant and fair locks belong to the calling thread unless told otherwise.
  acquire_options opts = given;
  if (detail::has_owner(opts.kind) && opts.owner.empty()) {
    std::ostringstream id;
    id << "thread-" << std::this_thread::get_id();
    opts.owner = id.str();
  }
  if (!opts.report) opts.report = std::make_shared<acquire_report>();
  report = opts.report;
  auto [ec, l] = wait_for<error_code, lock>(on_strand(), std::move(stop),
                                            [&](auto done) { async_->async_acquire(name, opts, std::move(done)); });
  return {ec, std::move(l)};
}

error_code client::wait_release(const lock& l) {
  io_->check_not_io_thread();
  return std::get<0>(wait_for<error_code>([&](auto done) { async_->async_release(l, std::move(done)); }));
}

error_code client::wait_extend(const lock& l, milliseconds ttl, std::string& message) {
  io_->check_not_io_thread();
  if (l) {
    if (auto bad = detail::check_ttl(ttl, async_->options().node_timeout)) {
      message = bad.message;
      return bad.code;
    }
  }
  return std::get<0>(wait_for<error_code>([&](auto done) { async_->async_extend(l, ttl, std::move(done)); }));
}

std::pair<error_code, std::vector<node_lock_view>> client::wait_status(const std::string& name) {
  io_->check_not_io_thread();
  auto [ec, views] = wait_for<error_code, std::vector<node_lock_view>>(
      [&](auto done) { async_->async_status(name, std::move(done)); });
  return {ec, std::move(views)};
}

std::optional<lock> client::try_acquire(const std::string& name, const acquire_options& given) {
  return try_acquire(name, given, std::stop_token{});
}

std::optional<lock> client::try_acquire(const std::string& name, const acquire_options& given, std::stop_token stop) {
  std::string message;
  std::shared_ptr<acquire_report> report;
  auto [ec, l] = wait_acquire(name, given, std::move(stop), message, report);
  if (!ec) return std::move(l);
  if (!message.empty()) throw_error(ec, message);
  if (ec == errc::not_acquired || ec == errc::validity_expired) return std::nullopt;
  throw_not_acquired(ec, name, std::move(report));
}

lock client::acquire(const std::string& name, const acquire_options& given) {
  return acquire(name, given, std::stop_token{});
}

lock client::acquire(const std::string& name, const acquire_options& given, std::stop_token stop) {
  std::string message;
  std::shared_ptr<acquire_report> report;
  auto [ec, l] = wait_acquire(name, given, std::move(stop), message, report);
  if (!ec) return std::move(l);
  if (!message.empty()) throw_error(ec, message);
  // A refusal that was not retried into success reads as "not acquired".
  if (ec == errc::validity_expired) ec = make_error_code(errc::not_acquired);
  throw_not_acquired(ec, name, std::move(report));
}

void client::release(const lock& l) {
  if (auto ec = wait_release(l)) throw_failed(ec, l ? "release '" + l.name() + "'" : "release");
}

void client::extend(const lock& l, milliseconds ttl) {
  std::string message;
  auto ec = wait_extend(l, ttl, message);
  if (ec && !message.empty()) throw_error(ec, message);
  if (ec) throw_failed(ec, l ? "extend '" + l.name() + "'" : "extend");
}

std::vector<node_lock_view> client::status(const std::string& name) {
  auto [ec, nodes] = wait_status(name);
  if (ec) throw_failed(ec, "status '" + name + "'");
  return std::move(nodes);
}

lock client::adopt(const std::string& name, const std::string& token, milliseconds ttl,
                   const adopt_options& how) const {
  return async_->adopt(name, token, ttl, how);
}

lock client::acquire(const std::string& name, const acquire_options& opts, error_code& ec) {
  return acquire(name, opts, std::stop_token{}, ec);
}

lock client::acquire(const std::string& name, const acquire_options& opts, std::stop_token stop, error_code& ec) {
  std::string message;
  std::shared_ptr<acquire_report> report;  // the caller's, if it set one
  auto [result, l] = wait_acquire(name, opts, std::move(stop), message, report);
  // A refusal that was not retried into success reads as "not acquired",
  // as the throwing form says.
  ec = result == errc::validity_expired ? make_error_code(errc::not_acquired) : result;
  return ec ? lock{} : std::move(l);
}

void client::release(const lock& l, error_code& ec) { ec = wait_release(l); }

void client::extend(const lock& l, milliseconds ttl, error_code& ec) {
  std::string message;
  ec = wait_extend(l, ttl, message);
}

std::vector<node_lock_view> client::status(const std::string& name, error_code& ec) {
  auto [result, nodes] = wait_status(name);
  ec = result;
  return ec ? std::vector<node_lock_view>{} : std::move(nodes);
}

guard client::lock_guard(const std::string& name, const acquire_options& opts) {
  return guard(*this, acquire(name, opts));
}

}  // namespace redlock
