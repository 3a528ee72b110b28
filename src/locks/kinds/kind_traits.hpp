// SPDX-License-Identifier: Apache-2.0
// The questions the library asks about a lock kind, answered in one place:
// how its holds are stored on the masters decides how they are taken,
// re-entered, released and adopted.
#pragma once

#include <redlock/options.hpp>

namespace redlock::detail {

/// One string key per hold, with a random token drawn at every attempt (a
/// mutex, a semaphore's permit slot).
constexpr bool is_token_kind(lock_kind k) noexcept { return k == lock_kind::mutex || k == lock_kind::semaphore; }

/// Owner fields in a hash, the levels of a re-entered hold counted on the
/// masters (reentrant, fair): the field is the same at every acquisition.
constexpr bool is_owner_kind(lock_kind k) noexcept { return k == lock_kind::reentrant || k == lock_kind::fair; }

/// Read-write locks: a hash with one field per hold, the field being the
/// attempt's token ('r:<hex>', 'w:<hex>'); re-entry is counted by the client.
constexpr bool is_rw_kind(lock_kind k) noexcept { return k == lock_kind::read || k == lock_kind::write; }

/// Holds that belong to a named owner (acquire_options::owner), which
/// re-enters them rather than wait for itself.
constexpr bool has_owner(lock_kind k) noexcept { return is_owner_kind(k) || is_rw_kind(k); }

}  // namespace redlock::detail
