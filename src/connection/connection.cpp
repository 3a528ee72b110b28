// SPDX-License-Identifier: Apache-2.0
#include "connection.hpp"

#include <redlock/error.hpp>
#include <redlock/observer.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/write.hpp>

#include <openssl/ssl.h>

namespace redlock::detail {

namespace asio = boost::asio;
using steady = std::chrono::steady_clock;
using boost::system::error_code;

std::unique_ptr<asio::ssl::context> make_tls_context(const client_options& options) {
  auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  error_code ec;
  if (options.tls_ca_file.empty())
    context->set_default_verify_paths(ec);
  else
    context->load_verify_file(options.tls_ca_file, ec);
  if (ec) {
    auto what = options.tls_ca_file.empty() ? std::string("the system's TLS trust store")
                                            : "TLS CA file '" + options.tls_ca_file + "'";
    throw error(errc::bad_option, what + " cannot be loaded: " + ec.message());
  }
  return context;
}

connection::connection(strand_type strand, node_address address, const client_options& options,
                       asio::ssl::context* tls_context, std::string preload, std::size_t preload_count)
    : strand_(std::move(strand)),
      address_(std::move(address)),
      display_(address_.display()),
      options_(options),
      tls_context_(tls_context),
      preload_(std::move(preload)),
      preload_count_(preload_count),
      socket_(strand_),
      resolver_(strand_),
      timer_(strand_),
      connect_timer_(strand_),
      push_timer_(strand_),
      reader_(options.max_reply_bytes, options.max_reply_elements),
      backoff_(options.reconnect_min) {}

connection::~connection() = default;

void connection::post_failure(sink_ptr sink, std::uint32_t tag, error_code ec) {
  asio::post(strand_, [sink = std::move(sink), tag, ec] { sink->on_reply(tag, ec, nullptr); });
}

void connection::send(std::string_view encoded, steady::time_point deadline, sink_ptr sink, std::uint32_t tag,
                      delivery how) {
  bool must_reach = how == delivery::must_reach;
  if (state_ == state::closed || (draining_ && !must_reach))
    return post_failure(std::move(sink), tag, errc::shutting_down);
  if (pending_.size() >= options_.max_pending_per_node)
    return post_failure(std::move(sink), tag, errc::too_many_pending);
  auto now = steady::now();
  if (state_ == state::idle) {
    // Right after a failed connect we fail fast instead of queueing behind a
    // master that is down: the quorum decides sooner. Not a clean-up: the
    // master may hold our key (restarted with it from its AOF, for one), and
    // one connect attempt is cheap next to a key left for a whole TTL.
    if (now < reconnect_after_ && !must_reach) return post_failure(std::move(sink), tag, errc::not_connected);
    start_connect();
  }
  if (pending_.empty()) last_rx_ = now;
  write_buf_.append(encoded);
  pending_.push_back({std::move(sink), tag, internal::none, deadline, must_reach});
  if (deadline < timer_at_) arm_timer(deadline);
  if (state_ == state::ready) start_write();
}

void connection::enable_push(std::function<void(const redisReply&)> on_push, std::function<void()> on_ready) {
  on_push_ = std::move(on_push);
  on_ready_ = std::move(on_ready);
}

void connection::keep_push_open(bool on) {
  keep_push_open_ = on;
  if (on && state_ == state::idle) schedule_push_check(std::max(steady::now(), reconnect_after_));
}

void connection::schedule_push_check(steady::time_point at) {
  push_timer_.expires_at(at);
  push_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->on_push_check();
  });
}

void connection::on_push_check() {
  auto now = steady::now();
  // A quiet subscriber is normal: PING after a third of the stall timeout, so
  // only a master that is gone (or a link that drops everything) stays silent.
  auto heartbeat = options_.stall_timeout / 3;
  switch (state_) {
    case state::closed:
      return;
    case state::idle:
      if (!keep_push_open_) return;
      if (now < reconnect_after_) return schedule_push_check(reconnect_after_);
      return start_connect();  // on_ready resubscribes; a failure schedules the next try
    case state::connecting:
      return;  // the connect timer ends it; a failure schedules the next try
    case state::ready:
      if (now - last_rx_ >= options_.stall_timeout) return fail_all(errc::connection_lost, false);
      if (now - last_rx_ >= heartbeat) {
        std::string ping;
        append_command(ping, {"PING"});
        write_buf_.append(ping);
        start_write();
      }
      return schedule_push_check(now + heartbeat);
  }
}

void connection::send_push(std::string_view encoded) {
  if (state_ == state::closed) return;
  if (state_ == state::idle) {
    if (steady::now() < reconnect_after_) return;
    start_connect();
    return;  // on_ready sends the whole subscription set once connected
  }
  if (state_ == state::connecting) return;
  write_buf_.append(encoded);
  start_write();
}

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
  if (!address_.tls) {
    connect_timer_.cancel();
    start_handshake();
    return;
  }
  tls_ = std::make_shared<tls_stream>(std::move(socket_), *tls_context_);
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
  // AUTH and SELECT go first, pipelined ahead of whatever was queued while
  // connecting; their replies are consumed here.
  std::string hs;
  auto deadline = steady::now() + options_.connect_timeout;
  std::deque<pending> front;
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
  // Scripts are loaded before any request can use them: EVALSHA then never
  // meets NOSCRIPT on a fresh connection (a restarted master included).
  hs += preload_;
  for (std::size_t i = 0; i < preload_count_; ++i) front.push_back({nullptr, 0, internal::preload, deadline});
  pending_.insert(pending_.begin(), front.begin(), front.end());
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

void connection::start_write() {
  if (writing_ || write_buf_.empty() || state_ != state::ready) return;
  writing_ = true;
  tx_buf_.clear();
  std::swap(tx_buf_, write_buf_);
  auto self = shared_from_this();
  auto gen = generation_;
  auto done = [self, gen, stream = tls_](error_code ec, std::size_t) {
    if (gen != self->generation_) return;
    self->writing_ = false;
    if (ec) return self->fail_all(errc::connection_lost, false);
    self->start_write();
  };
  if (tls_)
    asio::async_write(*tls_, asio::buffer(tx_buf_), std::move(done));
  else
    asio::async_write(socket_, asio::buffer(tx_buf_), std::move(done));
}

void connection::start_read() {
  auto self = shared_from_this();
  auto gen = generation_;
  auto on_read = [self, gen, stream = tls_](error_code ec, std::size_t n) {
    if (gen != self->generation_) return;
    if (ec) return self->fail_all(errc::connection_lost, false);
    self->on_bytes(n);
    if (gen == self->generation_) self->start_read();
  };
  if (tls_)
    tls_->async_read_some(asio::buffer(rx_buf_), std::move(on_read));
  else
    socket_.async_read_some(asio::buffer(rx_buf_), std::move(on_read));
}

void connection::on_bytes(std::size_t n) {
  last_rx_ = steady::now();
  reader_.feed(rx_buf_.data(), n);
  auto gen = generation_;
  for (;;) {
    error_code ec;
    reply_ptr reply = reader_.next(ec);
    if (ec) return fail_all(ec, false);
    if (!reply) return;
    if (pending_.empty()) {
      if (!on_push_) return fail_all(errc::protocol_error, false);  // a reply nobody asked for
      on_push_(*reply);
      if (gen != generation_) return;
      continue;
    }
    pending p = std::move(pending_.front());
    pending_.pop_front();
    if (p.kind != internal::none)
      on_internal_reply(p.kind, reply.get());
    else if (p.sink)
      p.sink->on_reply(p.tag, {}, reply.get());
    if (gen != generation_) return;  // a callback closed us
    if (p.must_reach) {
      finish_draining_if_done();
      if (gen != generation_) return;
    }
  }
}

void connection::on_internal_reply(internal kind, const redisReply* reply) {
  // A failed SCRIPT LOAD is not fatal: EVALSHA falls back to EVAL.
  if (!is_error(*reply) || kind == internal::preload) return;
  auto ec = classify_error_reply(reply_text(*reply));
  if (kind == internal::auth) ec = errc::auth_failed;
  fail_all(ec, true);
}

void connection::fail_all(error_code ec, bool connect_failure) {
  if (auto& obs = options_.observer)
    obs->on_log(log_level::warning, display_ + (connect_failure ? ": connect failed: " : ": connection closed: ") +
                                        ec.message());
  close_socket();
  if (state_ != state::closed) state_ = state::idle;
  auto now = steady::now();
  if (connect_failure) {
    reconnect_after_ = now + backoff_;
    backoff_ = std::min(backoff_ * 2, options_.reconnect_max);
  } else {
    reconnect_after_ = now + options_.reconnect_min;
  }
  auto failed = std::move(pending_);
  pending_.clear();
  for (auto& p : failed)
    if (p.sink) p.sink->on_reply(p.tag, ec, nullptr);
  if (draining_) return finish_draining_if_done();
  if (on_push_ && keep_push_open_ && state_ == state::idle) schedule_push_check(reconnect_after_);
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
}

void connection::arm_timer(steady::time_point at) {
  timer_at_ = at;
  timer_.expires_at(at);
  timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec == asio::error::operation_aborted) return;
    self->on_timer();
  });
}

void connection::on_timer() {
  timer_at_ = steady::time_point::max();
  auto now = steady::now();
  if (draining_ && now >= drain_deadline_) return shutdown();  // clean-ups had their chance
  auto next = draining_ ? drain_deadline_ : steady::time_point::max();
  std::vector<std::pair<sink_ptr, std::uint32_t>> expired;
  for (auto& p : pending_) {
    if (!p.sink) continue;
    if (p.deadline <= now)
      expired.emplace_back(std::move(p.sink), p.tag);
    else
      next = std::min(next, p.deadline);
  }
  // Stalled: nothing heard for stall_timeout while requests are outstanding
  // (master gone or blackholed), or the oldest request has waited that long
  // (a link so slow that bytes trickle in but every request times out).
  // Closing loses the FIFO slots, so fail them all and reconnect.
  bool stalled = false;
  if (!pending_.empty() && state_ == state::ready) {
    auto oldest_sent = pending_.front().deadline - options_.node_timeout;
    auto since = std::min(last_rx_, oldest_sent);
    stalled = now - last_rx_ >= options_.stall_timeout || now - oldest_sent >= options_.stall_timeout;
    next = std::min(next, since + options_.stall_timeout);
  }
  if (!stalled && next != steady::time_point::max()) arm_timer(next);
  for (auto& [sink, tag] : expired) sink->on_reply(tag, errc::timeout, nullptr);
  if (stalled) fail_all(errc::connection_lost, false);
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
