# SPDX-License-Identifier: Apache-2.0
# Builds test/consumer/subproject with redlock as a subproject (VIA:
# add_subdirectory or fetchcontent; SHARED: ON for a shared libredlock) and
# checks that it brought only the library: no build type forced on the host,
# no test, bench, example or CLI targets, no install rules; then builds and
# runs it (BUILD=OFF: configure and check only).
include(${CMAKE_CURRENT_LIST_DIR}/run.cmake)

file(REMOVE_RECURSE "${WORK}")
set(launcher "")
if(LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
# In unity batches, as a host may ask (CMAKE_UNITY_BUILD): half the compile
# time of this second build of the library, which only has to show that a
# subproject gets what it needs to build and link.
run(${CMAKE_COMMAND} -S "${CMAKE_CURRENT_LIST_DIR}/subproject" -B "${WORK}" -DREDLOCK_VIA=${VIA}
    -DREDLOCK_SOURCE=${SOURCE} -DCMAKE_CXX_COMPILER=${CXX} -DBUILD_SHARED_LIBS=${SHARED}
    -DCMAKE_UNITY_BUILD=ON ${launcher})

file(STRINGS "${WORK}/CMakeCache.txt" build_type REGEX "^CMAKE_BUILD_TYPE:")
if(NOT build_type STREQUAL "CMAKE_BUILD_TYPE:STRING=")
  message(FATAL_ERROR "redlock set the host project's build type: ${build_type}")
endif()

run_capture(targets ${CMAKE_COMMAND} --build "${WORK}" --target help)
foreach(unwanted redlock-bench redlock-cli redlock-demo redlock_test_support unit_ integration_ fault_ example_
                 bench_smoke doxygen)
  string(FIND "${targets}" "${unwanted}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "the subproject brought the target '${unwanted}':\n${targets}")
  endif()
endforeach()
foreach(wanted redlock consumer)
  string(FIND "${targets}" "... ${wanted}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "no target '${wanted}':\n${targets}")
  endif()
endforeach()

if(DEFINED BUILD AND NOT BUILD)
  # Installing needs nothing built when there are no install rules; with any
  # rule it fails on the missing files, which is the failure we want.
  run(${CMAKE_COMMAND} --install "${WORK}" --prefix "${WORK}/installed")
  if(EXISTS "${WORK}/installed")
    message(FATAL_ERROR "the subproject installed files into the host's install")
  endif()
  file(REMOVE_RECURSE "${WORK}")
  return()
endif()
run(${CMAKE_COMMAND} --build "${WORK}" -j 2 --target consumer)
run(${CMAKE_COMMAND} --install "${WORK}" --prefix "${WORK}/installed")
if(EXISTS "${WORK}/installed")
  file(GLOB_RECURSE installed RELATIVE "${WORK}/installed" "${WORK}/installed/*")
  if(installed)
    message(FATAL_ERROR "the subproject installed files into the host's install: ${installed}")
  endif()
endif()
if(SHARED)
  # SONAME libredlock.so.MAJOR.MINOR, exporting the API but not detail::.
  file(GLOB_RECURSE sonames "${WORK}/libredlock.so.${SOVERSION}")
  if(NOT sonames)
    message(FATAL_ERROR "no libredlock.so.${SOVERSION} in ${WORK}")
  endif()
  list(GET sonames 0 lib)
  run_capture(symbols nm -D -C --defined-only "${lib}")
  foreach(exported "redlock::client::acquire" "redlock::diagnose" "redlock::errc_name")
    string(FIND "${symbols}" "${exported}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${lib} does not export ${exported}")
    endif()
  endforeach()
  string(REGEX MATCH " [A-Za-z] redlock::detail::[^\n]*" internal "${symbols}")
  if(internal)
    message(FATAL_ERROR "${lib} exports internals (hidden visibility is not applied):${internal}")
  endif()
endif()
run("${WORK}/consumer")
file(REMOVE_RECURSE "${WORK}")
