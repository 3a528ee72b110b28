// SPDX-License-Identifier: Apache-2.0
// What redlock-bench's scenarios share. Each scenario builds its own clients
// (so no state leaks from one to the next), warms up, then measures.
#pragma once

#include "bench.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bench {

namespace asio = boost::asio;

inline constexpr auto as_tuple_awaitable = asio::as_tuple(asio::use_awaitable);

double round_to(double x, int decimals);

// Runs coroutines on `io`, on this thread, until every one has finished (the
// client's connections keep the context busy, so run() alone would not return).
void run_all(asio::io_context& io, std::vector<asio::awaitable<void>> tasks);
void run_one(asio::io_context& io, asio::awaitable<void> task);

// One async_client on a single-threaded io_context driven by this thread. On
// destruction the client is shut down and the context run until its sockets
// are closed.
struct async_env {
  asio::io_context io{1};
  std::optional<redlock::async_client> client;

  explicit async_env(const settings& s) { client.emplace(io.get_executor(), s.client_options()); }
  ~async_env();
};

struct pair_samples {
  std::vector<double> acquire, release, pair;  // µs
  std::size_t failures = 0;                    // acquisitions that failed
  std::map<std::string, std::size_t> errors;
  std::vector<std::uint64_t> fences;
  double elapsed_s = 0;

  double pairs_per_s() const { return elapsed_s > 0 ? static_cast<double>(pair.size()) / elapsed_s : 0; }
};


// Sequential acquire+release. Names are prefix + i, or just prefix when
// `distinct` is false (one resource: its fence counter keeps growing).
asio::awaitable<void> sequential_pairs(redlock::async_client& c, std::string prefix, bool distinct, std::size_t n,
                                       redlock::acquire_options o, pair_samples& out);
/// samples, acquire_us, release_us, pair_us, pairs_per_s, failures, errors.
void put_pairs(json::object& o, pair_samples& p);
/// s.ttl, one attempt, no retries.
redlock::acquire_options single_attempt(const settings& s);

/// The two rounds of an unfenced mutex hand-written on raw links (TCP or
/// TLS, raw_link.hpp) to all of s.masters, each done at quorum (floor.cpp).
/// The links stay open between calls of pairs(), so a scenario can run the
/// floor in blocks alternating with its own.
class quorum_floor {
 public:
  explicit quorum_floor(settings& s);
  ~quorum_floor();
  /// `n` acquire+release pairs on fresh keys; appends their times in µs.
  void pairs(std::size_t n, std::vector<double>& out);

 private:
  struct links;
  settings& s_;
  std::unique_ptr<links> links_;
  std::string release_sha_;
  std::size_t next_key_ = 0;
};
/// A warm-up of n / 5 pairs, then `n` pair times in µs.
std::vector<double> quorum_floor_pairs(settings& s, std::size_t n);

}  // namespace bench
