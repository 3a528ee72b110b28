// SPDX-License-Identifier: Apache-2.0
// redlock::guard: a held lock released when the guard goes (scope exit,
// move-assignment), never throwing from its destructor.
#include <redlock/client.hpp>

namespace redlock {

guard::guard(guard&& other) noexcept : client_(other.client_), lock_(std::move(other.lock_)) {
  other.client_ = nullptr;
  other.lock_ = lock{};
}

guard& guard::operator=(guard&& other) noexcept {
  if (this != &other) {
    release_quietly();
    client_ = other.client_;
    lock_ = std::move(other.lock_);
    other.client_ = nullptr;
    other.lock_ = lock{};
  }
  return *this;
}

guard::~guard() { release_quietly(); }

void guard::release() {
  if (!client_ || !lock_) return;
  auto l = std::move(lock_);
  lock_ = lock{};
  client_->release(l);
}

void guard::release_quietly() noexcept {
  try {
    release();
  } catch (...) {
    // The lock expires by itself after its TTL; a destructor must not throw.
  }
}

}  // namespace redlock
