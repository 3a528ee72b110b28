// SPDX-License-Identifier: Apache-2.0
#include "prober.hpp"

#include "client/options_check.hpp"

#include <redlock/error.hpp>

#include <boost/asio/dispatch.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <stdexcept>

namespace redlock::detail {

namespace asio = boost::asio;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

namespace {

value copy_of(const redisReply& r) {
  value v;
  v.type = r.type;
  if (r.str) v.text.assign(r.str, r.len);
  v.integer = r.integer;
  for (std::size_t i = 0; i < r.elements; ++i) v.elements.push_back(copy_of(*r.element[i]));
  return v;
}

class one_reply : public detail::reply_sink {
 public:
  std::optional<reply> got;
  void on_reply(std::uint32_t, const boost::system::error_code& ec, const redisReply* r) override {
    got = reply{ec, r ? copy_of(*r) : value{}, {}};
  }
};

}  // namespace

prober::prober(const client_options& options) {
  std::vector<node_address> addresses;
  if (auto bad = check_client_options(options, addresses)) throw error(bad.code, bad.message);
  impl_ = std::make_shared<client_impl>(io_.get_executor(), options, std::move(addresses));
  // Generous: the round trips are measured, not judged by this deadline.
  request_timeout_ = options.connect_timeout + std::max<milliseconds>(options.node_timeout * 10, milliseconds(2000));
}

prober::~prober() {
  asio::dispatch(impl_->strand, [impl = impl_] { impl->shutdown(); });
  io_.restart();
  io_.run_for(std::chrono::seconds(2));
}

reply prober::call(std::size_t node, const std::vector<std::string>& argv) {
  std::string encoded;
  append_command(encoded, argv);
  boost::intrusive_ptr<one_reply> sink(new one_reply);
  auto started = steady::now();
  asio::dispatch(impl_->strand, [this, node, &encoded, sink, started] {
    impl_->masters->connections[node]->send(encoded, started + request_timeout_, sink, 0);
  });
  while (!sink->got) {
    io_.restart();
    if (io_.run_one() == 0 && !sink->got) throw std::logic_error("redlock doctor: a request was never completed");
  }
  sink->got->round_trip = std::chrono::duration_cast<microseconds>(steady::now() - started);
  return std::move(*sink->got);
}

std::map<std::string, std::string> parse_info(const std::string& text) {
  std::map<std::string, std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    auto end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (auto colon = line.find(':'); colon != std::string_view::npos && !line.starts_with('#'))
      out.emplace(line.substr(0, colon), line.substr(colon + 1));
    at = end + 1;
  }
  return out;
}

std::string value_of(const std::map<std::string, std::string>& info, const std::string& key) {
  auto it = info.find(key);
  return it == info.end() ? std::string() : it->second;
}

long long number_of(std::string_view text) {
  long long n = 0;
  std::from_chars(text.data(), text.data() + text.size(), n);
  return n;
}

std::string ms_text(microseconds d) {
  auto tenths = (d.count() + 50) / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " ms";
}

microseconds percentile(const std::vector<microseconds>& sorted, double p) {
  if (sorted.empty()) return microseconds(0);
  auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace redlock::detail
