// SPDX-License-Identifier: Apache-2.0
#include <redlock/async_client.hpp>

#include "locks/adopt.hpp"
#include "locks/client_impl.hpp"
#include "lease/lock_state.hpp"
#include "client/options_check.hpp"
#include "locks/election.hpp"
#include "locks/kinds/kind_traits.hpp"
#include "locks/operations.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

namespace redlock {

namespace asio = boost::asio;

namespace {

template <typename Handler, typename... Args>
void fail_now(const asio::any_io_executor& fallback, Handler handler, Args&&... args) {
  // post() runs on `fallback`, then hands off to the handler's own executor.
  asio::post(fallback, asio::append(std::move(handler), std::forward<Args>(args)...));
}

// Bad arguments: the handler gets the code; the message naming the value
// goes to the observer's log (an error_code has no room for it).
template <typename Handler, typename... Args>
void refuse(const detail::client_impl& impl, Handler handler, const char* operation, const detail::check_result& bad,
            Args&&... args) {
  if (auto& obs = impl.options.observer) obs->on_log(log_level::warning, std::string(operation) + ": " + bad.message);
  fail_now(impl.executor, std::move(handler), bad.code, std::forward<Args>(args)...);
}

// The io_context behind an executor, when it is one (with or without
// outstanding work tracking); null for any other execution context.
asio::io_context* io_context_of(const asio::any_io_executor& ex) {
  asio::io_context* io = nullptr;
  detail::visit_io_context_executor(ex, [&](const auto& e) { io = &e.context(); });
  return io;
}

// Runs `f` on the client's strand: inline when this thread is in it (an
// operation started from one of our handlers, which run there), else queued.
// Through its concrete type when it has one of ours (make_client_strand, or
// the io_context's executor itself without a strand): any_io_executor wraps
// every function it runs in a type-erased one on the heap, inline or not.
template <typename F>
void dispatch_on_strand(const detail::strand_type& strand, F&& f) {
  using plain = asio::io_context::executor_type;
  if (auto* s = strand.target<asio::strand<plain>>()) return asio::dispatch(*s, std::forward<F>(f));
  if (auto* e = strand.target<plain>()) return asio::dispatch(*e, std::forward<F>(f));
  asio::dispatch(strand, std::forward<F>(f));
}

}  // namespace

async_client::async_client(executor_type executor, client_options options) {
  std::vector<detail::node_address> addresses;
  if (auto bad = detail::check_client_options(options, addresses)) throw error(bad.code, bad.message);
  impl_ = std::make_shared<detail::client_impl>(std::move(executor), std::move(options), std::move(addresses));
}

async_client::~async_client() {
  // The shutdown clears the connections' queues, whose requests hold the
  // operations and through them the client. On a stopped io_context a
  // handler for it would never run, and the client would keep itself alive:
  // nothing runs there now, so shut down here. Otherwise the releases in
  // flight still reach their masters first (bounded), as the user expects of
  // a release that already returned at quorum.
  if (auto* io = io_context_of(impl_->executor); io && io->stopped())
    impl_->shutdown();
  else
    asio::dispatch(impl_->strand, [impl = impl_] { impl->shutdown_after_releases({}); });
}

void async_client::shutdown_then(std::function<void()> then) {
  asio::dispatch(impl_->strand,
                 [impl = impl_, then = std::move(then)]() mutable { impl->shutdown_after_releases(std::move(then)); });
}

void async_client::post_on_strand(std::function<void()> f) { asio::post(impl_->strand, std::move(f)); }

async_client::executor_type async_client::get_executor() const noexcept { return impl_->executor; }
const client_options& async_client::options() const noexcept { return impl_->options; }
std::size_t async_client::quorum() const noexcept { return impl_->quorum(); }

void async_client::start_acquire(std::string name, acquire_options opts,
                                 asio::any_completion_handler<acquire_signature> handler) {
  if (auto bad = detail::check_acquire(name, opts, impl_->options.node_timeout, impl_->options.key_prefix))
    return refuse(*impl_, std::move(handler), "async_acquire", bad, lock{});
  if (detail::is_owner_kind(opts.kind) && opts.owner.empty())
    return refuse(*impl_, std::move(handler), "async_acquire",
                  {make_error_code(errc::bad_option),
                   "acquire_options::owner is empty: name the logical owner of a reentrant or fair lock"},
                  lock{});
  // A fair waiter's place in line is when its caller asked, not when the
  // client's strand got to it (which may be later under load).
  auto asked_at = std::chrono::system_clock::now();
  // Called from one of our handlers, the operation may run inside this
  // call: an outcome known at once is then posted (detail::initiation).
  detail::initiation under_way;
  dispatch_on_strand(impl_->strand, [impl = impl_, n = std::move(name), opts, asked_at, h = std::move(handler)]() mutable {
    detail::start_acquire(std::move(impl), std::move(n), opts, asked_at, std::move(h));
  });
}

void async_client::start_campaign(std::string name, acquire_options opts,
                                  asio::any_completion_handler<acquire_signature> handler) {
  opts.fenced = opts.renew = true;
  if (auto bad = detail::check_acquire(name, opts, impl_->options.node_timeout, impl_->options.key_prefix))
    return refuse(*impl_, std::move(handler), "async_campaign", bad, lock{});
  if (opts.kind != lock_kind::mutex || !detail::other_names_of(opts).empty())
    return refuse(*impl_, std::move(handler), "async_campaign",
                  {make_error_code(errc::bad_option), "a campaign is for one name, of the mutex kind"}, lock{});
  auto asked_at = std::chrono::system_clock::now();
  detail::initiation under_way;
  dispatch_on_strand(impl_->strand, [impl = impl_, n = std::move(name), opts, asked_at, h = std::move(handler)]() mutable {
    detail::start_campaign(std::move(impl), std::move(n), opts, asked_at, std::move(h));
  });
}

void async_client::start_resign(lock l, asio::any_completion_handler<done_signature> handler) {
  if (!l) return fail_now(impl_->executor, std::move(handler), make_error_code(errc::empty_lock));
  detail::initiation under_way;
  dispatch_on_strand(impl_->strand, [impl = impl_, s = detail::lock_access::state(l), h = std::move(handler)]() mutable {
    detail::start_resign(std::move(impl), std::move(s), std::move(h));
  });
}

void async_client::start_leader(std::string name, asio::any_completion_handler<leader_signature> handler) {
  // The status read's completion hands over to the caller's executor.
  auto ex = asio::get_associated_executor(handler, impl_->executor);
  start_status(std::move(name),
               asio::bind_executor(ex, [h = std::move(handler), quorum = quorum()](
                                           boost::system::error_code ec, std::vector<node_lock_view> views) mutable {
                 std::move(h)(ec, ec ? std::nullopt : leader_of(views, quorum));
               }));
}

leader_subscription async_client::observe(std::string name,
                                          std::function<void(const std::optional<leader_info>&)> on_change,
                                          milliseconds fallback) {
  if (name.empty()) throw error(errc::empty_name, "lock name is empty");
  if (!on_change) throw error(errc::bad_option, "observe: on_change is empty");
  if (fallback <= milliseconds(0)) throw error(errc::bad_option, "observe: fallback must be > 0");
  auto watch = std::make_shared<detail::leader_watch>(impl_, std::move(name), std::move(on_change), fallback);
  watch->start();
  return leader_subscription(std::move(watch));
}

void async_client::start_status(std::string name, asio::any_completion_handler<status_signature> handler) {
  if (name.empty()) return fail_now(impl_->executor, std::move(handler), make_error_code(errc::empty_name),
                                    std::vector<node_lock_view>{});
  detail::initiation under_way;
  dispatch_on_strand(impl_->strand, [impl = impl_, n = std::move(name), h = std::move(handler)]() mutable {
    detail::start_status(std::move(impl), std::move(n), std::move(h));
  });
}

void async_client::start_list(list_options opts, asio::any_completion_handler<list_signature> handler) {
  if (opts.max_names == 0 || opts.scan_count == 0)
    return fail_now(impl_->executor, std::move(handler), make_error_code(errc::bad_option), lock_listing{});
  detail::initiation under_way;
  dispatch_on_strand(impl_->strand, [impl = impl_, opts, h = std::move(handler)]() mutable {
    detail::start_list(std::move(impl), opts, std::move(h));
  });
}

void async_client::start_force_release(std::string name, std::optional<key_content> only,
                                       asio::any_completion_handler<force_release_signature> handler) {
  auto refuse = [&](errc e) {
    fail_now(impl_->executor, std::move(handler), make_error_code(e), std::vector<node_forced_release>{});
  };
  if (name.empty()) return refuse(errc::empty_name);
  if (only && (*only == key_content::free || *only == key_content::foreign)) return refuse(errc::bad_option);
  detail::initiation under_way;
  dispatch_on_strand(impl_->strand, [impl = impl_, n = std::move(name), only, h = std::move(handler)]() mutable {
    detail::start_force_release(std::move(impl), std::move(n), only, std::move(h));
  });
}

lock async_client::adopt(const std::string& name, const std::string& token, milliseconds ttl,
                         const adopt_options& how) const {
  if (auto bad = detail::check_adopt(name, token, ttl, how, impl_->options.node_timeout, impl_->options.key_prefix))
    throw error(bad.code, bad.message);
  return detail::lock_access::make(detail::adopted_state(*impl_, name, token, ttl, how));
}

void async_client::start_release(lock l, asio::any_completion_handler<done_signature> handler) {
  if (!l) return fail_now(impl_->executor, std::move(handler), make_error_code(errc::empty_lock));
  detail::initiation under_way;
  dispatch_on_strand(impl_->strand, [impl = impl_, s = detail::lock_access::state(l), h = std::move(handler)]() mutable {
    detail::start_release(std::move(impl), std::move(s), std::move(h));
  });
}

void async_client::start_extend(lock l, milliseconds ttl, asio::any_completion_handler<done_signature> handler) {
  if (!l) return fail_now(impl_->executor, std::move(handler), make_error_code(errc::empty_lock));
  if (auto bad = detail::check_ttl(ttl, impl_->options.node_timeout))
    return refuse(*impl_, std::move(handler), "async_extend", bad);
  detail::initiation under_way;
  dispatch_on_strand(impl_->strand, [impl = impl_, s = detail::lock_access::state(l), ttl, h = std::move(handler)]() mutable {
    detail::start_extend(std::move(impl), std::move(s), ttl, std::move(h));
  });
}

}  // namespace redlock
