// SPDX-License-Identifier: Apache-2.0
// A handle for a hold taken elsewhere, from its name and token
// (async_client::adopt; docs/algorithm.md, section 16): which hold the token
// names, and the state that makes release and extend act on that hold alone.
#pragma once

#include "locks/client_impl.hpp"
#include "lease/lock_state.hpp"

#include <redlock/options.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace redlock::detail {

/// What a token looks like, as the library writes them (lock::token()).
enum class token_shape {
  plain,        ///< a mutex's or a semaphore permit's random value (or any foreign value)
  owner_field,  ///< '<client id>:<owner>': a reentrant or fair owner
  read,         ///< 'r:<hex>': one reader's hold of a read-write lock
  write,        ///< 'w:<hex>': the writer's hold
  set,          ///< 's:<hex>': a hold of several names together
};
token_shape shape_of(std::string_view token) noexcept;

/// The prefix a token of several names held together carries ('s:'): a
/// single name's release by such a token would free part of a set.
inline constexpr std::string_view set_token_prefix = "s:";

/// The kind a token of this shape is adopted as, unless told otherwise.
lock_kind kind_of(token_shape shape) noexcept;

/// The state behind an adopted handle, for options check_adopt accepted:
/// no validity until extended; the hold's id unknown (any hold of a
/// reentrant or fair owner field); a set's names sorted.
std::shared_ptr<lock_state> adopted_state(const client_impl& client, const std::string& name, const std::string& token,
                                          milliseconds ttl, const adopt_options& how);

}  // namespace redlock::detail
