// rssauditd's event loop: captures every RSS counter update and audits it
// per mm, samples /proc, writes the history, answers live queries, and
// reloads its configuration on SIGHUP.
#pragma once

#include <string>
#include <vector>

namespace rssaudit {

// Runs the daemon with these command-line arguments (without argv[0]);
// returns the process exit code: 0 after a clean stop, 1 on a failure to
// start, 2 on a usage error.
int run_daemon(const std::vector<std::string>& args);

}  // namespace rssaudit
