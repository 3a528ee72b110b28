// SPDX-License-Identifier: Apache-2.0
// Requests on one connection: queued, pipelined, matched to replies in order,
// each failed at its own deadline; a connection silent for stall_timeout is
// closed (connection_open.cpp) and its requests fail.
#include "connection.hpp"

#include <redlock/error.hpp>
#include <redlock/observer.hpp>

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace redlock::detail {

namespace asio = boost::asio;
using steady = std::chrono::steady_clock;
using boost::system::error_code;

strand_type make_client_strand(const asio::any_io_executor& ex) {
  strand_type strand;
  if (!visit_io_context_executor(ex, [&](const auto& e) { strand = asio::make_strand(e); }))
    strand = asio::make_strand(ex);
  return strand;
}

namespace {

// The TLS alert a master sent, in OpenSSL's words ("tlsv13 alert certificate
// required"), or empty for any other error.
std::string tls_alert_of(const boost::system::error_code& ec) {
  if (ec.category() != asio::error::get_ssl_category()) return {};
  if (ERR_GET_REASON(static_cast<unsigned long>(ec.value())) < SSL_AD_REASON_OFFSET) return {};
  return ec.message();
}

// Starts an operation, `initiate(handler)`, with `handler` bound to `memory`
// (the operation and its completion's wrapper reuse it; with TLS, so do the
// socket operations the stream makes) and to the strand as its concrete
// type when it is one over an io_context: behind any_io_executor, every
// completion was wrapped in a type-erased function from Asio's per-thread
// cache before the strand queued it (redlock-bench alloc).
template <typename Handler, typename Initiate>
void start_on_strand(const strand_type& strand, std::shared_ptr<handler_memory> memory, Handler handler,
                     Initiate initiate) {
  auto with_memory = asio::bind_allocator(handler_allocator<void>(std::move(memory)), std::move(handler));
  if (auto* concrete = strand.target<asio::strand<asio::io_context::executor_type>>())
    initiate(asio::bind_executor(*concrete, std::move(with_memory)));
  else
    initiate(std::move(with_memory));
}

}  // namespace

connection::connection(strand_type strand, node_address address, const connection_config& options,
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
  // The limit is back-pressure on new work, and a clean-up is none: it
  // undoes a request sent before it here and counts on running after it
  // (docs/algorithm.md, section 6). Refused, it would never be written while
  // that request may still apply, and the key would stay a whole TTL. A
  // client sends a few per master for each attempt or hold at most, and the
  // stall timeout bounds how long a queue to a silent master grows.
  if (pending_.size() >= options_.max_pending_per_node && !must_reach)
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
  queue_bytes(encoded);
  pending_.push_back({std::move(sink), tag, internal::none, deadline, must_reach});
  if (deadline < timer_at_) arm_timer(deadline);
  if (state_ == state::ready) start_write();
}

void connection::queue_bytes(std::string_view encoded) {
  (gate_replies_due_ ? behind_gate_ : write_buf_).append(encoded);
}

void connection::start_write() {
  if (writing_ || write_buf_.empty() || state_ != state::ready) return;
  // A quiet connection (at most one reply still due besides this request's:
  // a release sent before the last of its acquire's replies came, for one)
  // hands the request to the kernel at once: it fits the socket's buffer,
  // and this saves the asynchronous write's operation and its completion
  // (redlock-bench alloc). A busy one writes asynchronously, so that the
  // requests queued while that write is under way go out together (writing
  // each at once costs throughput with many operations in flight:
  // bench/README.md, "What the measurements decided"). What did not fit, or
  // an error, goes the asynchronous way, which reports it.
  if (!tls_ && pending_.size() <= 2 && socket_.non_blocking()) {
    error_code ec;
    auto n = socket_.write_some(asio::buffer(write_buf_), ec);
    if (!ec) write_buf_.erase(0, n);
    if (write_buf_.empty()) return;
  }
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
  start_on_strand(strand_, write_memory_, std::move(done), [this](auto handler) {
    if (tls_)
      asio::async_write(*tls_, asio::buffer(tx_buf_), std::move(handler));
    else
      asio::async_write(socket_, asio::buffer(tx_buf_), std::move(handler));
  });
}

void connection::start_read() {
  auto self = shared_from_this();
  auto gen = generation_;
  auto on_read = [self, gen, stream = tls_](error_code ec, std::size_t n) {
    if (gen != self->generation_) return;
    // A TLS alert says why the master hung up (in TLS 1.3 a master that
    // wants a client certificate refuses it only after the handshake):
    // "tlsv13 alert certificate required" goes to the log line.
    if (ec) return self->fail_all(errc::connection_lost, false, tls_alert_of(ec));
    self->reader_.feed(self->rx_buf_.data(), n);
    if (self->tls_ && !self->read_received_records()) return;
    self->on_replies();
    if (gen == self->generation_) self->start_read();
  };
  start_on_strand(strand_, read_memory_, std::move(on_read), [this](auto handler) {
    if (tls_)
      tls_->async_read_some(asio::buffer(rx_buf_), std::move(handler));
    else
      socket_.async_read_some(asio::buffer(rx_buf_), std::move(handler));
  });
}

bool connection::read_received_records() {
  // One read of a TLS stream returns one record. The replies to several
  // batches of pipelined requests arrive as several records, and answering
  // each record's replies before reading the next sent the requests they
  // unblock as as many small records: the batches never merged again (64
  // in flight: about 3 requests per record, against over 100 per write over
  // TCP; bench/README.md). So every record already received is read first,
  // as one read of a plain socket takes every reply there is; the socket
  // is non-blocking, so this never waits for the master. (In TLS 1.3 a
  // read writes only a fatal alert, and the connection closes then.)
  auto* ssl = tls_->native_handle();
  while (SSL_pending(ssl) > 0 || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0) {
    error_code ec;
    auto n = tls_->read_some(asio::buffer(rx_buf_), ec);
    if (ec == asio::error::would_block) break;  // the rest of a record is still on its way
    if (ec) return fail_all(errc::connection_lost, false, tls_alert_of(ec)), false;
    reader_.feed(rx_buf_.data(), n);
  }
  return true;
}

void connection::on_replies() {
  last_rx_ = steady::now();
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
  if (kind == internal::preload) return;
  if (is_error(*reply)) {
    // What was held back is failed unwritten: it did not apply.
    auto ec = kind == internal::auth ? make_error_code(errc::auth_failed) : make_error_code(errc::bad_database);
    return fail_all(ec, true, reply_text(*reply));
  }
  if (--gate_replies_due_ > 0) return;
  write_buf_.append(behind_gate_);
  behind_gate_.clear();
  start_write();
}

void connection::fail_all(error_code ec, bool connect_failure, std::string_view server_said) {
  if (auto& obs = options_.observer) {
    auto line = display_ + (connect_failure ? ": connect failed: " : ": connection closed: ") + ec.message();
    if (!server_said.empty()) line.append(" (the master said: ").append(server_said).append(")");
    obs->on_log(log_level::warning, line);
  }
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

}  // namespace redlock::detail
