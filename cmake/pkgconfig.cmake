# SPDX-License-Identifier: BSL-1.0
# Writes redlock.pc (from redlock.pc.in) for the install tree.
#
# Relocatable: the prefix is found from the .pc file's own place (${pcfiledir}), so the file
# is right after `cmake --install --prefix P`, in a Debian package, or after the prefix moved.
# What a consumer links depends on the library's kind:
# - static: libredlock.a needs OpenSSL and threads at the consumer's link, so they are in
#   Libs and a plain `pkg-config --libs redlock` links. OpenSSL is named as -l flags (with -L
#   where CMake found it outside the linker's own directories) rather than as Requires, whose
#   Cflags would reach the consumer.
# - shared: libredlock.so records its own dependencies; Libs only has -lredlock and threads.
# Boost is headers only and has no .pc file on Debian: its directory is added to Cflags when it
# is not one the compiler searches anyway.

if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(REDLOCK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(REDLOCK_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH up "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  string(REGEX REPLACE "/$" "" up "${up}")
  set(REDLOCK_PC_PREFIX "\${pcfiledir}/${up}")
  set(REDLOCK_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(REDLOCK_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(REDLOCK_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()

set(REDLOCK_PC_CFLAGS "-I\${includedir}")
foreach(dir IN LISTS Boost_INCLUDE_DIRS)
  if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
    string(APPEND REDLOCK_PC_CFLAGS " -I${dir}")
  endif()
endforeach()
string(APPEND REDLOCK_PC_CFLAGS " -std=c++20 -pthread")

set(REDLOCK_PC_LIBS "-L\${libdir} -lredlock")
if(REDLOCK_LIBRARY_TYPE STREQUAL "STATIC_LIBRARY")
  set(search_dirs "")
  foreach(library IN ITEMS "${OPENSSL_SSL_LIBRARY}" "${OPENSSL_CRYPTO_LIBRARY}")
    get_filename_component(dir "${library}" DIRECTORY)
    get_filename_component(name "${library}" NAME_WE)
    string(REGEX REPLACE "^lib" "" name "${name}")
    if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES AND NOT dir IN_LIST search_dirs)
      list(APPEND search_dirs "${dir}")
      string(APPEND REDLOCK_PC_LIBS " -L${dir}")
    endif()
    string(APPEND REDLOCK_PC_LIBS " -l${name}")
  endforeach()
endif()
string(APPEND REDLOCK_PC_LIBS " -pthread")

configure_file(${CMAKE_CURRENT_LIST_DIR}/redlock.pc.in ${CMAKE_CURRENT_BINARY_DIR}/redlock.pc @ONLY)
