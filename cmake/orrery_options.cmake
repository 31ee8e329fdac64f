# Warnings and sanitizers as INTERFACE targets: every Orrery target links them PRIVATE,
# so third-party code and global CMAKE_CXX_FLAGS stay untouched.
add_library(orrery_warnings INTERFACE)
target_compile_options(orrery_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Woverloaded-virtual -Wconversion -Wsign-conversion -Wimplicit-fallthrough
  $<$<BOOL:${ORRERY_WERROR}>:-Werror>)

add_library(orrery_sanitizers INTERFACE)
# Fuzzing builds instrument every library for coverage (libFuzzer links into the targets only).
if(ORRERY_FUZZ)
  set(ORRERY_SANITIZE ON)
  target_compile_options(orrery_sanitizers INTERFACE -fsanitize=fuzzer-no-link)
  target_link_options(orrery_sanitizers INTERFACE -fsanitize=fuzzer-no-link)
endif()
if(ORRERY_SANITIZE)
  target_compile_options(orrery_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(orrery_sanitizers INTERFACE -fsanitize=address,undefined)
endif()

# orrery_add_library(name SOURCES... [DEPS ...]): a layer library with the project's options.
function(orrery_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(orrery_${name} STATIC ${ARG_SOURCES})
  add_library(orrery::${name} ALIAS orrery_${name})
  # The include root holds only a link to this layer's folder, so `#include "sim/engine.hpp"`
  # resolves only for targets that link orrery::sim: the link lines enforce the layering.
  set(include_root ${PROJECT_BINARY_DIR}/include/${name})
  file(MAKE_DIRECTORY ${include_root})
  file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${include_root}/${name} SYMBOLIC)
  target_include_directories(orrery_${name} PUBLIC ${include_root})
  target_link_libraries(orrery_${name}
    PUBLIC ${ARG_PUBLIC_DEPS} orrery_sanitizers
    PRIVATE ${ARG_PRIVATE_DEPS} orrery_warnings)
endfunction()
