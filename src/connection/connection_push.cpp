// SPDX-License-Identifier: Apache-2.0
// Push mode: a pub/sub subscriber connection that stays open by itself,
// PINGs when quiet and resubscribes after a reconnect (release_listener).
#include "connection.hpp"

#include <redlock/error.hpp>

#include <boost/asio/post.hpp>

namespace redlock::detail {

namespace asio = boost::asio;
using steady = std::chrono::steady_clock;
using boost::system::error_code;

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
        queue_bytes(ping);
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
  queue_bytes(encoded);
  start_write();
}

}  // namespace redlock::detail
