// rssaudit's command line as a whole (cli/commands.h), parsed as main()
// parses it but with no subcommand run: any argument vector is taken, or
// refused with a CLI::ParseError, the one error main() reports as a usage
// error; never another exception, a crash or undefined behaviour in a
// validator (a PID list's std::stoul threw out of rssauditd's start).
//
// Input: the arguments, separated by NUL bytes.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "fuzz/command_line.h"
#include "fuzz/fuzz_check.h"

namespace rssaudit::fuzz {
namespace {

constexpr size_t kMaxArgs = 32;

// Thrown by the program's parse-complete callback, which CLI11 runs after
// every option is parsed and checked and before any subcommand's: nothing
// runs, and what the subcommands' callbacks hold stays alive.
struct ParsedOnly {};

void check(std::string_view input) {
  std::vector<std::string> args;
  for (const std::string_view part : nul_separated(input, kMaxArgs))
    args.emplace_back(part);
  std::string what = "args";
  for (const std::string& a : args) what += fmt::format(" '{}'", shown(a));

  CLI::App app{cli::kProgramDescription};
  cli::register_commands(app);
  app.parse_complete_callback([] { throw ParsedOnly{}; });
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const ParsedOnly&) {
    // taken
  } catch (const CLI::ParseError& e) {
    FUZZ_CHECK(e.get_exit_code() == 0 || *e.what() != '\0', what);
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, fmt::format("{}: {}", shown(e.what()), what));
  }
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rssaudit::fuzz::check(rssaudit::fuzz::as_text(data, size));
  return 0;
}
