// Runs a command line through the shell and captures what it printed, for
// tests of the command-line tools.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace rssaudit::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

inline CommandResult run_command(const std::string& command) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto out = dir / ("rssaudit-test-" + std::to_string(getpid()) + ".out");
  const auto err = dir / ("rssaudit-test-" + std::to_string(getpid()) + ".err");
  const int status = std::system(
      (command + " >" + out.string() + " 2>" + err.string()).c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

// A shell fragment that waits, up to 60 s, until `log` holds `text` or the
// process `pid` has gone: in a TCG guest a daemon takes seconds to start,
// and a workload begun after a fixed sleep would escape its capture.
inline std::string shell_wait_for(const std::string& log,
                                  const std::string& text,
                                  const std::string& pid = "$d") {
  return "for i in $(seq 600); do grep -q '" + text + "' " + log +
         " && break; kill -0 " + pid +
         " 2>/dev/null || break; sleep 0.1; "
         "done; ";
}

// A shell fragment that starts, in the background as $w, a python3 that
// touches `mib` MiB, creates `touched`, and holds its memory until
// `released` exists (60 s at most); then waits until `touched` exists: in
// a TCG guest with 64 vCPUs python3 takes seconds to start and the daemon
// names it seconds later still, so queries poll instead of sleeping.
inline std::string shell_hold_python(int mib, const std::string& touched,
                                     const std::string& released) {
  return "python3 -c 'import os, time; b = bytearray(" + std::to_string(mib) +
         " << 20); b[::4096] = b\"x\" * " + std::to_string(mib * 256) +
         "; open(\"" + touched + "\", \"w\").close(); any(os.path.exists(\"" +
         released +
         "\") or time.sleep(0.05) for _ in range(1200))' & w=$!; "
         "for i in $(seq 600); do [ -e " +
         touched + " ] && break; sleep 0.1; done; ";
}

}  // namespace rssaudit::testing
