# SPDX-License-Identifier: Apache-2.0
# One model check (test/model/CMakeLists.txt): spin -a MODEL with DEFINES in
# WORK, the verifier compiled with CC and CC_FLAGS, run with PAN_ARGS for at
# most SECONDS. EXPECT=holds: the search must end, complete, with no error
# (no assertion violation, invalid end state, acceptance cycle).
# EXPECT=bounded: a search too big to end, cut at SECONDS (or ended by its
# own bounds: bitstate, -m depth): no error in what it explored (pan stops
# at the first error and writes a trail, so a search killed at the bound
# found none). EXPECT=counterexample: a
# seeded bug: the search must find one (a model that stops finding its bug
# has drifted from the code it transcribes).
foreach(var SPIN CC MODEL WORK EXPECT SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_model.cmake: ${var} not set")
  endif()
endforeach()
separate_arguments(DEFINES UNIX_COMMAND "${DEFINES}")
separate_arguments(CC_FLAGS UNIX_COMMAND "${CC_FLAGS}")
separate_arguments(PAN_ARGS UNIX_COMMAND "${PAN_ARGS}")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

execute_process(COMMAND "${SPIN}" -a ${DEFINES} "${MODEL}" WORKING_DIRECTORY "${WORK}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0 OR out MATCHES "error")
  message(FATAL_ERROR "spin -a ${DEFINES} ${MODEL} failed (${rc}):\n${out}")
endif()
# -O0: pan.c of these models is large, and an optimised build of it takes
# longer than the search it speeds up.
execute_process(COMMAND "${CC}" -O0 -w ${CC_FLAGS} -o pan pan.c WORKING_DIRECTORY "${WORK}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling the verifier of ${MODEL} failed (${rc}):\n${out}")
endif()
# Cut at SECONDS with SIGINT where timeout(1) is there: pan then prints
# what it explored (states, depth: the coverage of a bounded search) before
# it exits; execute_process's own TIMEOUT (SIGKILL) is the backstop.
find_program(TIMEOUT_PROGRAM timeout)
if(TIMEOUT_PROGRAM)
  set(cut "${TIMEOUT_PROGRAM}" -s INT ${SECONDS})
  math(EXPR backstop "${SECONDS} + 30")
else()
  set(cut "")
  set(backstop ${SECONDS})
endif()
execute_process(COMMAND ${cut} ./pan ${PAN_ARGS} WORKING_DIRECTORY "${WORK}" TIMEOUT ${backstop}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(REGEX REPLACE "(^|\n)Depth=[^\n]*" "" summary "${out}")
message("${MODEL} ${DEFINES}:\n${summary}")
if(rc MATCHES "timeout" OR out MATCHES "(^|\n)Interrupted")
  file(GLOB trails "${WORK}/*.trail")
  if(EXPECT STREQUAL "bounded" AND NOT trails)
    message("search cut at ${SECONDS} s (the bound): no violation in what it explored")
    return()
  endif()
  message(FATAL_ERROR "the search did not end within ${SECONDS} s")
endif()
string(REGEX MATCH "errors: ([0-9]+)" found "${out}")
if(NOT found)
  message(FATAL_ERROR "the verifier printed no verdict (${rc})")
endif()
set(errors ${CMAKE_MATCH_1})
if(EXPECT STREQUAL "holds")
  if(NOT errors EQUAL 0 OR out MATCHES "out of memory|max search depth too small|Search not completed")
    execute_process(COMMAND "${SPIN}" -t -p ${DEFINES} "${MODEL}" WORKING_DIRECTORY "${WORK}"
                    OUTPUT_VARIABLE trail ERROR_VARIABLE trail)
    message(FATAL_ERROR "the property does not hold, or the search was cut short; the trail:\n${trail}")
  endif()
elseif(EXPECT STREQUAL "bounded")
  if(NOT errors EQUAL 0)
    execute_process(COMMAND "${SPIN}" -t -p ${DEFINES} "${MODEL}" WORKING_DIRECTORY "${WORK}"
                    OUTPUT_VARIABLE trail ERROR_VARIABLE trail)
    message(FATAL_ERROR "the property does not hold; the trail:\n${trail}")
  endif()
elseif(EXPECT STREQUAL "counterexample")
  if(errors EQUAL 0)
    message(FATAL_ERROR "the seeded bug (${DEFINES}) was not found: the model no longer catches it")
  endif()
  message("the seeded bug was found, as it must be")
else()
  message(FATAL_ERROR "EXPECT must be holds, bounded or counterexample, not ${EXPECT}")
endif()
