# SPDX-License-Identifier: Apache-2.0
# Install rules (REDLOCK_INSTALL): headers, the library, the CMake package
# (find_package(redlock)), redlock.pc (pkg-config), and the Debian package
# that `cpack -G DEB` makes from them. Components: `devel` (library, headers,
# package files) and `cli` (the redlock command); the .deb carries both.
include(CMakePackageConfigHelpers)
set(REDLOCK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/redlock)
get_target_property(redlock_type redlock TYPE)
if(redlock_type STREQUAL "STATIC_LIBRARY")
  set(REDLOCK_STATIC TRUE)
else()
  set(REDLOCK_STATIC FALSE)
endif()

install(DIRECTORY include/redlock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT devel
        PATTERN prometheus_observer.hpp EXCLUDE PATTERN postgres_fenced_store.hpp EXCLUDE)
install(FILES ${REDLOCK_GENERATED_INCLUDE}/redlock/version.hpp ${REDLOCK_GENERATED_INCLUDE}/redlock/export.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/redlock COMPONENT devel)
install(TARGETS redlock EXPORT redlockTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT redlockTargets NAMESPACE redlock:: DESTINATION ${REDLOCK_CMAKE_DIR} COMPONENT devel)
if(TARGET redlock_prometheus)
  install(FILES include/redlock/prometheus_observer.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/redlock
          COMPONENT devel)
  install(TARGETS redlock_prometheus EXPORT redlockPrometheusTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel)
  install(EXPORT redlockPrometheusTargets NAMESPACE redlock:: DESTINATION ${REDLOCK_CMAKE_DIR} COMPONENT devel)
endif()
if(TARGET redlock_postgres)
  install(FILES include/redlock/postgres_fenced_store.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/redlock
          COMPONENT devel)
  install(TARGETS redlock_postgres EXPORT redlockPostgresTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel)
  install(EXPORT redlockPostgresTargets NAMESPACE redlock:: DESTINATION ${REDLOCK_CMAKE_DIR} COMPONENT devel)
endif()
configure_package_config_file(cmake/redlockConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/redlockConfig.cmake
  INSTALL_DESTINATION ${REDLOCK_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/redlockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/redlockConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/redlockConfigVersion.cmake
              cmake/FindHiredis.cmake
        DESTINATION ${REDLOCK_CMAKE_DIR} COMPONENT devel)

install(FILES LICENSE CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT devel)

# ---- redlock.pc ---------------------------------------------------------------
# Relocatable (prefix from the .pc file's own place). A static libredlock puts
# its dependencies in Libs, so `pkg-config --cflags --libs redlock` links
# without --static; a shared one keeps them private.
set(REDLOCK_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH REDLOCK_PC_TO_PREFIX /${REDLOCK_PC_DIR} /)
string(REGEX REPLACE "/$" "" REDLOCK_PC_TO_PREFIX "${REDLOCK_PC_TO_PREFIX}")
set(REDLOCK_PC_DEPS_LIBS "-lboost_url -pthread")
if(REDLOCK_SANITIZE)
  string(APPEND REDLOCK_PC_DEPS_LIBS " -fsanitize=address,undefined")
endif()
get_target_property(redlock_defs redlock INTERFACE_COMPILE_DEFINITIONS)
set(REDLOCK_PC_CFLAGS "")
foreach(def IN LISTS redlock_defs)
  if(def)
    string(APPEND REDLOCK_PC_CFLAGS " -D${def}")
  endif()
endforeach()
if(REDLOCK_STATIC)
  set(REDLOCK_PC_REQUIRES "Requires: hiredis openssl")
  set(REDLOCK_PC_LIBS "-L\${libdir} -lredlock ${REDLOCK_PC_DEPS_LIBS}")
  set(REDLOCK_PC_LIBS_PRIVATE "")
else()
  set(REDLOCK_PC_REQUIRES "Requires.private: hiredis openssl")
  set(REDLOCK_PC_LIBS "-L\${libdir} -lredlock")
  set(REDLOCK_PC_LIBS_PRIVATE "Libs.private: ${REDLOCK_PC_DEPS_LIBS}")
endif()
configure_file(cmake/redlock.pc.in ${CMAKE_CURRENT_BINARY_DIR}/redlock.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/redlock.pc DESTINATION ${REDLOCK_PC_DIR} COMPONENT devel)

# ---- cpack -G DEB -------------------------------------------------------------
# One package, `redlock`: library, headers, CMake and pkg-config files, and
# the redlock command. Its dependencies are the Debian -dev packages a
# consumer compiles and links against, plus what dpkg-shlibdeps finds for
# the binaries.
set(CPACK_PACKAGE_NAME redlock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "redlock maintainers <redlock@localhost>" CACHE STRING "The .deb's Maintainer field")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Only these two components (not redlock-bench, say), in one package.
set(CPACK_COMPONENTS_ALL devel cli)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libboost1.81-dev, libboost-url1.81-dev, libssl-dev, libhiredis-dev")
if(TARGET redlock_prometheus)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", prometheus-cpp-dev")
endif()
# A static libredlock-postgres needs libpq in the consumer's link (a shared
# one: dpkg-shlibdeps finds libpq5).
if(TARGET redlock_postgres AND REDLOCK_STATIC)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libpq-dev")
endif()
include(CPack)
