# SPDX-License-Identifier: BSL-1.0
# cmake -DPROGRAM=path/to/flash_sale -P expect_usage.cmake
# Bad arguments must give exit status 2 and a usage message naming the problem.
foreach(case "--stock;x;--buyers;2;--nodes;redis://127.0.0.1:1"
             "--stock;5;--nodes;redis://127.0.0.1:1"
             "--stock;5;--buyers;2;--nodes;notaurl://x"
             "--bogus")
  execute_process(COMMAND ${PROGRAM} ${case} RESULT_VARIABLE status OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT status EQUAL 2 OR NOT err MATCHES "usage: flash_sale")
    message(FATAL_ERROR "flash_sale ${case}: expected status 2 and a usage message, got "
                        "status ${status}\nstdout: ${out}\nstderr: ${err}")
  endif()
  message(STATUS "flash_sale ${case} -> 2: ${err}")
endforeach()
