#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <exception>

#include "cli/check_command.h"
#include "cli/errors.h"
#include "cli/export_command.h"
#include "cli/history_command.h"
#include "cli/record_command.h"
#include "cli/show_command.h"
#include "cli/simulate_command.h"
#include "cli/status_command.h"
#include "cli/top_command.h"
#include "cli/whatif_command.h"
#include "core/formats/help_formatter.h"
#include "core/formats/printable_text.h"

int main(int argc, char** argv) {
  using namespace rssaudit::cli;
  CLI::App app{
      "rssaudit: how wrong the kernel's RSS counters are, and what "
      "each counting scheme would report"};
  rssaudit::use_help_formatter(app);
  app.set_version_flag("--version", "rssaudit " RSSAUDIT_VERSION);
  app.require_subcommand(1);
  register_simulate(app);
  register_record(app);
  register_replay(app);
  register_top(app);
  register_show(app);
  register_history(app);
  register_export(app);
  register_status(app);
  register_whatif(app);
  register_check(app);
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
