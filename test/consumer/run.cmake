# SPDX-License-Identifier: Apache-2.0
# run(COMMAND...): runs it, fails the test with its output if it fails.
# run_capture(VAR COMMAND...): the same, keeping its standard output in VAR.
function(run_capture var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

function(run)
  run_capture(out ${ARGN})
  message(STATUS "${out}")
endfunction()
