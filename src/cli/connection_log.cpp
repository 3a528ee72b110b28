// SPDX-License-Identifier: Apache-2.0
#include "connection_log.hpp"

#include <unistd.h>

namespace redlock::cli {

namespace {

// Log lines to stderr; every other hook passed on unchanged.
class stderr_log final : public redlock::observer {
 public:
  explicit stderr_log(std::shared_ptr<redlock::observer> next) : next_(std::move(next)) {}

  void on_log(log_level level, std::string_view message) override {
    auto line = "redlock: " + without_userinfo(std::string(message)) + "\n";
    // One write per line: the hook runs on the client's I/O thread, and a
    // line must not be cut by what the main thread prints meanwhile.
    [[maybe_unused]] auto written = ::write(STDERR_FILENO, line.data(), line.size());
    if (next_) next_->on_log(level, message);
  }
  void on_node_reply(std::size_t node, std::string_view operation, std::chrono::microseconds latency,
                     const boost::system::error_code& error) override {
    if (next_) next_->on_node_reply(node, operation, latency, error);
  }
  void on_acquire_attempt(std::string_view name, unsigned attempt) override {
    if (next_) next_->on_acquire_attempt(name, attempt);
  }
  void on_acquire_result(const acquire_outcome& outcome) override {
    if (next_) next_->on_acquire_result(outcome);
  }
  void on_renewal(std::string_view name, const boost::system::error_code& error) override {
    if (next_) next_->on_renewal(name, error);
  }
  void on_lease_lost(std::string_view name, lost_reason why) override {
    if (next_) next_->on_lease_lost(name, why);
  }
  void on_hold_begin(std::string_view name, lock_kind kind) override {
    if (next_) next_->on_hold_begin(name, kind);
  }
  void on_hold_end(const hold_outcome& outcome) override {
    if (next_) next_->on_hold_end(outcome);
  }
  void on_span(const span& s) override {
    if (next_) next_->on_span(s);
  }

 private:
  std::shared_ptr<redlock::observer> next_;
};

}  // namespace

std::string without_userinfo(std::string message) {
  for (auto scheme = message.find("://"); scheme != std::string::npos; scheme = message.find("://", scheme + 3)) {
    auto authority = scheme + 3;
    auto end = message.find_first_of("/ ", authority);  // the host part ends at a path or a space
    auto at = message.rfind('@', end == std::string::npos ? std::string::npos : end - 1);
    if (at != std::string::npos && at >= authority) message.erase(authority, at + 1 - authority);
  }
  return message;
}

std::shared_ptr<redlock::observer> with_connection_log(const boost::program_options::variables_map& vm,
                                                       std::shared_ptr<redlock::observer> next) {
  if (!vm.count("verbose")) return next;
  return std::make_shared<stderr_log>(std::move(next));
}

}  // namespace redlock::cli
