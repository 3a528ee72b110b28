// SPDX-License-Identifier: Apache-2.0
// Memory for one of a connection's I/O paths (its reads, or its writes),
// reused from one operation to the next: the operation (with TLS, the
// stream's and the socket's), and the strand's wrapper of its completion.
// Asio's own cache keeps two blocks per thread for every kind of operation
// at once, and with a read outstanding on each of five masters it missed at
// almost every completion (redlock-bench alloc). Bound to the handler as its
// associated allocator (start_on_strand in connection.cpp).
//
// Blocks are taken and given back on whichever thread runs the reactor or
// the strand, so each slot is claimed atomically. A request that does not
// fit, or finds both slots taken, goes to the heap. The allocator shares
// ownership of the memory: an operation (or the strand's invoker, which
// keeps a copy of the executor it was posted with) may outlive its
// connection.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <new>

namespace redlock::detail {

class handler_memory {
 public:
  void* allocate(std::size_t size) {
    if (size <= slot_size)
      for (auto& s : slots_)
        if (!s.taken.exchange(true, std::memory_order_acquire)) return s.bytes;
    return ::operator new(size);
  }
  void deallocate(void* p) noexcept {
    for (auto& s : slots_)
      if (p == s.bytes) return s.taken.store(false, std::memory_order_release);
    ::operator delete(p);
  }

 private:
  static constexpr std::size_t slot_size = 512;
  struct slot {
    alignas(std::max_align_t) std::byte bytes[slot_size];
    std::atomic<bool> taken{false};
  };
  std::array<slot, 2> slots_;
};

template <typename T>
class handler_allocator {
 public:
  using value_type = T;
  explicit handler_allocator(std::shared_ptr<handler_memory> memory) noexcept : memory_(std::move(memory)) {}
  template <typename U>
  handler_allocator(const handler_allocator<U>& other) noexcept : memory_(other.memory_) {}  // NOLINT: rebinding

  T* allocate(std::size_t n) {
    static_assert(alignof(T) <= alignof(std::max_align_t), "over-aligned operation");
    return static_cast<T*>(memory_->allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t) noexcept { memory_->deallocate(p); }

  template <typename U>
  bool operator==(const handler_allocator<U>& other) const noexcept {
    return memory_ == other.memory_;
  }

 private:
  template <typename U>
  friend class handler_allocator;
  std::shared_ptr<handler_memory> memory_;
};

}  // namespace redlock::detail
