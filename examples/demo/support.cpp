// SPDX-License-Identifier: Apache-2.0
#include "demo.hpp"

#include <redlock/error.hpp>
#include <redlock/node_uri.hpp>

#include <atomic>
#include <csignal>
#include <iostream>
#include <thread>

namespace demo {

endpoint parse_endpoint(const std::string& uri) {
  std::string why;
  auto u = redlock::parse_node_uri(uri, why);  // the client's own parser
  if (!u) throw redlock::error(redlock::errc::bad_uri, why);
  endpoint e;
  e.uri = uri;
  e.host = u->host;
  e.port = u->port;
  e.user = u->user;
  e.password = u->password;
  e.db = u->db;
  return e;
}

plain_redis::plain_redis(const endpoint& e) {
  timeval tv{2, 0};
  c_ = redisConnectWithTimeout(e.host.c_str(), e.port, tv);
  if (!c_ || c_->err) {
    if (c_) redisFree(c_);
    throw std::runtime_error("cannot reach the storage Redis at " + e.host + ":" + std::to_string(e.port));
  }
  redisSetTimeout(c_, tv);
  try {
    if (!e.password.empty())
      freeReplyObject(e.user.empty() ? command({"AUTH", e.password}) : command({"AUTH", e.user, e.password}));
    if (e.db != 0) freeReplyObject(command({"SELECT", std::to_string(e.db)}));
  } catch (...) {
    redisFree(c_);
    throw;
  }
}

plain_redis::~plain_redis() { redisFree(c_); }

redisReply* plain_redis::command(const std::vector<std::string>& argv) {
  auto* r = redlock::testing::command_argv(c_, argv);
  if (!r) throw std::runtime_error("storage Redis: no reply to " + argv.front());
  if (r->type == REDIS_REPLY_ERROR) {
    std::string what = "storage Redis: " + argv.front() + ": " + std::string(r->str, r->len);
    freeReplyObject(r);
    throw std::runtime_error(what);
  }
  return r;
}

std::string plain_redis::get(const std::string& key) {
  auto* r = command({"GET", key});
  std::string value = r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
  freeReplyObject(r);
  return value;
}

void plain_redis::set(const std::string& key, const std::string& value) {
  freeReplyObject(command({"SET", key, value}));
}

void plain_redis::del(const std::string& key) { freeReplyObject(command({"DEL", key})); }

const char* report::mark(outcome o) {
  switch (o) {
    case outcome::ok: return "[ok]";
    case outcome::failed: return "[FAILED]";
    case outcome::skipped: return "[skipped]";
  }
  return "?";
}

void report::add(outcome o, const std::string& what) {
  entries_.push_back({o, what});
  std::cout << "  " << mark(o) << " " << what << "\n";
}

void report::check(bool ok, const std::string& what) { add(ok ? outcome::ok : outcome::failed, what); }

void report::skip(const std::string& what) { add(outcome::skipped, what); }

bool report::all_passed() const {
  for (auto& e : entries_)
    if (e.result == outcome::failed) return false;
  return true;
}

void report::print_summary() const {
  heading("Summary");
  for (auto& e : entries_) std::cout << "  " << mark(e.result) << " " << e.what << "\n";
  std::cout << (all_passed() ? "every check passed\n" : "SOME CHECKS FAILED (see above)\n");
}

void heading(const std::string& title) { std::cout << "\n== " << title << " ==\n"; }

namespace {
std::atomic<bool> interrupt_flag{false};
extern "C" void on_interrupt(int) { interrupt_flag = true; }
}  // namespace

void catch_interrupts() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

bool interrupt_requested() { return interrupt_flag; }

void sleep_for(std::chrono::milliseconds d) {
  auto until = std::chrono::steady_clock::now() + d;
  for (;;) {
    if (interrupt_requested()) throw interrupted();
    auto left = until - std::chrono::steady_clock::now();
    if (left <= left.zero()) return;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, 10ms));
  }
}

}  // namespace demo
