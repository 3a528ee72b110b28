// SPDX-License-Identifier: Apache-2.0
#include "reply_pool.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <type_traits>

namespace redlock::detail {

// A redisReply with the buffers it keeps between uses. The reply is the first
// member, so the redisReply* hiredis and our callers see is the node.
struct reply_pool::node {
  redisReply reply;
  reply_pool* pool;
  char* text = nullptr;  // reply.str points here for string kinds
  std::size_t text_capacity = 0;
  redisReply** table = nullptr;  // reply.element points here for arrays
  std::size_t table_capacity = 0;

  ~node() {
    delete[] text;
    delete[] table;
  }
};

namespace {
// What the free list keeps: enough for a pipeline of small replies; a large
// reply's buffers (a status listing, say) go back to the heap.
constexpr std::size_t kept_nodes = 64;
constexpr std::size_t kept_text = 4096;
constexpr std::size_t kept_table = 64;
}  // namespace

redisReplyObjectFunctions* reply_pool::functions() {
  static redisReplyObjectFunctions fns{create_string, create_array, create_integer, create_nil, free_object};
  return &fns;
}

reply_pool::reply_pool(std::size_t max_elements) : max_elements_(max_elements) {
  free_.reserve(kept_nodes);  // put() never allocates
}

reply_pool::~reply_pool() {
  for (auto* n : free_) delete n;
}

void reply_pool::release() noexcept {
  released_ = true;
  if (live_ == 0) delete this;
}

reply_pool::node* reply_pool::take(int type) {
  node* n;
  if (free_.empty()) {
    n = new node{};
    n->pool = this;
  } else {
    n = free_.back();
    free_.pop_back();
  }
  ++live_;
  n->reply = redisReply{};
  n->reply.type = type;
  return n;
}

void reply_pool::put(node* n) noexcept {
  --live_;
  if (released_ || free_.size() >= kept_nodes || n->text_capacity > kept_text || n->table_capacity > kept_table) {
    delete n;
  } else {
    free_.push_back(n);  // within capacity: reserved below, never throws
  }
  if (released_ && live_ == 0) delete this;
}

void reply_pool::give_back(redisReply* r) noexcept {
  static_assert(std::is_standard_layout_v<node>, "a node's address must be its reply's");
  if (!r) return;
  if (r->type == REDIS_REPLY_ARRAY)
    for (std::size_t i = 0; i < r->elements; ++i) give_back(r->element[i]);
  auto* n = reinterpret_cast<node*>(r);
  n->pool->put(n);
}

void reply_pool::set_string(node* n, const char* s, std::size_t len) {
  if (len + 1 > n->text_capacity) {
    auto* bigger = new char[len + 1];
    delete[] n->text;
    n->text = bigger;
    n->text_capacity = len + 1;
  }
  std::memcpy(n->text, s, len);
  n->text[len] = '\0';
  n->reply.str = n->text;
  n->reply.len = len;
}

void reply_pool::set_elements(node* n, std::size_t count) {
  if (count > n->table_capacity) {
    auto* bigger = new redisReply*[count];
    delete[] n->table;
    n->table = bigger;
    n->table_capacity = count;
  }
  std::fill_n(n->table, count, nullptr);  // a partial array is freed safely
  n->reply.element = n->table;
  n->reply.elements = count;
}

// As hiredis's own functions do: a nested reply goes into its parent's slot.
void* reply_pool::attach(const redisReadTask* task, node* n) {
  if (task->parent) {
    auto* parent = static_cast<redisReply*>(task->parent->obj);
    parent->element[task->idx] = &n->reply;
  }
  return &n->reply;
}

// hiredis is C: nothing may throw through it. A failed allocation returns
// null, which hiredis reports as out of memory; a node taken but not filled
// goes back to the pool.
template <typename Fill>
void* reply_pool::build(const redisReadTask* task, int type, Fill&& fill) noexcept {
  try {
    auto* pool = static_cast<reply_pool*>(task->privdata);
    auto* n = pool->take(type);
    try {
      fill(n);
    } catch (...) {
      pool->put(n);
      throw;
    }
    return attach(task, n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

void* reply_pool::create_string(const redisReadTask* task, char* s, std::size_t len) {
  return build(task, task->type, [&](node* n) { set_string(n, s, len); });
}

void* reply_pool::create_array(const redisReadTask* task, int elements) {
  // hiredis 0.14 has no element cap of its own: a null here surfaces as an
  // out-of-memory error, which the reader reports as a reply too large.
  if (elements > 0 && static_cast<std::size_t>(elements) > static_cast<reply_pool*>(task->privdata)->max_elements_)
    return nullptr;
  return build(task, REDIS_REPLY_ARRAY,
               [&](node* n) { set_elements(n, elements > 0 ? static_cast<std::size_t>(elements) : 0); });
}

void* reply_pool::create_integer(const redisReadTask* task, long long value) {
  return build(task, REDIS_REPLY_INTEGER, [&](node* n) { n->reply.integer = value; });
}

void* reply_pool::create_nil(const redisReadTask* task) {
  return build(task, REDIS_REPLY_NIL, [](node*) {});
}

void reply_pool::free_object(void* reply) { give_back(static_cast<redisReply*>(reply)); }

}  // namespace redlock::detail
