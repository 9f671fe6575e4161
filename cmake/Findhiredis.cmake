# SPDX-License-Identifier: BSL-1.0
# Finds hiredis (Debian: libhiredis-dev) and defines the imported target hiredis::hiredis,
# which the test-support library uses to talk to the redis-servers the tests start.
find_path(hiredis_INCLUDE_DIR hiredis/hiredis.h)
find_library(hiredis_LIBRARY hiredis)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(hiredis REQUIRED_VARS hiredis_LIBRARY hiredis_INCLUDE_DIR)
if(hiredis_FOUND AND NOT TARGET hiredis::hiredis)
  add_library(hiredis::hiredis UNKNOWN IMPORTED)
  set_target_properties(hiredis::hiredis PROPERTIES
    IMPORTED_LOCATION "${hiredis_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${hiredis_INCLUDE_DIR}")
endif()
mark_as_advanced(hiredis_INCLUDE_DIR hiredis_LIBRARY)
