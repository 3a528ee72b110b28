// SPDX-License-Identifier: Apache-2.0
// inline_function, the quorum rounds' callback type: where it keeps its
// target, and that every target is destroyed exactly once.
#define BOOST_TEST_MODULE unit_inline_function
#include <boost/test/unit_test.hpp>

#include "quorum/inline_function.hpp"

#include <array>
#include <memory>
#include <stdexcept>

using redlock::detail::inline_function;

namespace {

// Moving it may throw: it must not be kept inline (a move of the function
// itself is noexcept).
struct throwing_move {
  std::shared_ptr<int> counted;
  throwing_move(std::shared_ptr<int> c) : counted(std::move(c)) {}
  throwing_move(const throwing_move&) = default;
  throwing_move(throwing_move&& other) noexcept(false) : counted(std::move(other.counted)) {}
  int operator()(int x) const { return x + *counted; }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_callback_holding_shared_ptrs_is_kept_inline_and_destroyed_once) {
  auto counted = std::make_shared<int>(40);
  {
    inline_function<int(int)> f = [counted, other = counted](int x) { return x + *counted + *other - 40; };
    BOOST_TEST(f.stored_inline());  // std::function would have allocated: a shared_ptr is not trivially copyable
    BOOST_TEST(f(2) == 42);
    BOOST_TEST(counted.use_count() == 3);
  }
  BOOST_TEST(counted.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(a_moved_callback_moves_its_target_and_leaves_none_behind) {
  auto counted = std::make_shared<int>(1);
  inline_function<int(int)> from = [counted](int x) { return x + *counted; };
  inline_function<int(int)> to = std::move(from);
  BOOST_TEST(!from);  // NOLINT(bugprone-use-after-move): empty is the contract
  BOOST_TEST(static_cast<bool>(to));
  BOOST_TEST(to(1) == 2);
  BOOST_TEST(counted.use_count() == 2);
  inline_function<int(int)> third;
  third = std::move(to);
  BOOST_TEST(third(2) == 3);
  BOOST_TEST(counted.use_count() == 2);
}

BOOST_AUTO_TEST_CASE(assigning_over_a_callback_destroys_the_old_target) {
  auto first = std::make_shared<int>(1), second = std::make_shared<int>(2);
  inline_function<int()> f = [first] { return *first; };
  f = [second] { return *second; };
  BOOST_TEST(first.use_count() == 1);
  BOOST_TEST(f() == 2);
  f = nullptr;
  BOOST_TEST(!f);
  BOOST_TEST(second.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(targets_too_big_or_throwing_on_move_go_on_the_heap_and_still_work) {
  auto counted = std::make_shared<int>(5);
  {
    std::array<long, 32> big{};
    big[31] = 7;
    inline_function<long(), 64> f = [big, counted] { return big[31] + *counted; };
    BOOST_TEST(!f.stored_inline());
    auto g = std::move(f);
    BOOST_TEST(g() == 12);
    inline_function<int(int)> h = throwing_move(counted);
    BOOST_TEST(!h.stored_inline());
    BOOST_TEST(h(1) == 6);
    BOOST_TEST(counted.use_count() == 3);
  }
  BOOST_TEST(counted.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(a_move_only_target_is_accepted_and_may_move_its_captures_out) {
  auto owned = std::make_unique<int>(9);
  inline_function<std::unique_ptr<int>()> f = [p = std::move(owned)]() mutable { return std::move(p); };
  BOOST_TEST(f.stored_inline());
  auto taken = f();
  BOOST_REQUIRE(taken);
  BOOST_TEST(*taken == 9);
  BOOST_TEST(!f());  // moved out already: the target itself is still there
}
