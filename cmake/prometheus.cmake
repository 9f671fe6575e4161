# SPDX-License-Identifier: BSL-1.0
# The optional library redlock::prometheus (src/prometheus/): lock events and node counters as
# Prometheus metric families, over prometheus-cpp (Debian's prometheus-cpp-dev). Built only
# when prometheus-cpp is found; the core library never links it. It installs as its own
# component "prometheus" (its own Debian package, cmake/packaging.cmake), which
# find_package(redlock CONFIG COMPONENTS prometheus) finds. Sets REDLOCK_HAVE_PROMETHEUS.
set(REDLOCK_HAVE_PROMETHEUS OFF)
find_package(prometheus-cpp CONFIG QUIET)
if(NOT prometheus-cpp_FOUND)
  message(STATUS "prometheus-cpp not found: redlock::prometheus is not built")
  return()
endif()
set(REDLOCK_HAVE_PROMETHEUS ON)

add_library(redlock_prometheus
  src/prometheus/event_labels.cpp
  src/prometheus/node_families.cpp
  src/prometheus/prometheus_metrics.cpp
)
add_library(redlock::prometheus ALIAS redlock_prometheus)
set_target_properties(redlock_prometheus PROPERTIES
  EXPORT_NAME prometheus VERSION ${PROJECT_VERSION} SOVERSION ${REDLOCK_SOVERSION})
target_include_directories(redlock_prometheus PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_link_libraries(redlock_prometheus PUBLIC redlock prometheus-cpp::core)
redlock_warnings(redlock_prometheus)

install(TARGETS redlock_prometheus EXPORT redlockPrometheusTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT prometheus
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT prometheus)
install(FILES include/redlock/prometheus.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/redlock COMPONENT prometheus)
install(EXPORT redlockPrometheusTargets NAMESPACE redlock:: DESTINATION ${REDLOCK_CMAKE_DIR}
        COMPONENT prometheus)
