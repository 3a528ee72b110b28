# SPDX-License-Identifier: Apache-2.0
# Installs this build into a scratch prefix and compiles
# test/consumer/project/main.cpp with nothing but
#   c++ main.cpp $(pkg-config --cflags --libs redlock)
# then runs it. Also checks the .pc file's version.
include(${CMAKE_CURRENT_LIST_DIR}/run.cmake)

file(REMOVE_RECURSE "${PREFIX}")
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${PREFIX}")
file(GLOB_RECURSE pc_files "${PREFIX}/*/redlock.pc")
if(NOT pc_files)
  message(FATAL_ERROR "no redlock.pc installed under ${PREFIX}")
endif()
list(GET pc_files 0 pc)
get_filename_component(pc_dir "${pc}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
run_capture(version pkg-config --modversion redlock)
string(STRIP "${version}" version)
if(NOT version STREQUAL VERSION)
  message(FATAL_ERROR "redlock.pc says version '${version}', the project is ${VERSION}")
endif()
# As a shell would: the flags are split into words.
run_capture(flags pkg-config --cflags --libs redlock)
string(STRIP "${flags}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(${CXX} "${SOURCE}/main.cpp" -o "${PREFIX}/consumer" ${flags})
run("${PREFIX}/consumer")
file(REMOVE_RECURSE "${PREFIX}")
