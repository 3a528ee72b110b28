// SPDX-License-Identifier: Apache-2.0
// Umbrella header.
#pragma once

#include <redlock/async_client.hpp>
#include <redlock/client.hpp>
#include <redlock/clock.hpp>
#include <redlock/doctor.hpp>
#include <redlock/election.hpp>
#include <redlock/error.hpp>
#include <redlock/fenced_store.hpp>
#include <redlock/lock.hpp>
#include <redlock/mutex.hpp>
#include <redlock/node_vote.hpp>
#include <redlock/node_uri.hpp>
#include <redlock/observer.hpp>
#include <redlock/options.hpp>
#include <redlock/signatures.hpp>
#include <redlock/status.hpp>
#include <redlock/version.hpp>
