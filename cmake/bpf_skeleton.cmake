# rssaudit_bpf_skeleton(NAME [DEFINES macro...] PROGRAMS prog...): compiles
# <prog>.bpf.c of the calling folder each (with -Dmacro for each of
# DEFINES), links them with `bpftool gen object` into NAME.linked.bpf.o and
# generates NAME.skel.h (skeleton name NAME_bpf); the INTERFACE library
# NAME_bpf puts the skeleton on a consumer's include path.
find_program(RSSAUDIT_BPF_CLANG NAMES clang clang-14)
find_program(RSSAUDIT_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin)
if(NOT RSSAUDIT_BPF_CLANG)
  message(FATAL_ERROR
    "clang not found: the BPF programs need it (Debian: apt install clang)")
endif()
if(NOT RSSAUDIT_BPFTOOL)
  message(FATAL_ERROR
    "bpftool not found: it links the BPF programs and generates the skeleton"
    " (Debian: apt install bpftool)")
endif()

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(RSSAUDIT_BPF_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(RSSAUDIT_BPF_ARCH arm64)
else()
  message(FATAL_ERROR "no BPF target arch for ${CMAKE_SYSTEM_PROCESSOR}")
endif()

function(rssaudit_bpf_skeleton name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "DEFINES;PROGRAMS")
  # Every program may include bpf/'s headers and its own folder's.
  file(GLOB headers ${PROJECT_SOURCE_DIR}/bpf/*.h
       ${CMAKE_CURRENT_SOURCE_DIR}/*.h)
  set(defines)
  foreach(d ${arg_DEFINES})
    list(APPEND defines -D${d})
  endforeach()
  set(objects)
  foreach(prog ${arg_PROGRAMS})
    # Per skeleton: two builds of one program differ by their defines.
    set(obj ${CMAKE_CURRENT_BINARY_DIR}/${name}/${prog}.bpf.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/${name}
      COMMAND ${RSSAUDIT_BPF_CLANG} -g -O2 -target bpf
              -D__TARGET_ARCH_${RSSAUDIT_BPF_ARCH} ${defines} -Wall -Werror
              -I${CMAKE_CURRENT_SOURCE_DIR} -I${PROJECT_SOURCE_DIR}
              -c ${CMAKE_CURRENT_SOURCE_DIR}/${prog}.bpf.c -o ${obj}
      DEPENDS ${prog}.bpf.c ${headers}
      COMMENT "BPF ${prog}.bpf.c"
      VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  set(linked ${CMAKE_CURRENT_BINARY_DIR}/${name}.linked.bpf.o)
  set(skel ${CMAKE_CURRENT_BINARY_DIR}/${name}.skel.h)
  add_custom_command(
    OUTPUT ${linked}
    COMMAND ${RSSAUDIT_BPFTOOL} gen object ${linked} ${objects}
    DEPENDS ${objects}
    COMMENT "BPF link ${name}.linked.bpf.o"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND sh -c "'${RSSAUDIT_BPFTOOL}' gen skeleton '${linked}' name ${name}_bpf > '${skel}'"
    DEPENDS ${linked}
    COMMENT "BPF skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_bpf_skel DEPENDS ${skel})
  add_library(${name}_bpf INTERFACE)
  target_include_directories(${name}_bpf INTERFACE ${CMAKE_CURRENT_BINARY_DIR})
  add_dependencies(${name}_bpf ${name}_bpf_skel)
endfunction()
