// SPDX-License-Identifier: Apache-2.0
// What the files of integration_mutex (test_mutex.cpp, test_mutex_wake.cpp,
// test_sync_client.cpp) share: the fixture, the library, the standard
// headers their cases use, and the names they use unqualified.
#pragma once

#include <boost/test/unit_test.hpp>

#include "masters.hpp"
#include "scripts/keys.hpp"
#include "scripts/script.hpp"

#include <redlock/redlock.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <future>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
using redlock::errc;
using redlock::testing::masters;
using redlock::testing::code_of;
using redlock::testing::eventually;
using redlock::testing::lock_calls;
using redlock::testing::listening_clients;
using redlock::testing::wake_list_is;
using steady = std::chrono::steady_clock;
