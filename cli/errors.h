// Exit codes shared by every subcommand (README.md): 0 ok, 1 failure,
// 2 usage error. Subcommands throw; main() maps the exception to the code.
#pragma once

#include <stdexcept>

namespace rssaudit::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace rssaudit::cli
