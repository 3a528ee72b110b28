# SPDX-License-Identifier: Apache-2.0
# scripts/check-spdx must fail, naming the file, on a tree where one file
# lacks the SPDX line (and pass once it has it).
set(tree "${WORK}/tree")
file(REMOVE_RECURSE "${tree}")
file(WRITE "${tree}/good.cpp" "// SPDX-License-Identifier: Apache-2.0\nint good;\n")
file(WRITE "${tree}/bad.cpp" "// no licence line here\nint bad;\n")
file(WRITE "${tree}/notes.md" "Prose is not checked.\n")
execute_process(COMMAND ${CHECKER} ${tree} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0 OR NOT out MATCHES "bad.cpp" OR out MATCHES "good.cpp" OR out MATCHES "notes.md")
  message(FATAL_ERROR "check-spdx should fail naming bad.cpp only (rc ${rc}):\n${out}")
endif()
file(WRITE "${tree}/bad.cpp" "# SPDX-License-Identifier: Apache-2.0\nint bad;\n")
execute_process(COMMAND ${CHECKER} ${tree} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check-spdx should pass once every file has the line (rc ${rc}):\n${out}")
endif()
file(REMOVE_RECURSE "${tree}")
