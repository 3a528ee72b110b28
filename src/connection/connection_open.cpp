// SPDX-License-Identifier: Apache-2.0
// A connection's life: resolve and connect (bounded by connect_timeout), the
// TLS handshake, AUTH/SELECT and the script preload; closing, and the two
// ways of shutting down (at once, or after the clean-ups in flight).
#include "connection.hpp"

#include <redlock/error.hpp>
#include <redlock/observer.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>

#include <openssl/ssl.h>

#include <vector>

namespace redlock::detail {

namespace asio = boost::asio;
using steady = std::chrono::steady_clock;
using boost::system::error_code;

void connection::start_connect() {
  state_ = state::connecting;
  auto self = shared_from_this();
  auto gen = generation_;
  connect_timer_.expires_after(options_.connect_timeout);
  connect_timer_.async_wait([self, gen](error_code ec) {
    if (ec || gen != self->generation_ || self->state_ != state::connecting) return;
    self->fail_all(errc::not_connected, true);
  });
  auto on_tcp = [self, gen](error_code ec) {
    if (gen != self->generation_) return;
    if (ec) return self->fail_all(errc::not_connected, true);
    self->on_connected();
  };
  error_code parse_ec;
  auto ip = asio::ip::make_address(address_.host, parse_ec);
  if (!parse_ec) {
    socket_.async_connect({ip, address_.port}, on_tcp);
    return;
  }
  resolver_.async_resolve(address_.host, std::to_string(address_.port),
                          [self, gen, on_tcp](error_code ec, asio::ip::tcp::resolver::results_type results) {
                            if (gen != self->generation_) return;
                            if (ec) return self->fail_all(errc::not_connected, true);
                            asio::async_connect(self->socket_, results,
                                                [on_tcp](error_code e, const auto&) { on_tcp(e); });
                          });
}

void connection::on_connected() {
  error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  socket_.set_option(asio::socket_base::keep_alive(true), ignored);
  socket_.non_blocking(true, ignored);  // see start_write, and read_received_records with TLS
  if (!address_.tls) {
    connect_timer_.cancel();
    start_handshake();
    return;
  }
  tls_ = std::make_shared<tls_stream>(std::move(socket_), *tls_context_);
  // Asio asks OpenSSL to free a connection's record buffers whenever they
  // are empty, so every record read or written allocated them again. A
  // client keeps few connections, each busy: it keeps the buffers (about
  // 34 KiB per connection) instead.
  SSL_clear_mode(tls_->native_handle(), SSL_MODE_RELEASE_BUFFERS);
  error_code not_ip;
  asio::ip::make_address(address_.host, not_ip);
  if (not_ip) SSL_set_tlsext_host_name(tls_->native_handle(), address_.host.c_str());
  if (options_.tls_verify) {
    tls_->set_verify_mode(asio::ssl::verify_peer);
    tls_->set_verify_callback(asio::ssl::host_name_verification(address_.host));
  } else {
    tls_->set_verify_mode(asio::ssl::verify_none);
  }
  auto self = shared_from_this();
  auto gen = generation_;
  tls_->async_handshake(asio::ssl::stream_base::client, [self, gen, stream = tls_](error_code ec) {
    if (gen != self->generation_) return;
    if (ec) return self->fail_all(errc::not_connected, true);
    self->connect_timer_.cancel();
    self->start_handshake();
  });
}

void connection::start_handshake() {
  // AUTH and SELECT go first, and the requests queued while connecting wait
  // for their replies (one round trip more per new connection that has
  // either): Redis answers a refused AUTH or SELECT with an error and runs
  // the commands pipelined behind it anyway, on database 0 or as the default
  // user, where a lock key would block that database's users while we
  // report it "failed, not taken". Their replies are consumed here.
  std::string hs;
  auto deadline = steady::now() + options_.connect_timeout;
  std::vector<pending> front;
  if (!address_.password.empty()) {
    if (address_.user.empty())
      append_command(hs, {"AUTH", address_.password});
    else
      append_command(hs, {"AUTH", address_.user, address_.password});
    front.push_back({nullptr, 0, internal::auth, deadline});
  }
  if (address_.db != 0) {
    auto db = std::to_string(address_.db);
    append_command(hs, {"SELECT", db});
    front.push_back({nullptr, 0, internal::select, deadline});
  }
  gate_replies_due_ = static_cast<std::uint8_t>(front.size());
  // Scripts are loaded before any request can use them: EVALSHA then never
  // meets NOSCRIPT on a fresh connection (a restarted master included). They
  // need not wait: scripts are loaded for every database and user.
  hs += preload_;
  for (std::size_t i = 0; i < preload_count_; ++i) front.push_back({nullptr, 0, internal::preload, deadline});
  pending_.insert(pending_.begin(), front.begin(), front.end());
  if (gate_replies_due_) std::swap(behind_gate_, write_buf_);
  write_buf_.insert(0, hs);
  state_ = state::ready;
  if (auto& obs = options_.observer) obs->on_log(log_level::info, display_ + ": connected");
  backoff_ = options_.reconnect_min;
  last_rx_ = steady::now();
  start_read();
  if (on_push_) schedule_push_check(last_rx_ + options_.stall_timeout / 3);
  if (on_ready_) on_ready_();  // may queue SUBSCRIBE behind the handshake
  start_write();
}

void connection::close_socket() {
  ++generation_;
  error_code ignored;
  resolver_.cancel();
  connect_timer_.cancel();
  socket_.close(ignored);
  if (tls_) {
    // Outstanding operations complete with operation_aborted; each holds the
    // stream until its handler has run.
    tls_->next_layer().close(ignored);
    tls_.reset();
  }
  reader_.reset();
  writing_ = false;
  write_buf_.clear();
  gate_replies_due_ = 0;
  behind_gate_.clear();
}

void connection::shutdown() {
  if (state_ == state::closed) return;
  state_ = state::closed;
  draining_ = false;
  timer_.cancel();
  push_timer_.cancel();
  close_socket();
  auto failed = std::move(pending_);
  pending_.clear();
  for (auto& p : failed)
    if (p.sink) post_failure(std::move(p.sink), p.tag, errc::shutting_down);
  if (auto done = std::exchange(on_closed_, nullptr)) asio::post(strand_, std::move(done));
}

void connection::shutdown_after_cleanups(std::function<void()> on_closed) {
  if (state_ == state::closed) {
    if (on_closed) asio::post(strand_, std::move(on_closed));
    return;
  }
  if (on_closed_ && on_closed)
    on_closed = [first = std::move(on_closed_), then = std::move(on_closed)] {
      first();
      then();
    };
  on_closed_ = std::move(on_closed);
  if (draining_) return;
  draining_ = true;
  keep_push_open_ = false;
  push_timer_.cancel();
  // Everything but the clean-ups fails now, as in shutdown(); their slots
  // stay, so the clean-ups' replies still match.
  for (auto& p : pending_)
    if (p.sink && !p.must_reach) post_failure(std::move(p.sink), p.tag, errc::shutting_down);
  drain_deadline_ = steady::now() + options_.connect_timeout + options_.node_timeout;
  finish_draining_if_done();
  if (draining_ && drain_deadline_ < timer_at_) arm_timer(drain_deadline_);
}

void connection::finish_draining_if_done() {
  if (!draining_) return;
  for (auto& p : pending_)
    if (p.must_reach) return;
  shutdown();
}
}  // namespace redlock::detail
