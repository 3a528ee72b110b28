// SPDX-License-Identifier: Apache-2.0
// Every Redis script of the library: the files in lua/, embedded at build
// time with their SHA1 (cmake/embed_lua.cmake). Run with EVALSHA; the
// coordinator falls back to EVAL once on NOSCRIPT.
#pragma once

#include <span>
#include <string_view>

namespace redlock::detail {

struct script {
  std::string_view name;
  std::string_view body;
  std::string_view sha1;
};

namespace scripts {
extern const script mutex_acquire;
extern const script mutex_release;
extern const script reentrant_acquire;
extern const script reentrant_release;
extern const script reentrant_undo;
extern const script fair_acquire;
extern const script fair_dequeue;
extern const script semaphore_acquire;
extern const script release_all;
extern const script multi_acquire;
extern const script multi_extend;
extern const script leader_proclaim;
extern const script rw_acquire;
extern const script rw_release;
extern const script rw_extend;
extern const script extend;
extern const script fence_raise;
extern const script fenced_write;
extern const script status;
extern const script force_release;
/// Every script, in file-name order (loaded on each new connection).
extern const std::span<const script* const> all;
}  // namespace scripts

}  // namespace redlock::detail
