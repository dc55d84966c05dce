# The layout's rules, checked over the source tree at ROOT:
#  1. a file includes only from the folders its own folder may use (the
#     table below, which docs/layout.md shows);
#  2. every library and program a folder's CMakeLists.txt builds is named
#     in that folder's README.md;
#  3. every document a file cites (a path ending in .md) exists.
# Run: cmake -DROOT=<source dir> -P tests/layout/check_layout.cmake
# Exits non-zero listing each violation as FILE:LINE: why.
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source dir> -P check_layout.cmake")
endif()

# Folder -> the folders its files may include from (besides its own).
# `core` is the files at core/'s root (core/result.h, core/capture_losses.h:
# header-only and pure),
# which every folder may include; core/schemes/x.h is in core/schemes, the
# longer match.
set(every core)
set(core_any core/schemes core/procfs core/formats core/sim)
set(allowed_os ${every})
set(allowed_core "")
set(allowed_core/schemes ${every})
set(allowed_core/procfs ${every} core/schemes)
set(allowed_core/formats ${every} core/schemes bpf)
set(allowed_core/sim ${every} core/schemes)
set(allowed_bpf ${every})
set(allowed_sampler ${every} core/procfs core/schemes os)
set(allowed_audit ${every} core/schemes core/formats bpf)
set(allowed_capture ${every} ${core_any} audit sampler bpf os)
set(allowed_store ${every} core/schemes os)
set(allowed_daemon ${every} ${core_any} audit capture sampler store bpf os)
set(allowed_cli ${every} ${core_any} audit capture sampler store bpf os)
set(allowed_bench ${every} ${core_any} audit capture sampler store bpf bench/bpf os)
set(allowed_bench/bpf ${every} bpf)
# daemon: daemon_options_fuzz, of rssauditd's options (docs/layout.md).
set(allowed_fuzz ${every} ${core_any} audit capture cli daemon sampler bpf os)
set(folders os core core/schemes core/procfs core/formats core/sim bpf
    sampler audit capture store daemon cli bench/bpf bench fuzz)
# Generated headers with no folder, and who may include them.
set(generated_rssaudit.skel.h capture)
set(generated_rssaudit_kfuncs.skel.h capture)
set(generated_stream_inject.skel.h bench)
set(generated_tp_floor.skel.h bench)
set(generated_line_cost.skel.h bench)

set(violations 0)
macro(violation where why)
  message("${where}: ${why}")
  math(EXPR violations "${violations} + 1")
endmacro()

# The folder (from the table) that `path` (relative to ROOT) lies in: the
# longest match, so bench/bpf/x.c is in bench/bpf, not bench.
function(folder_of path out)
  set(best "")
  foreach(f IN LISTS folders)
    string(LENGTH "${f}" n)
    string(SUBSTRING "${path}" 0 ${n} head)
    string(LENGTH "${best}" nb)
    if(head STREQUAL f AND "${path}" MATCHES "^${f}/" AND n GREATER nb)
      set(best "${f}")
    endif()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

# 1. Includes.
file(GLOB_RECURSE sources RELATIVE ${ROOT}
  ${ROOT}/*.h ${ROOT}/*.cc ${ROOT}/*.c)
foreach(src IN LISTS sources)
  if(src MATCHES "^(build|tests|\\.git)")
    continue()
  endif()
  folder_of("${src}" own)
  if(own STREQUAL "")
    continue()
  endif()
  file(STRINGS ${ROOT}/${src} lines REGEX "^#include \"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" inc "${line}")
    if(NOT inc MATCHES "/")
      # Beside the file, or generated.
      if(EXISTS ${ROOT}/${own}/${inc})
        continue()
      endif()
      if(DEFINED generated_${inc})
        if(own IN_LIST generated_${inc})
          continue()
        endif()
        violation("${src}" "includes ${inc}, generated for ${generated_${inc}} only")
        continue()
      endif()
      violation("${src}" "includes ${inc}, which is in no folder")
      continue()
    endif()
    folder_of("${inc}" theirs)
    if(theirs STREQUAL own OR theirs IN_LIST allowed_${own})
      continue()
    endif()
    violation("${src}" "forbidden include of ${inc}: ${own}/ may include ${allowed_${own}}")
  endforeach()
endforeach()

# 2. Each folder's README names what its CMakeLists.txt builds.
foreach(f IN LISTS folders)
  if(NOT EXISTS ${ROOT}/${f}/CMakeLists.txt)
    continue()
  endif()
  if(NOT EXISTS ${ROOT}/${f}/README.md)
    violation("${f}" "has no README.md")
    continue()
  endif()
  file(READ ${ROOT}/${f}/README.md readme)
  file(READ ${ROOT}/${f}/CMakeLists.txt cmake)
  string(REGEX MATCHALL "(add_library|add_executable|rssaudit_bpf_skeleton)\\([a-z_]+"
    built "${cmake}")
  foreach(b IN LISTS built)
    string(REGEX REPLACE ".*\\(" "" name "${b}")
    if(b MATCHES "^rssaudit_bpf_skeleton")
      set(name "${name}_bpf")
    endif()
    string(FIND "${readme}" "`${name}`" at)
    if(at EQUAL -1)
      violation("${f}/README.md" "does not name `${name}`, built in ${f}/CMakeLists.txt")
    endif()
  endforeach()
endforeach()

# 3. Cited documents exist: any path ending in .md in code, build files and
# the documents themselves. A bare name (README.md) is the file beside it.
file(GLOB_RECURSE cited RELATIVE ${ROOT}
  ${ROOT}/*.h ${ROOT}/*.cc ${ROOT}/*.c ${ROOT}/*.md ${ROOT}/*.sh
  ${ROOT}/*.sql ${ROOT}/*.in ${ROOT}/*CMakeLists.txt ${ROOT}/*.cmake
  ${ROOT}/.ci/*)
foreach(src IN LISTS cited)
  if(src MATCHES "^(build|\\.git)")
    continue()
  endif()
  file(STRINGS ${ROOT}/${src} lines REGEX "[A-Za-z0-9_]\\.md")
  get_filename_component(dir ${src} DIRECTORY)
  foreach(line IN LISTS lines)
    string(REGEX MATCHALL "[A-Za-z0-9_./-]*[A-Za-z0-9_]\\.md" docs "${line}")
    foreach(doc IN LISTS docs)
      string(REGEX REPLACE "^\\./" "" doc "${doc}")
      if(EXISTS ${ROOT}/${doc} OR EXISTS ${ROOT}/${dir}/${doc})
        continue()
      endif()
      violation("${src}" "cites ${doc}, which does not exist")
    endforeach()
  endforeach()
endforeach()

if(violations GREATER 0)
  message(FATAL_ERROR "layout: ${violations} violation(s)")
endif()
message("layout: every include, README and cited document in order")
