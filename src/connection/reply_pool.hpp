// SPDX-License-Identifier: Apache-2.0
// Reply objects for hiredis's redisReader, recycled: hiredis's own functions
// allocate every reply (the struct, its string, an array's element table),
// about three per master per acquire+release pair (bench/README.md, "What
// the measurements decided"). A connection parses
// one reply at a time, so a short free list of nodes that keep their buffers
// serves nearly every reply without the heap.
#pragma once

#include <hiredis/read.h>

#include <cstddef>
#include <vector>

struct redisReply;

namespace redlock::detail {

class reply_pool {
 public:
  explicit reply_pool(std::size_t max_elements);
  reply_pool(const reply_pool&) = delete;
  reply_pool& operator=(const reply_pool&) = delete;

  /// The functions to create a redisReader with; the reader's privdata must
  /// be this pool. Replies they build are returned with give_back().
  static redisReplyObjectFunctions* functions();

  /// Returns a reply (and, for an array, its elements) to its pool.
  static void give_back(redisReply* r) noexcept;

  /// The owner is done with the pool: it goes when its last reply comes back
  /// (a reply may still be in a caller's hands while its connection resets).
  void release() noexcept;

 private:
  struct node;
  ~reply_pool();
  node* take(int type);
  void put(node* n) noexcept;
  static void set_string(node* n, const char* s, std::size_t len);
  static void set_elements(node* n, std::size_t count);

  static void* create_string(const redisReadTask* task, char* s, std::size_t len);
  static void* create_array(const redisReadTask* task, int elements);
  static void* create_integer(const redisReadTask* task, long long value);
  static void* create_nil(const redisReadTask* task);
  static void free_object(void* reply);
  static void* attach(const redisReadTask* task, node* n);
  template <typename Fill>
  static void* build(const redisReadTask* task, int type, Fill&& fill) noexcept;

  std::size_t max_elements_;
  std::vector<node*> free_;
  std::size_t live_ = 0;
  bool released_ = false;
};

}  // namespace redlock::detail
