# Warnings and sanitizers as INTERFACE targets: every Orrery target links them PRIVATE,
# so third-party code and global CMAKE_CXX_FLAGS stay untouched.
add_library(orrery_warnings INTERFACE)
target_compile_options(orrery_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Woverloaded-virtual -Wconversion -Wsign-conversion -Wimplicit-fallthrough
  $<$<BOOL:${ORRERY_WERROR}>:-Werror>)

# Build time is a feature (a cold `make test` on 2 cores must stay well under 10 minutes): in the
# default RelWithDebInfo build, -g1 (line tables: backtraces and sanitizer reports keep file:line)
# instead of -g, whose full debug info made every file compile ~1.5x longer (cli/sweep.cpp: 31 s
# against 21 s). `make BUILD_TYPE=Debug` keeps everything for a debugger.
add_library(orrery_codegen INTERFACE)
target_compile_options(orrery_codegen INTERFACE $<$<AND:$<CONFIG:RelWithDebInfo>,$<COMPILE_LANGUAGE:CXX>>:-g1>
  # Position-independent code (the Python module links the libraries) without giving up inlining
  # across a file's own functions: nothing of ours is interposed at load time.
  $<$<COMPILE_LANGUAGE:CXX>:-fno-semantic-interposition>)
target_link_libraries(orrery_warnings INTERFACE orrery_codegen)

# The layers that only orchestrate runs (runs/, studies/, validation/, reports/, cli/, the Python
# module) spend no time of their own, the simulation does (sim/, models/, policies/, traces/ keep
# -O2): -O1 compiles them ~25% faster (studies/sweep.cpp: 16 s against 21 s at -O2).
add_library(orrery_codegen_light INTERFACE)
target_compile_options(orrery_codegen_light INTERFACE $<$<AND:$<CONFIG:RelWithDebInfo,Release>,$<COMPILE_LANGUAGE:CXX>>:-O1>)

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

# Precompiled third-party and standard headers for the targets with many files that parse
# nlohmann/json (each file saves ~2.7 s of its 4-8 s: traces/csv.cpp 4.4 s -> 1.8 s). Only headers
# outside the project go in, so the include roots still enforce the layering; sim/ and models/
# (no JSON) do without. ORRERY_PCH=OFF builds without; with ORRERY_UNITY=OFF too, that checks that
# every file includes what it uses.
option(ORRERY_PCH "Precompile the heavy third-party headers" ON)
set(ORRERY_PCH_JSON <nlohmann/json.hpp> <fmt/format.h> <algorithm> <cstdint> <functional> <map> <memory> <optional> <sstream>
    <string> <string_view> <vector>)
function(orrery_precompile target)
  if(ORRERY_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
# The light layers (orrery_codegen_light: runs/, studies/, validation/, reports/, cli/, the Python
# module) compile alike, so they share one such header: built by the first, reused by the others
# (each would take ~8.5 s to build its own; studies/, cli/ and the module had none).
function(orrery_light_pch target)
  if(NOT ORRERY_PCH)
    return()
  endif()
  get_property(owner GLOBAL PROPERTY orrery_light_pch_owner)
  if(owner)
    target_precompile_headers(${target} REUSE_FROM ${owner})
  else()
    target_precompile_headers(${target} PRIVATE ${ORRERY_PCH_JSON})
    set_property(GLOBAL PROPERTY orrery_light_pch_owner ${target})
  endif()
endfunction()

# Unity builds: a target's files compile as one translation unit, so the headers, the templates
# they instantiate (fmt, nlohmann/json, doctest, std) and the code generated for those are done once
# per target rather than once per file. For the test suites (-O0) that is most of their time: their
# objects took 52 s on 2 cores so, against 109 s file by file. The libraries that parse and
# orchestrate (traces/, calibration/ and the light layers) build so too. The simulation layers
# (sim/, models/, policies/) do not: as one unit each, their hot code ran slower
# (`orrery_bench --only sweep`, emulated points per minute, median of 7 alternated runs: 840
# against 1,043), presumably as GCC limits how much inlining may grow a whole unit. A file's
# helpers in an anonymous namespace are seen by its target's other files, so their names must not
# repeat. ORRERY_UNITY=OFF builds file by file (faster to rebuild while editing one file).
option(ORRERY_UNITY "Compile each test suite and non-simulation library as one translation unit" ON)
function(orrery_unity target)
  if(ORRERY_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
    # GCC warns when a class of external linkage holds a type of an anonymous namespace outside
    # the main file, a hazard in headers; in a unity unit every .cpp is outside the main file.
    target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
  endif()
endfunction()

# orrery_add_library(name SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...] [INCLUDE_AS path] [JSON_PCH] [LIGHT] [UNITY]): a layer
# (LIGHT: -O1 and the light layers' shared precompiled header; JSON_PCH: its own; any of the three: a unity build)
# library (target orrery_<name>, alias orrery::<name>) with the project's options. INCLUDE_AS is the
# path its headers are included by (default <name>; models' subjects: models/hardware, ...).
function(orrery_add_library name)
  cmake_parse_arguments(ARG "JSON_PCH;LIGHT;UNITY" "INCLUDE_AS" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  if(NOT ARG_INCLUDE_AS)
    set(ARG_INCLUDE_AS ${name})
  endif()
  add_library(orrery_${name} STATIC ${ARG_SOURCES})
  if(ARG_LIGHT OR ARG_JSON_PCH OR ARG_UNITY)
    orrery_unity(orrery_${name})
  endif()
  add_library(orrery::${name} ALIAS orrery_${name})
  # The include root holds only a link to this layer's folder, so `#include "sim/engine.hpp"`
  # resolves only for targets that link orrery::sim: the link lines enforce the layering, between
  # the top folders and between models' subjects alike.
  set(include_root ${PROJECT_BINARY_DIR}/include/${name})
  get_filename_component(link_parent ${include_root}/${ARG_INCLUDE_AS} DIRECTORY)
  file(MAKE_DIRECTORY ${link_parent})
  file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${include_root}/${ARG_INCLUDE_AS} SYMBOLIC)
  target_include_directories(orrery_${name} PUBLIC ${include_root})
  target_link_libraries(orrery_${name}
    PUBLIC ${ARG_PUBLIC_DEPS} orrery_sanitizers
    PRIVATE ${ARG_PRIVATE_DEPS} orrery_warnings)
  if(ARG_LIGHT)
    target_link_libraries(orrery_${name} PRIVATE orrery_codegen_light)
    orrery_light_pch(orrery_${name})
  elseif(ARG_JSON_PCH)
    orrery_precompile(orrery_${name} ${ORRERY_PCH_JSON})
  endif()
endfunction()
