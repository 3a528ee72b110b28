// SPDX-License-Identifier: Apache-2.0
#include <redlock/error.hpp>
#include <redlock/observer.hpp>

#include <boost/asio/error.hpp>

namespace redlock {

std::string_view error_word(const boost::system::error_code& ec) noexcept {
  if (!ec) return "ok";
  if (ec.category() == category()) return errc_name(static_cast<errc>(ec.value()));
  if (ec == boost::asio::error::operation_aborted) return "cancelled";
  return "other";
}

void counting_observer::on_node_reply(std::size_t node, std::string_view, std::chrono::microseconds latency,
                             const boost::system::error_code& error) {
  if (node >= max_nodes) return;
  auto& n = nodes[node];
  n.replies.fetch_add(1, relaxed);
  n.latency_us_total.fetch_add(static_cast<std::uint64_t>(latency.count()), relaxed);
  if (error == errc::timeout)
    n.timeouts.fetch_add(1, relaxed);
  else if (error)
    n.errors.fetch_add(1, relaxed);
}

void counting_observer::on_acquire_result(const acquire_outcome& outcome) {
  const auto& error = outcome.error;
  if (!error) {
    acquired.fetch_add(1, relaxed);
    return;
  }
  acquire_failures.fetch_add(1, relaxed);
  if (error == errc::not_acquired || error == errc::timeout || error == errc::not_connected) quorum_failures.fetch_add(1, relaxed);
}

}  // namespace redlock
