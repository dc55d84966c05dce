#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <exception>

#include "cli/commands.h"
#include "cli/errors.h"
#include "core/formats/printable_text.h"

int main(int argc, char** argv) {
  using namespace rssaudit::cli;
  CLI::App app{kProgramDescription};
  register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      app.exit(e);
      return kExitOk;
    }
    // One line with the program's name, as every other error has (CLI11
    // prints two, "ERROR: " first); an argument it echoes with a newline
    // or a control in it is shown, not obeyed, by the terminal.
    fmt::print(stderr, "rssaudit: {} (rssaudit --help shows the options)\n",
               rssaudit::printable(e.what()));
    return kExitUsage;
  } catch (const UsageError& e) {
    fmt::print(stderr, "rssaudit: {}\n", rssaudit::printable(e.what()));
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "rssaudit: {}\n", e.what());
    return kExitFailure;
  }
  return kExitOk;
}
