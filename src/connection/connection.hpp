// SPDX-License-Identifier: Apache-2.0
// One connection to one master: Asio TCP (or TLS), pipelined requests matched
// to replies in FIFO order, a deadline per request, lazy reconnect with capped
// backoff. Lives on the client's strand; never blocks.
//
// A request whose deadline passes is completed with errc::timeout at once, but
// its slot stays in the FIFO until its reply arrives (and is dropped), so later
// replies can never be matched to the wrong request. The state of a timed-out
// request on the master is unknown: callers must treat it as possibly applied.
//
// A clean-up (delivery::must_reach: releases) is never failed fast: it opens
// the connection even during reconnect back-off, it is not held to the
// pending limit (it always follows what it cleans up, in order), and a
// graceful shutdown keeps the connection until its clean-ups were answered
// (bounded by connect_timeout + node_timeout), so "release everywhere"
// reaches every master that is reachable within that time.
#pragma once

#include "connection_config.hpp"
#include "node_address.hpp"
#include "handler_memory.hpp"
#include "resp.hpp"

#include <redlock/clock.hpp>
#include <redlock/options.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/container/devector.hpp>
#include <boost/smart_ptr/intrusive_ptr.hpp>
#include <boost/smart_ptr/intrusive_ref_counter.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace redlock::detail {

/// The client's strand, type-erased. Over an io_context's executor it is a
/// strand of that concrete executor (small enough for any_io_executor's
/// inline storage): a strand of any_io_executor costs heap allocations on
/// every handler it runs (Asio 1.81 allocates the result of each `blocking`
/// query on an any_io_executor, and wrapping such a strand in one is too big
/// for its inline storage). Same serialisation either way.
using strand_type = boost::asio::any_io_executor;

/// A new strand over `ex` (see strand_type).
strand_type make_client_strand(const boost::asio::any_io_executor& ex);

/// Calls `f` with the io_context executor behind `ex` (as it is, or
/// tracking outstanding work) and returns true; false when `ex` is not an
/// io_context's. The client reaches concrete types this way where
/// any_io_executor would cost allocations (the strand, the completion
/// executor).
template <typename F>
bool visit_io_context_executor(const boost::asio::any_io_executor& ex, F&& f) {
  using plain = boost::asio::io_context::executor_type;
  using tracked = std::decay_t<decltype(boost::asio::require(std::declval<plain>(),
                                                             boost::asio::execution::outstanding_work.tracked))>;
  if (auto* e = ex.target<plain>()) return f(*e), true;
  if (auto* e = ex.target<tracked>()) return f(*e), true;
  return false;
}

/// Receives the outcome of requests. Called exactly once per request, on the
/// strand: with a reply (`ec` clear; the reply may be an error reply), or with
/// `reply == nullptr` and `ec` set (timeout, connection failure).
class reply_sink : public boost::intrusive_ref_counter<reply_sink, boost::thread_unsafe_counter> {
 public:
  virtual ~reply_sink() = default;
  virtual void on_reply(std::uint32_t tag, const boost::system::error_code& ec, const redisReply* reply) = 0;
};
using sink_ptr = boost::intrusive_ptr<reply_sink>;

/// How hard a request tries to reach its master.
enum class delivery : std::uint8_t {
  fail_fast,   ///< fails at once while the connection is in reconnect back-off
  must_reach,  ///< a clean-up: connects even in back-off; a graceful shutdown waits for its reply
};

class connection : public std::enable_shared_from_this<connection> {
 public:
  /// `preload`: encoded commands pipelined after AUTH/SELECT on every new
  /// connection (SCRIPT LOAD of every script), `preload_count` of them;
  /// their replies are consumed here.
  connection(strand_type strand, node_address address, const connection_config& config,
             boost::asio::ssl::context* tls_context, std::string preload = {}, std::size_t preload_count = 0);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Queues one encoded command. Never completes inline: failures detected
  /// here are posted. Must be called on the strand.
  void send(std::string_view encoded, std::chrono::steady_clock::time_point deadline, sink_ptr sink,
            std::uint32_t tag, delivery how = delivery::fail_fast);

  /// Fails everything outstanding with errc::shutting_down and closes.
  void shutdown();
  /// Graceful: fails every request but the clean-ups now, keeps the
  /// connection (connecting, if it is) until the clean-ups were answered or
  /// failed, at most connect_timeout + node_timeout, then shuts down and
  /// calls `on_closed` (posted, on the strand). New requests other than
  /// clean-ups fail meanwhile.
  void shutdown_after_cleanups(std::function<void()> on_closed);

  // ---- push mode (a pub/sub subscriber connection) ----
  /// Every reply after the handshake goes to `on_push` instead of a request.
  /// `on_ready` runs each time the connection (re)opens, to (re)subscribe.
  void enable_push(std::function<void(const redisReply&)> on_push, std::function<void()> on_ready);
  /// Sends a command whose answers arrive as pushes (SUBSCRIBE, UNSUBSCRIBE).
  /// Opens the connection if needed; dropped silently if it cannot be sent
  /// now (on_ready resubscribes when the connection comes back).
  void send_push(std::string_view encoded);
  /// Push mode: stay connected while `on` — reconnect by itself after a drop
  /// (on_ready then resubscribes), and close a connection that stays silent
  /// for stall_timeout (it PINGs when quiet, so a live master always answers).
  void keep_push_open(bool on);

  const node_address& address() const noexcept { return address_; }
  const std::string& display() const noexcept { return display_; }

 private:
  enum class state : std::uint8_t { idle, connecting, ready, closed };
  enum class internal : std::uint8_t { none, auth, select, preload };

  struct pending {
    sink_ptr sink;  // null once completed (timed out) or for handshake entries
    std::uint32_t tag = 0;
    internal kind = internal::none;
    std::chrono::steady_clock::time_point deadline;
    bool must_reach = false;  // a clean-up: a graceful shutdown waits for its reply
  };

  void start_connect();
  void on_connected();
  void start_handshake();
  void start_write();
  void start_read();
  /// TLS: feeds the reader every record already received, without waiting;
  /// false when that failed (the connection is closed).
  bool read_received_records();
  /// Answers every complete reply the reader holds.
  void on_replies();
  void on_internal_reply(internal kind, const redisReply* reply);
  /// Appends an encoded command to what is written next: held back until
  /// AUTH and SELECT succeeded on a new connection (start_handshake).
  void queue_bytes(std::string_view encoded);
  /// `server_said`: the error reply that ended the handshake, for the log.
  void fail_all(boost::system::error_code ec, bool connect_failure, std::string_view server_said = {});
  void post_failure(sink_ptr sink, std::uint32_t tag, boost::system::error_code ec);
  void arm_timer(std::chrono::steady_clock::time_point at);
  void on_timer();
  void close_socket();
  void finish_draining_if_done();
  void schedule_push_check(std::chrono::steady_clock::time_point at);
  void on_push_check();

  strand_type strand_;
  node_address address_;
  std::string display_;
  const connection_config options_;  // a copy: handlers may run after the client is gone
  boost::asio::ssl::context* tls_context_;
  std::string preload_;
  std::size_t preload_count_;

  using tls_stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;
  boost::asio::ip::tcp::socket socket_;  // plain TCP; with TLS, moved into tls_ once connected
  // Shared with every handler of an operation on it: closing drops only our
  // reference, so a stream is never destroyed under its outstanding read,
  // write or handshake (their handlers run, see operation_aborted, and let go).
  std::shared_ptr<tls_stream> tls_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::steady_timer timer_;          // request deadlines and stall detection
  boost::asio::steady_timer connect_timer_;  // bounds connect + handshake
  boost::asio::steady_timer push_timer_;     // push mode: heartbeat and reconnect
  std::chrono::steady_clock::time_point timer_at_ = std::chrono::steady_clock::time_point::max();

  state state_ = state::idle;
  std::uint64_t generation_ = 0;  // bumped on every close: stale handlers check it
  bool writing_ = false;
  std::string write_buf_;  // queued, not yet handed to the socket
  std::string tx_buf_;     // being written
  // A new connection's AUTH and SELECT replies still due, and what was
  // queued meanwhile: Redis runs the commands behind a refused one anyway
  // (on database 0, as the default user), so nothing else is written before.
  std::uint8_t gate_replies_due_ = 0;
  std::string behind_gate_;
  // A devector, not a deque: as a FIFO it slides its elements back to the
  // front of its buffer instead of allocating a node every few requests.
  boost::container::devector<pending> pending_;
  std::array<char, 16384> rx_buf_;
  // One each for the read and the write path (at most one of each is under
  // way): see start_on_strand in connection.cpp.
  std::shared_ptr<handler_memory> read_memory_ = std::make_shared<handler_memory>();
  std::shared_ptr<handler_memory> write_memory_ = std::make_shared<handler_memory>();
  reply_reader reader_;
  std::chrono::steady_clock::time_point last_rx_;
  std::chrono::steady_clock::time_point reconnect_after_{};
  std::chrono::milliseconds backoff_;
  std::function<void(const redisReply&)> on_push_;
  std::function<void()> on_ready_;
  bool keep_push_open_ = false;
  bool draining_ = false;  // shutdown_after_cleanups() called, clean-ups still in flight
  std::chrono::steady_clock::time_point drain_deadline_{};
  std::function<void()> on_closed_;
};

}  // namespace redlock::detail
