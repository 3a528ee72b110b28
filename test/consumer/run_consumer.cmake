# SPDX-License-Identifier: Apache-2.0
# Installs this build into a scratch prefix, then configures, builds and runs
# test/consumer/project, which uses find_package(redlock CONFIG) against it
# (POSTGRES: also the component redlock::postgres, which must be there).
include(${CMAKE_CURRENT_LIST_DIR}/run.cmake)

file(REMOVE_RECURSE "${PREFIX}" "${WORK}")
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${PREFIX}")
run(${CMAKE_COMMAND} -S "${SOURCE}" -B "${WORK}" -DCMAKE_PREFIX_PATH=${PREFIX}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DREDLOCK_WANT_POSTGRES=${POSTGRES})
run(${CMAKE_COMMAND} --build "${WORK}" -j 2)
run("${WORK}/consumer")
if(POSTGRES)
  run("${WORK}/consumer_postgres")
endif()
