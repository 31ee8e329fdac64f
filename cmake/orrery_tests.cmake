# orrery_add_test(folder SOURCES ... DEPS ... [ARGS ...]): one doctest executable, one CTest test
# run under a scratch working directory (ARGS: doctest options, e.g. cases another test runs).
add_library(orrery_doctest_main STATIC ${PROJECT_SOURCE_DIR}/tests/doctest_main.cpp)
target_link_libraries(orrery_doctest_main PUBLIC doctest::doctest orrery_sanitizers)
# Test files only drive the libraries (built -O2), and no suite's time is spent in its own code:
# they compile unoptimised, at a third of the time (tests/cli/cli_test.cpp: 19 s at -O1 -g1, 12 s at -O0).
# Nor do they need debug info outside sanitizer builds (whose reports cite their lines): ~10% less.
add_library(orrery_test_codegen INTERFACE)
target_compile_options(orrery_test_codegen INTERFACE $<$<CONFIG:RelWithDebInfo,Release>:-O0>
  $<$<AND:$<CONFIG:RelWithDebInfo>,$<NOT:$<BOOL:${ORRERY_SANITIZE}>>>:-g0>)
target_link_libraries(orrery_doctest_main PRIVATE orrery_test_codegen orrery_codegen)
target_include_directories(orrery_doctest_main PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_definitions(orrery_doctest_main PRIVATE ORRERY_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

function(orrery_add_test folder)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;ARGS" ${ARGN})
  set(target orrery_test_${folder})
  add_executable(${target} ${ARG_SOURCES})
  orrery_unity(${target})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${target} PRIVATE ${ARG_DEPS} orrery_doctest_main orrery_warnings orrery_test_codegen)
  # One precompiled header for every suite (they compile alike): built by the first, reused by the others.
  get_property(pch_owner GLOBAL PROPERTY orrery_test_pch_owner)
  if(NOT ORRERY_PCH)
  elseif(pch_owner)
    target_precompile_headers(${target} REUSE_FROM ${pch_owner})
  else()
    orrery_precompile(${target} <doctest/doctest.h> ${ORRERY_PCH_JSON})
    set_property(GLOBAL PROPERTY orrery_test_pch_owner ${target})
  endif()
  set(scratch ${CMAKE_CURRENT_BINARY_DIR}/scratch/${folder})
  file(MAKE_DIRECTORY ${scratch})
  add_test(NAME ${folder} COMMAND ${target} --no-version=true ${ARG_ARGS} WORKING_DIRECTORY ${scratch})
  # Skips (an absent ../shared/data) are logged here; `make test` prints their count.
  set_tests_properties(${folder} PROPERTIES ENVIRONMENT "ORRERY_SKIP_LOG=${PROJECT_BINARY_DIR}/tests/skipped.log")
  # Sanitizer builds run the same suites several times slower.
  if(ORRERY_SANITIZE)
    set_tests_properties(${folder} PROPERTIES TIMEOUT 2400)
  else()
    set_tests_properties(${folder} PROPERTIES TIMEOUT 300)
  endif()
endfunction()
