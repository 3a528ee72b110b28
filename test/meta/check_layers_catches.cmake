# SPDX-License-Identifier: Apache-2.0
# scripts/check-layers must fail, naming the file, on a tree where a lower
# layer includes from a higher one (and pass once the include points down).
set(tree "${WORK}/layers/src")
file(REMOVE_RECURSE "${WORK}/layers")
file(WRITE "${tree}/connection/connection.hpp" "// SPDX-License-Identifier: Apache-2.0\n#pragma once\n")
file(WRITE "${tree}/locks/client_impl.hpp" "// SPDX-License-Identifier: Apache-2.0\n#include \"connection/connection.hpp\"\n")
file(WRITE "${tree}/lease/watchdog.cpp" "// SPDX-License-Identifier: Apache-2.0\n#include \"locks/client_impl.hpp\"\n")
execute_process(COMMAND ${CHECKER} ${tree} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0 OR NOT out MATCHES "lease/watchdog.cpp" OR out MATCHES "client_impl.hpp \\(layer")
  message(FATAL_ERROR "check-layers should fail naming lease/watchdog.cpp only (rc ${rc}):\n${out}")
endif()
file(WRITE "${tree}/lease/watchdog.cpp" "// SPDX-License-Identifier: Apache-2.0\n#include \"connection/connection.hpp\"\n")
execute_process(COMMAND ${CHECKER} ${tree} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check-layers should pass once every include points down (rc ${rc}):\n${out}")
endif()
file(REMOVE_RECURSE "${WORK}/layers")
