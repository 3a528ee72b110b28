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
    // Every address in turn, as hiredis and the library do.
    std::string why = "no address";
    for (auto* a = found; a && fd_ < 0; a = a->ai_next) {
      try {
        connect_to(*a);
      } catch (const std::exception& e) {
        why = e.what();
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
      }
    }
    if (fd_ < 0) throw std::runtime_error(why);
    // Blocking, with the timeout on each call, as a blocking hiredis
    // context is: a reply costs one read, over TCP as over TLS (OpenSSL
    // reads ahead, so a record is not two reads, header then body). poll()
    // only where a round waits on several masters.
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (m.tls) {
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
      SSL_set_read_ahead(ssl_, 1);
      SSL_set_fd(ssl_, fd_);
      ERR_clear_error();
      if (int rc = SSL_connect(ssl_); rc != 1) {
        // The socket's timeout: a master that speaks plain TCP on this port
        // never answers.
        if (SSL_get_error(ssl_, rc) == SSL_ERROR_WANT_READ)
          fail("no answer to the TLS handshake within " + std::to_string(timeout.count()) +
               " ms (does the master speak TLS on this port?)");
        fail("TLS handshake failed: " + openssl_error() + verify_error());
      }
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

void raw_link::connect_to(const addrinfo& a) {
  fd_ = ::socket(a.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(name_ + ": socket: " + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd_, a.ai_addr, a.ai_addrlen) == 0) return;
  if (errno != EINPROGRESS) throw std::runtime_error(name_ + ": connect: " + std::strerror(errno));
  wait(POLLOUT, "to connect");
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err) throw std::runtime_error(name_ + ": connect: " + std::strerror(err));
}

std::string raw_link::verify_error() const {
  long v = SSL_get_verify_result(ssl_);
  return v == X509_V_OK ? std::string() : std::string(" (") + X509_verify_cert_error_string(v) + ")";
}

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
      ERR_clear_error();
      int n = SSL_write(ssl_, at, int(left));
      if (n > 0) {
        off += std::size_t(n);
        continue;
      }
      if (SSL_get_error(ssl_, n) == SSL_ERROR_WANT_WRITE)
        throw std::runtime_error(name_ + ": write: no room within " + std::to_string(timeout_.count()) + " ms");
      throw std::runtime_error(name_ + ": TLS write failed: " + openssl_error());
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
  auto no_answer = [&] {
    return std::runtime_error(name_ + ": no answer within " + std::to_string(timeout_.count()) + " ms");
  };
  if (!ssl_) {
    // One read: what it leaves behind keeps poll() readable.
    ssize_t n;
    do n = ::recv(fd_, buf, sizeof buf, 0);
    while (n < 0 && errno == EINTR);
    if (n == 0) throw std::runtime_error(name_ + ": the master closed the connection");
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) throw no_answer();
    if (n < 0) throw std::runtime_error(name_ + ": read: " + std::strerror(errno));
    redisReaderFeed(reader_, buf, std::size_t(n));
    return;
  }
  // One record at least (blocking until it is whole), then whatever OpenSSL
  // already holds: read ahead off the socket, it would not wake poll().
  do {
    ERR_clear_error();
    int n = SSL_read(ssl_, buf, sizeof buf);
    if (n <= 0) {
      int e = SSL_get_error(ssl_, n);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) throw no_answer();
      if (e == SSL_ERROR_ZERO_RETURN) throw std::runtime_error(name_ + ": the master closed the connection");
      throw std::runtime_error(name_ + ": TLS read failed: " + openssl_error());
    }
    redisReaderFeed(reader_, buf, std::size_t(n));
  } while (SSL_has_pending(ssl_));
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
    read_available();  // blocks until something comes
  }
}

}  // namespace bench
