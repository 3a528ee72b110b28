// SPDX-License-Identifier: Apache-2.0
// The old name of <redlock/node_vote.hpp> (node_result became node_vote),
// kept for 0.x; it goes in 1.0 (CHANGELOG.md, "Deprecated").
#pragma once

#include <redlock/node_vote.hpp>
