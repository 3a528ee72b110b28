// SPDX-License-Identifier: Apache-2.0
#include <redlock/fenced_store.hpp>

#include "connection/connection.hpp"
#include "scripts/keys.hpp"
#include "scripts/script_call.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <future>

namespace redlock {

namespace asio = boost::asio;
using boost::system::error_code;

namespace detail {

// One connection to the storage server on its own strand.
class store_impl {
 public:
  store_impl(asio::any_io_executor ex, node_address address, connection_config config)
      : executor(ex), strand(make_client_strand(ex)), config(std::move(config)) {
    if (address.tls) tls = make_tls_context(this->config);
    conn = std::make_shared<connection>(strand, std::move(address), this->config, tls.get());
  }
  asio::any_io_executor executor;
  strand_type strand;
  connection_config config;
  std::unique_ptr<asio::ssl::context> tls;  // rediss:// only
  std::shared_ptr<connection> conn;
};

namespace {

// fenced_write.lua refuses an older token with "STALE ..."; the connection
// layer knows only Redis's own error prefixes.
error_code classify_write_error(std::string_view message) {
  if (message.starts_with("STALE")) return errc::stale_token;
  return classify_error_reply(message);
}

// Sends EVALSHA, falls back once to EVAL on NOSCRIPT, completes the handler.
class write_call final : public reply_sink {
 public:
  write_call(std::shared_ptr<store_impl> store, script_call call,
             asio::any_completion_handler<fenced_store::done_signature> handler)
      : store_(std::move(store)), call_(std::move(call)), handler_(std::move(handler)) {}

  void send(bool with_body) {
    auto deadline = std::chrono::steady_clock::now() + store_->config.node_timeout;
    if (with_body)
      store_->conn->send(call_.eval(), deadline, sink_ptr(this), 0);
    else
      store_->conn->send(call_.evalsha(), deadline, sink_ptr(this), 0);
  }

  void on_reply(std::uint32_t, const error_code& ec, const redisReply* reply) override {
    if (reply && is_noscript(*reply) && !fell_back_) {
      fell_back_ = true;
      return send(true);
    }
    error_code result = ec;
    if (!ec && reply->type == REDIS_REPLY_ERROR) result = classify_write_error(reply_text(*reply));
    asio::dispatch(store_->executor, asio::append(std::move(handler_), result));
  }

 private:
  std::shared_ptr<store_impl> store_;
  script_call call_;
  asio::any_completion_handler<fenced_store::done_signature> handler_;
  bool fell_back_ = false;
};

}  // namespace
}  // namespace detail

fenced_store::fenced_store(asio::any_io_executor executor, const std::string& uri, milliseconds timeout)
    : fenced_store(std::move(executor), uri, fenced_store_options{.timeout = timeout}) {}

fenced_store::fenced_store(asio::any_io_executor executor, const std::string& uri,
                           const fenced_store_options& options) {
  if (options.timeout <= milliseconds(0))
    throw error(errc::bad_option, "fenced_store timeout must be > 0 (got " + std::to_string(options.timeout.count()) + " ms)");
  std::string why;
  auto address = detail::parse_node_uri(uri, why);
  if (!address) throw error(errc::bad_uri, why);
  detail::connection_config c;
  c.node_timeout = options.timeout;
  c.stall_timeout = std::max(c.stall_timeout, options.timeout * 2);
  c.tls_ca_file = options.tls_ca_file;
  c.tls_verify = options.tls_verify;
  impl_ = std::make_shared<detail::store_impl>(executor, std::move(*address), std::move(c));
}

fenced_store::~fenced_store() {
  asio::dispatch(impl_->strand, [impl = impl_] { impl->conn->shutdown(); });
}

void fenced_store::start_write(std::string resource, std::uint64_t token, std::string key, std::string value,
                               asio::any_completion_handler<done_signature> handler) {
  detail::script_call encoded(detail::scripts::fenced_write, {seen_key(resource), key}, {std::to_string(token), value});
  asio::dispatch(impl_->strand, [impl = impl_, encoded = std::move(encoded), h = std::move(handler)]() mutable {
    boost::intrusive_ptr<detail::write_call> call(new detail::write_call(impl, std::move(encoded), std::move(h)));
    call->send(false);
  });
}

void fenced_store::write(const std::string& resource, std::uint64_t token, const std::string& key,
                         const std::string& value) {
  error_code ec;
  write(resource, token, key, value, ec);
  if (ec) throw error(ec, "fenced write of '" + key + "' with token " + std::to_string(token) + ": " + ec.message());
}

void fenced_store::write(const std::string& resource, std::uint64_t token, const std::string& key,
                         const std::string& value, error_code& ec) {
  std::promise<error_code> result;
  auto f = result.get_future();
  async_write(resource, token, key, value, [&result](error_code e) { result.set_value(e); });
  ec = f.get();
}

std::string fenced_store::seen_key(const std::string& resource) { return detail::keys::fence_seen(resource); }

}  // namespace redlock
