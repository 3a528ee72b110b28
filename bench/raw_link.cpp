// SPDX-License-Identifier: Apache-2.0
// redlock-bench: raw_link (see raw_link.hpp).
#include "raw_link.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace bench {

namespace {

std::string openssl_error() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (!e) return "no OpenSSL error queued";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

bool is_ip_literal(const std::string& host) {
  in6_addr a6;
  in_addr a4;
  return ::inet_pton(AF_INET, host.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

}  // namespace

raw_link::raw_link(const master& m, const std::string& ca_file, milliseconds timeout)
    : name_(m.uri), timeout_(timeout), reader_(redisReaderCreate()) {
  auto fail = [&](const std::string& why) { throw std::runtime_error(name_ + ": " + why); };
  try {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = ::getaddrinfo(m.host.c_str(), std::to_string(m.port).c_str(), &hints, &found); rc != 0)
      fail(std::string("cannot resolve the host: ") + ::gai_strerror(rc));
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(found, ::freeaddrinfo);
    fd_ = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) fail(std::string("socket: ") + std::strerror(errno));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd_, found->ai_addr, found->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) fail(std::string("connect: ") + std::strerror(errno));
      wait(POLLOUT, "to connect");
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err) fail(std::string("connect: ") + std::strerror(err));
    }
    if (!m.tls) {
      // Plain TCP blocks, with the timeout on each call, as a blocking
      // hiredis context does: the floors' syscalls stay what they were
      // before this class (write, then read; poll only where a round waits
      // on several masters).
      ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
      timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    } else {
      // The library's defaults (src/connection/tls_context.cpp): the
      // protocol OpenSSL negotiates, the peer verified against the CA.
      ctx_ = SSL_CTX_new(TLS_client_method());
      if (!ctx_) fail("SSL_CTX_new: " + openssl_error());
      SSL_CTX_set_options(ctx_, SSL_OP_NO_COMPRESSION);
      int loaded = ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx_)
                                   : SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr);
      if (loaded != 1) fail("cannot load the TLS CA '" + ca_file + "': " + openssl_error());
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
      ssl_ = SSL_new(ctx_);
      if (!ssl_) fail("SSL_new: " + openssl_error());
      if (is_ip_literal(m.host)) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), m.host.c_str());
      } else {
        SSL_set_tlsext_host_name(ssl_, m.host.c_str());
        SSL_set1_host(ssl_, m.host.c_str());
      }
      SSL_set_fd(ssl_, fd_);
      // (A master that speaks plain TCP on this port never answers.)
      for (int rc; (rc = SSL_connect(ssl_)) != 1;)
        if (!wait_for_ssl(rc, "to the TLS handshake (does the master speak TLS on this port?)"))
          fail("TLS handshake failed: " + openssl_error());
    }
    for (auto& argv : login_commands(m)) {
      auto r = command(argv);
      if (r->type == REDIS_REPLY_ERROR) fail(argv[0] + ": " + std::string(r->str, r->len));
    }
  } catch (...) {
    release();
    throw;
  }
}

raw_link::~raw_link() { release(); }

void raw_link::release() noexcept {
  if (ssl_) SSL_free(ssl_);
  if (ctx_) SSL_CTX_free(ctx_);
  if (fd_ >= 0) ::close(fd_);
  if (reader_) redisReaderFree(reader_);
  ssl_ = nullptr;
  ctx_ = nullptr;
  fd_ = -1;
  reader_ = nullptr;
}

void raw_link::wait(short events, const char* doing) {
  pollfd p{fd_, events, 0};
  int rc;
  do rc = ::poll(&p, 1, int(timeout_.count()));
  while (rc < 0 && errno == EINTR);
  if (rc == 0)
    throw std::runtime_error(name_ + ": no answer " + doing + " within " + std::to_string(timeout_.count()) + " ms");
  if (rc < 0) throw std::runtime_error(name_ + ": poll: " + std::strerror(errno));
}

bool raw_link::wait_for_ssl(int rc, const char* doing) {
  switch (SSL_get_error(ssl_, rc)) {
    case SSL_ERROR_WANT_READ:
      wait(POLLIN, doing);
      return true;
    case SSL_ERROR_WANT_WRITE:
      wait(POLLOUT, doing);
      return true;
    default:
      return false;
  }
}

void raw_link::send(const std::vector<std::string>& argv) {
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (auto& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  char* encoded = nullptr;
  int len = redisFormatCommandArgv(&encoded, int(args.size()), args.data(), lens.data());
  if (len < 0) throw std::runtime_error(name_ + ": cannot encode " + argv.at(0));
  std::unique_ptr<char, decltype(&redisFreeCommand)> guard(encoded, redisFreeCommand);
  std::size_t off = 0;
  while (off < std::size_t(len)) {
    const char* at = encoded + off;
    const std::size_t left = std::size_t(len) - off;
    if (ssl_) {
      // The same buffer is offered again after WANT_*, as OpenSSL requires.
      int n = SSL_write(ssl_, at, int(left));
      if (n > 0) {
        off += std::size_t(n);
        continue;
      }
      if (!wait_for_ssl(n, "to a write")) throw std::runtime_error(name_ + ": TLS write failed: " + openssl_error());
    } else {
      ssize_t n = ::send(fd_, at, left, MSG_NOSIGNAL);
      if (n > 0) {
        off += std::size_t(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        throw std::runtime_error(name_ + ": write: no room within " + std::to_string(timeout_.count()) + " ms");
      } else if (n < 0 && errno != EINTR) {
        throw std::runtime_error(name_ + ": write: " + std::strerror(errno));
      }
    }
  }
}

void raw_link::read_available() {
  char buf[16384];
  if (!ssl_) {
    // One read: what it leaves behind keeps poll() readable.
    ssize_t n;
    do n = ::recv(fd_, buf, sizeof buf, 0);
    while (n < 0 && errno == EINTR);
    if (n == 0) throw std::runtime_error(name_ + ": the master closed the connection");
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      throw std::runtime_error(name_ + ": no answer within " + std::to_string(timeout_.count()) + " ms");
    if (n < 0) throw std::runtime_error(name_ + ": read: " + std::strerror(errno));
    redisReaderFeed(reader_, buf, std::size_t(n));
    return;
  }
  // Until OpenSSL wants more bytes: a record it has already taken off the
  // socket would not wake poll() again.
  for (;;) {
    int n = SSL_read(ssl_, buf, sizeof buf);
    if (n > 0) {
      redisReaderFeed(reader_, buf, std::size_t(n));
      continue;
    }
    int e = SSL_get_error(ssl_, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
    if (e == SSL_ERROR_ZERO_RETURN) throw std::runtime_error(name_ + ": the master closed the connection");
    throw std::runtime_error(name_ + ": TLS read failed: " + openssl_error());
  }
}

reply_ptr raw_link::next_reply() {
  void* r = nullptr;
  if (redisReaderGetReply(reader_, &r) != REDIS_OK)
    throw std::runtime_error(name_ + ": protocol error: " + std::string(reader_->errstr));
  return reply_ptr(static_cast<redisReply*>(r));
}

reply_ptr raw_link::command(const std::vector<std::string>& argv) {
  send(argv);
  for (;;) {
    if (auto r = next_reply()) return r;
    if (ssl_) wait(POLLIN, ("to " + argv.at(0)).c_str());  // plain TCP blocks in its read instead
    read_available();
  }
}

}  // namespace bench
