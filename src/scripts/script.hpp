// Every Redis script of the library: the files in lua/, embedded at build
// time with their SHA1 (cmake/embed_lua.cmake). Run with EVALSHA; the
// coordinator falls back to EVAL once on NOSCRIPT.
#pragma once

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
extern const script mutex_extend;
}  // namespace scripts

}  // namespace redlock::detail
