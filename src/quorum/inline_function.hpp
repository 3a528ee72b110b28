// SPDX-License-Identifier: Apache-2.0
// A move-only callable that keeps its target inside itself when it fits.
// std::function (libstdc++) stores a target inline only when it is
// trivially copyable, so a lambda holding a shared_ptr costs a heap
// allocation: one per callback of every quorum round (redlock-bench alloc).
// Move-only, it can also hold a move-only completion handler directly.
// Targets that do not fit, or may throw when moved, go on the heap.
#pragma once

#include <cstddef>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

namespace redlock::detail {

template <typename Signature, std::size_t Capacity = 128>
class inline_function;

template <typename R, typename... Args, std::size_t Capacity>
class inline_function<R(Args...), Capacity> {
 public:
  inline_function() noexcept = default;
  inline_function(std::nullptr_t) noexcept {}  // NOLINT: as std::function
  template <typename F, typename Target = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<Target, inline_function> &&
                                        std::is_invocable_r_v<R, Target&, Args...>>>
  inline_function(F&& f) {  // NOLINT: implicit, as std::function
    if constexpr (fits<Target>) {
      ::new (static_cast<void*>(storage_)) Target(std::forward<F>(f));
      ops_ = &inline_ops<Target>::table;
    } else {
      ::new (static_cast<void*>(storage_)) Target*(new Target(std::forward<F>(f)));
      ops_ = &heap_ops<Target>::table;
    }
  }
  inline_function(inline_function&& other) noexcept { take(other); }
  inline_function& operator=(inline_function&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  inline_function(const inline_function&) = delete;
  inline_function& operator=(const inline_function&) = delete;
  ~inline_function() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  /// The target lives inside this object (no heap allocation was made).
  bool stored_inline() const noexcept { return ops_ && ops_->stored_inline; }
  R operator()(Args... args) const { return ops_->call(storage_, std::forward<Args>(args)...); }

 private:
  struct operations {
    R (*call)(void* target, Args&&... args);
    void (*move)(void* from, void* to) noexcept;  // leaves `from` destroyed
    void (*destroy)(void* target) noexcept;
    bool stored_inline;
  };

  template <typename F>
  static constexpr bool fits = sizeof(F) <= Capacity && alignof(F) <= alignof(std::max_align_t) &&
                               std::is_nothrow_move_constructible_v<F>;

  template <typename F>
  struct inline_ops {
    static F& target(void* s) { return *std::launder(static_cast<F*>(s)); }
    static R call(void* s, Args&&... args) { return std::invoke(target(s), std::forward<Args>(args)...); }
    static void move(void* from, void* to) noexcept {
      ::new (to) F(std::move(target(from)));
      target(from).~F();
    }
    static void destroy(void* s) noexcept { target(s).~F(); }
    static constexpr operations table{&call, &move, &destroy, true};
  };

  template <typename F>
  struct heap_ops {
    static F*& pointer(void* s) { return *std::launder(static_cast<F**>(s)); }
    static R call(void* s, Args&&... args) { return std::invoke(*pointer(s), std::forward<Args>(args)...); }
    static void move(void* from, void* to) noexcept { ::new (to) F*(pointer(from)); }
    static void destroy(void* s) noexcept { delete pointer(s); }
    static constexpr operations table{&call, &move, &destroy, false};
  };

  void take(inline_function& other) noexcept {
    if (!other.ops_) return;
    other.ops_->move(other.storage_, storage_);
    ops_ = std::exchange(other.ops_, nullptr);
  }
  void reset() noexcept {
    if (auto* ops = std::exchange(ops_, nullptr)) ops->destroy(storage_);
  }

  const operations* ops_ = nullptr;
  alignas(std::max_align_t) mutable std::byte storage_[Capacity];
};

}  // namespace redlock::detail
