# RSSAUDIT_FUZZ=ON: included by the top-level CMakeLists.txt before any
# library is defined, so that every library a fuzz target links is built
# with the fuzzer's coverage and the sanitizers (fuzz/README.md). The
# targets themselves add -fsanitize=fuzzer (fuzz/CMakeLists.txt).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang"
   OR NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
    "RSSAUDIT_FUZZ=ON needs clang and libFuzzer (C: ${CMAKE_C_COMPILER_ID}, "
    "C++: ${CMAKE_CXX_COMPILER_ID}). Configure a separate build directory: "
    "cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang "
    "-DCMAKE_CXX_COMPILER=clang++ -DRSSAUDIT_FUZZ=ON")
endif()

include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer,address,undefined")
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }
]] RSSAUDIT_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(NOT RSSAUDIT_HAVE_LIBFUZZER)
  message(FATAL_ERROR
    "RSSAUDIT_FUZZ=ON: ${CMAKE_CXX_COMPILER} cannot link -fsanitize=fuzzer "
    "(Debian: apt install clang, which ships libclang_rt.fuzzer)")
endif()

set(RSSAUDIT_SANITIZE address,undefined)
add_compile_options(-fsanitize=fuzzer-no-link,${RSSAUDIT_SANITIZE}
  -fno-sanitize-recover=all -fno-omit-frame-pointer)
add_link_options(-fsanitize=${RSSAUDIT_SANITIZE})
