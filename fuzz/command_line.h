// What the targets of a whole command line share (daemon_options_fuzz,
// cli_args_fuzz): the input's NUL-separated parts, and a libFuzzer
// initializer that sends stdout (--help and --version print there) to
// /dev/null rather than the fuzzer's log. Include it in one file per
// target: it defines LLVMFuzzerInitialize.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace rssaudit::fuzz {

// The parts of `input` between NUL bytes, at most `max`: the last part
// stops at the next NUL.
inline std::vector<std::string_view> nul_separated(std::string_view input,
                                                   size_t max) {
  std::vector<std::string_view> parts;
  for (size_t start = 0; parts.size() < max;) {
    const size_t nul = input.find('\0', start);
    parts.push_back(input.substr(start, nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  return parts;
}

}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (!std::freopen("/dev/null", "w", stdout)) std::abort();
  return 0;
}
