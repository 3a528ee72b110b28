// SPDX-License-Identifier: Apache-2.0
// handler_memory, a connection's reusable memory for its reads or writes: blocks
// come back to be used again, and what does not fit goes to the heap.
#define BOOST_TEST_MODULE unit_handler_memory
#include <boost/test/unit_test.hpp>

#include "connection/handler_memory.hpp"

#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

using redlock::detail::handler_allocator;
using redlock::detail::handler_memory;

BOOST_AUTO_TEST_CASE(a_block_given_back_is_the_next_one_handed_out) {
  auto memory = std::make_shared<handler_memory>();
  handler_allocator<char> a(memory);
  char* first = a.allocate(200);
  std::memset(first, 1, 200);
  a.deallocate(first, 200);
  char* again = a.allocate(300);
  BOOST_TEST(static_cast<void*>(again) == static_cast<void*>(first));
  a.deallocate(again, 300);
}

BOOST_AUTO_TEST_CASE(two_blocks_at_once_then_the_heap_and_big_requests_go_to_the_heap) {
  auto memory = std::make_shared<handler_memory>();
  handler_allocator<char> a(memory);
  char* one = a.allocate(64);
  char* two = a.allocate(64);
  char* three = a.allocate(64);  // both slots taken
  char* big = a.allocate(4096);  // larger than a slot
  BOOST_TEST(static_cast<void*>(one) != static_cast<void*>(two));  // (char* would compare as text)
  std::memset(three, 3, 64);
  std::memset(big, 4, 4096);
  a.deallocate(three, 64);
  a.deallocate(big, 4096);
  a.deallocate(one, 64);
  // The slot is back (the heap blocks were freed: the sanitizers check).
  BOOST_TEST(static_cast<void*>(a.allocate(64)) == static_cast<void*>(one));
  a.deallocate(one, 64);
  a.deallocate(two, 64);
}

BOOST_AUTO_TEST_CASE(rebound_copies_share_the_memory_and_keep_it_alive) {
  std::optional<handler_allocator<int>> kept;
  {
    auto memory = std::make_shared<handler_memory>();
    handler_allocator<char> a(memory);
    kept.emplace(a);
    BOOST_TEST((handler_allocator<int>(a) == a));
  }
  int* p = kept->allocate(4);  // the memory outlived the first owner
  p[3] = 7;
  kept->deallocate(p, 4);
}

BOOST_AUTO_TEST_CASE(blocks_taken_and_given_back_on_two_threads_are_never_handed_out_twice) {
  auto memory = std::make_shared<handler_memory>();
  auto worker = [memory](char mark) {
    handler_allocator<char> a(memory);
    for (int i = 0; i < 20000; ++i) {
      char* p = a.allocate(128);
      std::memset(p, mark, 128);
      for (int j = 0; j < 128; ++j)
        if (p[j] != mark) throw std::runtime_error("a block was handed to two owners at once");
      a.deallocate(p, 128);
    }
  };
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(3);
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      try {
        worker(static_cast<char>('a' + t));
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors) BOOST_TEST(!e);
}
