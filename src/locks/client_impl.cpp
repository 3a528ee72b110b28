// SPDX-License-Identifier: Apache-2.0
#include "client_impl.hpp"

#include "lease/lock_state.hpp"
#include "quorum/validity.hpp"
#include "scripts/script.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace redlock::detail {

namespace {

// The user's executor as a completion handler's executor, holding the
// concrete executor when it is an io_context's: wrapping one type-erased
// executor in another makes every `prefer` on it (one per completion, for
// outstanding work) build a shared, heap-allocated target.
boost::asio::any_completion_executor completion_executor_of(const boost::asio::any_io_executor& ex) {
  boost::asio::any_completion_executor out;
  if (!visit_io_context_executor(ex, [&](const auto& e) { out = boost::asio::any_completion_executor(e); }))
    out = boost::asio::any_completion_executor(ex);
  return out;
}

}  // namespace

client_impl::client_impl(boost::asio::any_io_executor ex, client_options opts, std::vector<node_address> addresses)
    : executor(ex),
      completion_executor(completion_executor_of(ex)),
      // One thread runs the executor: it serializes our work already.
      strand(opts.executor_runs_on_one_thread ? strand_type(ex) : make_client_strand(ex)),
      options(std::move(opts)),
      masters(std::make_shared<node_set>()),
      wakes_(addresses.size(), quorum_of(addresses.size()), options.node_timeout) {
  bool any_tls = false;
  for (auto& a : addresses) any_tls |= a.tls;
  auto config = connection_config::of(options);
  if (any_tls) tls = make_tls_context(config);
  listener = std::make_shared<release_listener>(strand, addresses, config, tls.get());
  std::string preload;
  for (const script* s : scripts::all) append_command(preload, {"SCRIPT", "LOAD", s->body});
  masters->quorum = quorum_of(addresses.size());
  masters->node_timeout = options.node_timeout;
  masters->clock = options.clock;
  masters->observer = options.observer;
  for (auto& a : addresses)
    masters->connections.push_back(
        std::make_shared<connection>(strand, std::move(a), config, tls.get(), preload, scripts::all.size()));
  std::uint64_t seed = 0;
  refill_entropy();
  std::memcpy(&seed, entropy_.data(), sizeof seed);
  entropy_used_ = sizeof seed;
  jitter_rng_.seed(seed);
  client_id = new_token();
  auto names = std::make_shared<std::vector<std::string>>();
  for (auto& c : masters->connections) names->push_back(c->display());
  node_names = std::move(names);
}

void client_impl::refill_entropy() {
  // Batched: one getrandom() per 256 tokens keeps the syscall off the hot path.
  std::size_t got = 0;
  while (got < entropy_.size()) {
    ssize_t n = ::getrandom(entropy_.data() + got, entropy_.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed");
    }
    got += static_cast<std::size_t>(n);
  }
  entropy_used_ = 0;
}

std::string client_impl::new_token() {
  if (entropy_used_ + 16 > entropy_.size()) refill_entropy();
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    unsigned char b = entropy_[entropy_used_ + i];
    out[2 * i] = hex[b >> 4];
    out[2 * i + 1] = hex[b & 15];
  }
  // Each byte is handed out once.
  std::memset(entropy_.data() + entropy_used_, 0, 16);
  entropy_used_ += 16;
  return out;
}

std::chrono::milliseconds client_impl::jittered(std::chrono::milliseconds base, std::chrono::milliseconds jitter) {
  if (jitter.count() <= 0) return base;
  std::uniform_int_distribution<long long> d(-jitter.count(), jitter.count());
  return std::max(std::chrono::milliseconds(0), base + std::chrono::milliseconds(d(jitter_rng_)));
}

void client_impl::note_own_release(std::string_view payload) {
  // Enough for the releases whose copies may still be on their way.
  auto number = own_releases_sent_++;
  own_releases_[number % own_releases_.size()] = {std::hash<std::string_view>{}(payload), number};
}

bool client_impl::own_release_before(std::string_view payload, std::uint64_t before) const {
  auto hash = std::hash<std::string_view>{}(payload);
  auto kept = std::min<std::uint64_t>(own_releases_sent_, own_releases_.size());
  for (std::uint64_t i = 0; i < kept; ++i)
    if (own_releases_[i].payload_hash == hash) return own_releases_[i].number < before;
  return false;
}

void client_impl::shutdown() {
  if (stopped) return;
  stopped = true;
  if (listing_sweep_) listing_sweep_->cancel();
  if (held_back_wakes_) held_back_wakes_->cancel();
  listener->shutdown();
  for (auto& n : masters->connections) n->shutdown();
}

void client_impl::shutdown_after_releases(std::function<void()> then) {
  stopped = true;  // new operations fail with shutting_down
  settle_wakes();  // before the connections drain
  listener->shutdown();
  // `then` once every connection has closed (each posts its callback).
  auto left = std::make_shared<std::size_t>(masters->size());
  auto all_closed = [left, then = std::make_shared<std::function<void()>>(std::move(then))] {
    if (--*left == 0 && *then) (*then)();
  };
  for (auto& n : masters->connections) n->shutdown_after_cleanups(all_closed);
}

node_answers node_answers_of(const quorum_round& round) {
  node_answers answers;
  answers.reserve(round.outcomes().size());  // beyond the inline five: one allocation, not one per growth
  for (auto& o : round.outcomes()) answers.push_back({o.state, o.error, o.latency});
  return answers;
}

std::vector<node_vote> node_votes_of(const quorum_round& round) {
  return unnamed_results(node_answers_of(round));
}

void client_impl::name_nodes(std::vector<node_vote>& nodes) const { detail::name_nodes(nodes, node_names.get()); }

}  // namespace redlock::detail
