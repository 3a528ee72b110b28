// SPDX-License-Identifier: Apache-2.0
// redlock-bench: a raw connection to one master for the floors, plain TCP or
// TLS through OpenSSL itself, with hiredis's encoder and reader and no
// library code, so that a floor over TLS costs what TLS costs and no more.
#pragma once

#include "bench.hpp"

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <vector>

struct addrinfo;
typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace bench {

struct reply_deleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

class raw_link {
 public:
  /// Connects (TCP, then the TLS handshake for rediss:// against `ca_file`,
  /// or the system's trust store when empty), does AUTH and SELECT; throws
  /// std::runtime_error naming the master on any failure.
  raw_link(const master& m, const std::string& ca_file, milliseconds timeout);
  ~raw_link();
  raw_link(const raw_link&) = delete;
  raw_link& operator=(const raw_link&) = delete;

  int fd() const { return fd_; }
  /// Writes one command whole (blocking while the socket is full, up to the
  /// timeout).
  void send(const std::vector<std::string>& argv);
  /// Reads into the reader, blocking until something comes: plain TCP, one
  /// read; TLS, one record and what OpenSSL read ahead. Throws when the
  /// master closed, the read failed or timed out.
  void read_available();
  /// The next complete reply read so far, or null.
  reply_ptr next_reply();
  /// send, then wait for its reply (up to the timeout given at connect).
  reply_ptr command(const std::vector<std::string>& argv);

 private:
  void connect_to(const addrinfo& a);  // sets fd_, connected; throws
  void wait(short events, const char* doing);
  std::string verify_error() const;  // " (why)" when the master's certificate failed
  void release() noexcept;
  std::string name_;
  milliseconds timeout_;
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  redisReader* reader_ = nullptr;
};

}  // namespace bench
