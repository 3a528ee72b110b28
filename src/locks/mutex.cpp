#include "mutex.hpp"

#include "client/lock_state.hpp"
#include "lease/watchdog.hpp"
#include "quorum/fanout.hpp"
#include "quorum/validity.hpp"

#include <redlock/error.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <optional>

namespace redlock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// ---- reply classifiers --------------------------------------------------------

verdict classify_failure(const redisReply& r, error_code& ec) {
  ec = r.type == REDIS_REPLY_ERROR ? classify_error_reply(reply_text(r)) : make_error_code(errc::protocol_error);
  return verdict::failed;
}

verdict classify_acquire(const redisReply& r, node_outcome& out) {
  if (r.type == REDIS_REPLY_STATUS) return verdict::yes;
  if (r.type == REDIS_REPLY_INTEGER) {
    out.value = r.integer;  // fence counter
    return verdict::yes;
  }
  if (r.type == REDIS_REPLY_NIL) return verdict::no;
  return classify_failure(r, out.error);
}

// release and extend: 1 = done, 0 = not ours (expired or taken over)
verdict classify_one_zero(const redisReply& r, node_outcome& out) {
  if (r.type == REDIS_REPLY_INTEGER) return r.integer == 1 ? verdict::yes : verdict::no;
  return classify_failure(r, out.error);
}

// status: {type, holder, pttl, fence}
verdict classify_status(const redisReply& r, node_outcome& out) {
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 4) return classify_failure(r, out.error);
  for (std::size_t i = 0; i < r.elements; ++i) {
    auto* e = r.element[i];
    out.fields.push_back(e->type == REDIS_REPLY_INTEGER ? std::to_string(e->integer) : std::string(e->str, e->len));
  }
  return verdict::yes;
}

template <typename Handler, typename... Args>
void complete_on_handler_executor(const std::shared_ptr<client_impl>& client, Handler handler, Args&&... args) {
  // Runs inline when the handler's executor is the one we are on; otherwise
  // hands off to the handler's associated executor.
  asio::dispatch(client->executor, asio::append(std::move(handler), std::forward<Args>(args)...));
}

// ---- acquire --------------------------------------------------------------------

class acquire_op : public std::enable_shared_from_this<acquire_op> {
 public:
  acquire_op(std::shared_ptr<client_impl> client, std::string name, acquire_options options, acquire_handler handler)
      : client_(std::move(client)),
        name_(std::move(name)),
        key_(client_->key_for(name_)),
        options_(options),
        handler_(std::move(handler)) {}

  void start() {
    auto slot = asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected()) {
      slot.assign([weak = weak_from_this(), strand = client_->strand](asio::cancellation_type) {
        asio::post(strand, [weak] {
          if (auto self = weak.lock()) self->cancel();
        });
      });
    }
    wait_deadline_ = std::chrono::steady_clock::now() + options_.wait;
    attempt();
  }

 private:
  void attempt() {
    if (client_->stopped) return complete(errc::shutting_down, {});
    ++attempts_;
    token_ = client_->new_token();
    std::vector<std::string> keys{key_, client_impl::fence_key(key_)};
    std::vector<std::string> args{token_, std::to_string(options_.ttl.count()), options_.fenced ? "1" : "0"};
    auto round = boost::intrusive_ptr<fanout>(new fanout(client_, scripts::mutex_acquire, std::move(keys),
                                                         std::move(args), classify_acquire,
                                                         [self = shared_from_this()](fanout& f) { self->on_decided(f); }));
    // A grant that lands after this attempt was abandoned must be released
    // again: the first release may have run before it on that master.
    round->on_late_yes([self = shared_from_this(), token = token_](std::uint32_t) {
      if (self->token_ != token || self->abandoned_) release_everywhere(self->client_, self->key_, token);
    });
    abandoned_ = false;
    round->start();
  }

  void on_decided(fanout& f) {
    error_code why;
    if (f.succeeded()) {
      if (has_validity_left(f.started_at(), f.decided_at())) {
        if (cancelled_) return abandon_attempt({});
        if (!options_.fenced) return complete({}, make_lock(f, f.started_at(), std::nullopt));
        return start_raise(f);
      }
      why = errc::validity_expired;
    } else {
      why = f.failure();
      if (!why) why = errc::not_acquired;
    }
    abandon_attempt(why);
  }

  bool has_validity_left(steady_time started, steady_time decided) const {
    auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(decided - started);
    auto left = validity_left(options_.ttl, elapsed, client_->options.drift_factor);
    return left > std::chrono::microseconds(options_.min_validity) && left > std::chrono::microseconds(0);
  }

  // Failed (or cancelled) attempt: release on every master now, including the
  // ones that did not answer (their SET may still apply; FIFO order on the
  // connection puts our release after it). Then retry or give up.
  void abandon_attempt(error_code why) {
    abandoned_ = true;
    release_everywhere(client_, key_, token_);
    if (cancelled_) return complete(asio::error::operation_aborted, {});
    retry_or_fail(why);
  }

  // Fencing (docs/fencing.md): T = max of the counters our quorum returned;
  // raise the counter to T on a quorum of masters where we still hold the
  // lock. Any later holder's quorum meets ours on one of those masters, and
  // its INCR there runs after our hold ended, so its token exceeds T.
  void start_raise(const fanout& acquired) {
    auto token_value = acquired.max_value();
    auto started = acquired.started_at();
    boost::intrusive_ptr<const fanout> acquired_ref(&acquired);
    std::vector<std::string> keys{key_, client_impl::fence_key(key_)};
    std::vector<std::string> args{token_, std::to_string(token_value)};
    auto round = boost::intrusive_ptr<fanout>(new fanout(
        client_, scripts::fence_raise, std::move(keys), std::move(args), classify_one_zero,
        [self = shared_from_this(), acquired_ref, started, token_value](fanout& raise) {
          self->on_raised(*acquired_ref, raise, started, static_cast<std::uint64_t>(token_value));
        }));
    round->start();
  }

  void on_raised(const fanout& acquired, const fanout& raise, steady_time started, std::uint64_t token_value) {
    error_code why;
    if (raise.succeeded()) {
      // The token is only as good as the time left: the whole acquisition,
      // raise round included, must fit in the validity window.
      if (has_validity_left(started, raise.decided_at())) {
        if (cancelled_) return abandon_attempt({});
        return complete({}, make_lock(acquired, started, token_value));
      }
      why = errc::validity_expired;
    } else {
      why = raise.failure();
      if (!why) why = errc::not_acquired;
    }
    abandon_attempt(why);
  }

  // `fence` is the T that was raised: never recompute it from the acquisition
  // round, whose late replies may carry larger counters nobody raised.
  lock make_lock(const fanout& f, steady_time started, std::optional<std::uint64_t> fence) {
    auto s = std::make_shared<lock_state>();
    s->name = name_;
    s->key = key_;
    s->token = token_;
    s->ttl = options_.ttl;
    s->clock = client_->options.clock;
    s->owner = client_.get();
    auto drift = drift_allowance(options_.ttl, client_->options.drift_factor);
    s->set_valid_until(started + options_.ttl - drift);
    s->fence = fence;
    if (options_.renew) {
      s->on_lost = options_.on_lost;
      s->dog = std::make_shared<watchdog>(client_, s, options_.renew_fraction);
      s->dog->start();
    }
    s->nodes.reserve(f.outcomes().size());
    for (std::size_t i = 0; i < f.outcomes().size(); ++i) {
      auto& o = f.outcomes()[i];
      s->nodes.push_back({client_->nodes[i]->display(), o.state, o.error, o.latency});
    }
    return lock(std::move(s));
  }

  void retry_or_fail(error_code why) {
    bool count_ok = options_.max_attempts == 0 ? options_.wait.count() > 0 : attempts_ < options_.max_attempts;
    // Errors that retrying cannot fix end the wait at once.
    bool permanent = why == errc::wrong_type || why == errc::auth_failed;
    auto delay = client_->jittered(options_.retry_delay, options_.retry_jitter);
    if (options_.wait.count() > 0) {
      auto remaining = wait_deadline_ - std::chrono::steady_clock::now();
      if (remaining <= std::chrono::steady_clock::duration::zero()) count_ok = false;
      delay = std::min(delay, std::chrono::duration_cast<std::chrono::milliseconds>(remaining));
    }
    if (!count_ok || permanent) return complete(why, {});
    if (!timer_) timer_.emplace(client_->strand);
    timer_->expires_after(delay);
    waiting_ = true;
    timer_->async_wait([self = shared_from_this()](error_code) {
      self->waiting_ = false;
      if (self->cancelled_) return self->complete(asio::error::operation_aborted, {});
      self->attempt();
    });
  }

  void cancel() {
    if (done_) return;
    cancelled_ = true;
    if (waiting_) timer_->cancel();
  }

  void complete(error_code ec, lock l) {
    if (done_) return;
    done_ = true;
    auto slot = asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected()) slot.clear();
    complete_on_handler_executor(client_, std::move(handler_), ec, std::move(l));
  }

  std::shared_ptr<client_impl> client_;
  std::string name_;
  std::string key_;
  acquire_options options_;
  acquire_handler handler_;
  std::string token_;
  unsigned attempts_ = 0;
  std::chrono::steady_clock::time_point wait_deadline_;
  std::optional<asio::steady_timer> timer_;
  bool waiting_ = false;
  bool abandoned_ = false;  // the current attempt failed and was released
  bool cancelled_ = false;
  bool done_ = false;
};

}  // namespace

void release_everywhere(const std::shared_ptr<client_impl>& client, const std::string& key, const std::string& token) {
  boost::intrusive_ptr<fanout> round(new fanout(client, scripts::mutex_release, {key},
                                                {token, client_impl::channel(key)}, classify_one_zero, [](fanout&) {}));
  round->start();
}

void start_mutex_acquire(std::shared_ptr<client_impl> client, std::string name, acquire_options options,
                         acquire_handler handler) {
  std::make_shared<acquire_op>(std::move(client), std::move(name), options, std::move(handler))->start();
}

void start_mutex_release(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state,
                         done_handler handler) {
  state->released = true;
  if (state->dog) state->dog->stop();
  auto key = state->key;
  auto token = state->token;
  // std::function needs a copyable callable: the handler is move-only.
  auto h = std::make_shared<done_handler>(std::move(handler));
  auto on_decided = [client, state, h](fanout& f) {
    error_code ec;
    if (!f.succeeded()) {
      ec = f.failure();
      if (!ec) ec = errc::not_held;
    }
    state->set_valid_until(steady_time{});  // released: no validity left either way
    complete_on_handler_executor(client, std::move(*h), ec);
  };
  boost::intrusive_ptr<fanout> round(new fanout(client, scripts::mutex_release, {key},
                                                {token, client_impl::channel(key)}, classify_one_zero,
                                                std::move(on_decided)));
  round->start();
}

void run_extend(const std::shared_ptr<client_impl>& client, const std::shared_ptr<lock_state>& state, milliseconds ttl,
                std::function<void(error_code)> done) {
  auto on_decided = [client, state, ttl, done = std::move(done)](fanout& f) {
    error_code ec;
    if (f.succeeded()) {
      auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(f.decided_at() - f.started_at());
      if (validity_left(ttl, elapsed, client->options.drift_factor) > std::chrono::microseconds(0)) {
        state->set_valid_until(f.started_at() + ttl - drift_allowance(ttl, client->options.drift_factor));
      } else {
        ec = errc::validity_expired;
      }
    } else {
      ec = f.failure();
      if (!ec) ec = errc::not_held;
    }
    done(ec);
  };
  boost::intrusive_ptr<fanout> round(new fanout(client, scripts::mutex_extend, {state->key},
                                                {state->token, std::to_string(ttl.count())}, classify_one_zero,
                                                std::move(on_decided)));
  round->start();
}

void start_status(std::shared_ptr<client_impl> client, std::string name,
                  boost::asio::any_completion_handler<async_client::status_signature> handler) {
  auto key = client->key_for(name);
  auto h = std::make_shared<decltype(handler)>(std::move(handler));
  auto on_decided = [client, h](fanout& f) {
    std::vector<node_status> out;
    for (std::size_t i = 0; i < f.outcomes().size(); ++i) {
      auto& o = f.outcomes()[i];
      node_status s;
      s.node = client->nodes[i]->display();
      s.error = o.state == node_state::pending ? make_error_code(errc::timeout) : o.error;
      if (o.fields.size() == 4) {
        s.type = o.fields[0];
        s.holder = o.fields[1];
        s.pttl = std::chrono::milliseconds(std::stoll(o.fields[2]));
        if (!o.fields[3].empty()) s.fence = std::stoull(o.fields[3]);
      }
      out.push_back(std::move(s));
    }
    complete_on_handler_executor(client, std::move(*h), error_code{}, std::move(out));
  };
  boost::intrusive_ptr<fanout> round(new fanout(client, scripts::status, {key, client_impl::fence_key(key)}, {},
                                                classify_status, std::move(on_decided)));
  round->wait_for_all();
  round->start();
}

void start_mutex_extend(std::shared_ptr<client_impl> client, std::shared_ptr<lock_state> state, milliseconds ttl,
                        done_handler handler) {
  auto h = std::make_shared<done_handler>(std::move(handler));
  run_extend(client, state, ttl, [client, h](error_code ec) { complete_on_handler_executor(client, std::move(*h), ec); });
}

}  // namespace redlock::detail
