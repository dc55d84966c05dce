#include "cli/commands.h"

#include "cli/check_command.h"
#include "cli/export_command.h"
#include "cli/history_command.h"
#include "cli/record_command.h"
#include "cli/show_command.h"
#include "cli/simulate_command.h"
#include "cli/status_command.h"
#include "cli/top_command.h"
#include "cli/whatif_command.h"
#include "core/formats/help_formatter.h"

namespace rssaudit::cli {

void register_commands(CLI::App& app) {
  use_help_formatter(app);
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
}

}  // namespace rssaudit::cli
