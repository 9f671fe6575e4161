# SPDX-License-Identifier: BSL-1.0
# Debian packages, made by `cpack -G DEB` in a build directory (docs/installation.md), one per
# install component:
#   libredlock-dev        headers, libredlock.a (or the libredlock.so link), the CMake package,
#                         the pkg-config file
#   libredlock<SOVERSION> libredlock.so.<SOVERSION>, with BUILD_SHARED_LIBS=ON only
#   redlock               the command-line tool and its man page
#   libredlock-prometheus-dev  redlock::prometheus (cmake/prometheus.cmake), when prometheus-cpp
#                         was found
set(REDLOCK_PACKAGE_MAINTAINER "Seed 36ca8217 maintainers <maintainers@users.noreply.a-seed-36ca8217.example>"
    CACHE STRING "The Maintainer field of the Debian packages")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME redlock)
set(CPACK_PACKAGE_VENDOR redlock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The first line of each package's description; the components' own text follows it.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Redis distributed locks for Boost.Asio and C++20 coroutines")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_CONTACT "${REDLOCK_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Debian packages ship stripped binaries (the static library keeps its symbols either way).
set(CPACK_STRIP_FILES ON)

set(CPACK_COMPONENTS_ALL dev)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libredlock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION "The C++20 library redlock: its headers, the library, the CMake package
(find_package(redlock)) and the pkg-config file.")
if(REDLOCK_LIBRARY_TYPE STREQUAL "SHARED_LIBRARY")
  list(APPEND CPACK_COMPONENTS_ALL lib)
  set(CPACK_DEBIAN_LIB_PACKAGE_NAME libredlock${REDLOCK_SOVERSION})
  set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
  set(CPACK_DEBIAN_LIB_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_LIB_DESCRIPTION "The C++20 library redlock: the shared library.")
  # The package the dev package and the tool need, exactly this version (cpack adds the
  # dependency on libredlock<SOVERSION> from these).
  set(CPACK_COMPONENT_DEV_DEPENDS lib)
  set(CPACK_COMPONENT_CLI_DEPENDS lib)
  set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libboost1.81-dev")
  # dpkg-shlibdeps looks for libredlock.so.<SOVERSION> here, where the package being made has
  # it; the dependency on it comes from CPACK_COMPONENT_CLI_DEPENDS.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR})
else()
  # libredlock.a leaves OpenSSL to the consumer's link.
  set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libboost1.81-dev, libssl-dev")
endif()
if(REDLOCK_BUILD_TOOLS)
  list(APPEND CPACK_COMPONENTS_ALL cli)
  set(CPACK_DEBIAN_CLI_PACKAGE_NAME redlock)
  set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
  set(CPACK_DEBIAN_CLI_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_CLI_DESCRIPTION "The command-line tool redlock, a distributed flock: it runs a command
while holding a lock on one Redis server or, with the Redlock algorithm, on a
majority of N independent Redis masters, so that a job scheduled on several
machines runs on one of them at a time.")
endif()

if(REDLOCK_HAVE_PROMETHEUS)
  list(APPEND CPACK_COMPONENTS_ALL prometheus)
  set(CPACK_DEBIAN_PROMETHEUS_PACKAGE_NAME libredlock-prometheus-dev)
  set(CPACK_DEBIAN_PROMETHEUS_PACKAGE_SECTION libdevel)
  # Its CMake targets need the core package's, and prometheus-cpp's headers and library.
  set(CPACK_COMPONENT_PROMETHEUS_DEPENDS dev)
  set(CPACK_DEBIAN_PROMETHEUS_PACKAGE_DEPENDS "prometheus-cpp-dev")
  if(REDLOCK_LIBRARY_TYPE STREQUAL "SHARED_LIBRARY")
    set(CPACK_DEBIAN_PROMETHEUS_PACKAGE_SHLIBDEPS ON)
  endif()
  set(CPACK_DEBIAN_PROMETHEUS_DESCRIPTION "redlock's lock events and node counters as Prometheus metrics: the library
redlock::prometheus (find_package(redlock COMPONENTS prometheus)), over prometheus-cpp.")
endif()

include(CPack)
