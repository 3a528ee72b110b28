# SPDX-License-Identifier: Apache-2.0
# One precompiled header for the project's own programs (tests, bench,
# examples, demo): the library's public API, Asio and the standard headers
# they all parse, parsed once: the sanitized build (cold, as CI builds)
# takes 9% less CPU (bench/README.md, "What the measurements decided").
# Users who only build the library never see it.
# REDLOCK_PRECOMPILED_HEADERS=OFF builds without.
option(REDLOCK_PRECOMPILED_HEADERS "Precompile the common headers of the tests, bench and examples" ON)

if(REDLOCK_PRECOMPILED_HEADERS)
  add_library(redlock_program_pch OBJECT ${CMAKE_CURRENT_LIST_DIR}/program_pch.cpp)
  target_link_libraries(redlock_program_pch PRIVATE redlock::redlock redlock_warnings)
  target_precompile_headers(redlock_program_pch PRIVATE
    <redlock/redlock.hpp>
    <boost/asio/io_context.hpp> <boost/asio/steady_timer.hpp> <boost/asio/co_spawn.hpp>
    <boost/asio/use_awaitable.hpp> <boost/asio/use_future.hpp> <boost/asio/executor_work_guard.hpp>
    <boost/asio/bind_cancellation_slot.hpp> <boost/asio/cancellation_signal.hpp> <boost/asio/as_tuple.hpp>
    <boost/asio/post.hpp>
    <algorithm> <atomic> <chrono> <functional> <map> <memory> <mutex> <optional> <set> <string>
    <string_view> <thread> <vector>)
endif()

# redlock_use_program_pch(target): compile `target` with that header (a
# no-op without it). Every program that takes it builds with the same flags
# as redlock_program_pch (the global ones and redlock_warnings).
function(redlock_use_program_pch target)
  if(TARGET redlock_program_pch)
    target_precompile_headers(${target} REUSE_FROM redlock_program_pch)
  endif()
endfunction()
