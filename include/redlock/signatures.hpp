// SPDX-License-Identifier: Apache-2.0
// The completion signatures of the asynchronous operations
// (async_client, and the library's own operations behind it).
#pragma once

#include <redlock/election.hpp>
#include <redlock/lock.hpp>
#include <redlock/status.hpp>

#include <boost/system/error_code.hpp>

#include <optional>
#include <vector>

namespace redlock {

/// An acquisition (acquire, campaign): the lock, or why not.
using acquire_signature = void(boost::system::error_code, lock);
/// Release, extend, resign: done, or why not.
using done_signature = void(boost::system::error_code);
/// Status: each master's view.
using status_signature = void(boost::system::error_code, std::vector<node_lock_view>);
/// The lock names on the masters (async_list).
using list_signature = void(boost::system::error_code, lock_listing);
/// A forced release: what each master held and what was removed there.
using force_release_signature = void(boost::system::error_code, std::vector<node_forced_release>);
/// Who leads a name, if anyone.
using leader_signature = void(boost::system::error_code, std::optional<leader_info>);

}  // namespace redlock
