#include "daemon/daemon_options.h"

#include <fmt/core.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>

#include "core/formats/config_file.h"
#include "core/formats/help_formatter.h"
#include "core/formats/option_checks.h"
#include "core/formats/printable_text.h"
#include "os/path_files.h"
#include "os/unique_fd.h"

namespace rssaudit {
namespace {

// PID_MAX_LIMIT on 64-bit kernels.
constexpr uint64_t kPidMax = 4194304;

// 'all', or a PID as --pid takes one: digits that overflowed stoul threw
// out of the daemon's start, and 4294967297 walked pid 1.
std::string check_walk(const std::string& w) {
  static const CLI::Validator pid = whole_in(1, kPidMax, "a PID");
  if (w == "all" || pid(w).empty()) return "";
  return fmt::format("takes 'all' or PIDs from 1 to {}, got '{}'", kPidMax, w);
}

std::string check_cgroup(const std::string& c) {
  if (c.starts_with('/')) return "";
  return fmt::format("takes a cgroup v2 path starting with '/', got '{}'", c);
}

std::string check_listen(const std::string& s) {
  const size_t colon = s.rfind(':');
  if (s.empty()) return "";
  if (colon == std::string::npos || colon + 1 == s.size() ||
      colon + 6 < s.size() ||
      s.find_first_not_of("0123456789", colon + 1) != std::string::npos ||
      std::stoul(s.substr(colon + 1)) > 65535)
    return fmt::format("expects ADDRESS:PORT with a port up to 65535, got '{}'",
                       s);
  return "";
}

// One definition of every setting, used for flags and config keys alike.
void add_options(CLI::App& app, DaemonOptions& o) {
  app.add_option("--config", o.config,
                 "Config file: 'key = value' lines, keys as these options")
      ->capture_default_str();
  app.add_option("--duration", o.duration_s,
                 "Stop after this many seconds (default: until SIGTERM)")
      ->check(seconds_in(0.001, true));
  app.add_option("--pid", o.pid, "Audit only this process")
      ->check(whole_in(0, kPidMax, "a PID, 0: every process"));
  app.add_option("--poll-ms", o.poll_ms,
                 "Longest poll period of the capture (shorter at high rates)")
      ->capture_default_str()
      ->check(whole_in(1, 1000, "milliseconds"));
  app.add_option("--stream-kib", o.stream_kib,
                 "Kernel memory of the capture's streams, all CPUs together "
                 "(0: 32 MiB, at least 4 Ki records per CPU)")
      ->capture_default_str()
      ->check(whole_in(0, 4194304, "KiB"));
  app.add_option_function<std::string>(
         "--consumer-threads",
         [&o](const std::string& v) {
           o.consumer_threads = v == "1"   ? ConsumerThreads::one
                                : v == "2" ? ConsumerThreads::two
                                           : ConsumerThreads::automatic;
         },
         "Threads that consume the capture: 1 (the loop reads the streams), "
         "2 (a thread of their own does) or auto (2 once draining takes "
         "more than half of a second)")
      ->check(CLI::IsMember({"auto", "1", "2"}))
      ->default_str("auto");
  app.add_option("--summary-interval", o.summary_s,
                 "Log a summary every this many seconds (0: off)")
      ->check(seconds_in(0.1, true));
  app.add_option("--top", o.top,
                 "Processes listed in a summary, largest error first")
      ->capture_default_str()
      ->check(whole_in(0, 100000, "processes"));
  app.add_option("--db", o.db, "History database (SQLite)")
      ->capture_default_str();
  app.add_option("--sample-interval", o.sample_s,
                 "Seconds between /proc samples of audited processes")
      ->capture_default_str()
      ->check(seconds_in(0.01, false));
  app.add_option("--flush-interval", o.flush_s,
                 "Seconds between database transactions")
      ->capture_default_str()
      ->check(seconds_in(0.01, false));
  app.add_option("--comm", o.recorder.comm, "Record only processes named so");
  app.add_option("--cgroup", o.recorder.cgroup,
                 "Record only processes in this cgroup v2 or below it "
                 "(a path as in /proc/PID/cgroup)")
      ->check(CLI::Validator(check_cgroup, "PATH"));
  app.add_option("--min-rss", o.recorder.min_rss_pages,
                 "Record only processes with at least this many pages")
      ->check(whole_in(0, uint64_t{1} << 40, "pages"));
  app.add_option("--min-updates", o.recorder.min_updates,
                 "Record only processes that made at least this many RSS "
                 "counter updates")
      ->check(whole_in(0, uint64_t{1} << 62, "updates"));
  app.add_option("--quiet-interval", o.recorder.quiet_interval_s,
                 "Seconds between /proc samples of a quiet process (no RSS "
                 "update since the capture started: its values hold still); "
                 "0: audit only processes that update")
      ->capture_default_str()
      ->check(seconds_in(0.1, true));
  app.add_option("--model-error-interval", o.recorder.model_error_interval_s,
                 "Seconds one model-error row of a process covers: each "
                 "scheme's largest error over them (0: a row per sample)")
      ->capture_default_str()
      ->check(seconds_in(0.1, true));
  app.add_option("--walk", o.walk,
                 "Page-table walks (smaps_rollup, pagemap): 'all' or PIDs")
      ->delimiter(',')
      ->check(CLI::Validator(check_walk, "all|PID"));
  app.add_option("--walk-interval", o.walk_interval_s,
                 "Minimum seconds between walks of one process")
      ->capture_default_str()
      ->check(seconds_in(0.01, true));
  app.add_option("--walk-min-rss", o.walk_min_rss_pages,
                 "Walk only processes with at least this many pages")
      ->check(whole_in(0, uint64_t{1} << 40, "pages"));
  app.add_option("--retention-days", o.retention_days,
                 "Delete history older than this (0: keep)")
      ->capture_default_str()
      ->check(finite_in(0.001, 36500, true, "days"));
  app.add_option("--retention-mib", o.retention_mib,
                 "Keep the history under this size (0: no limit)")
      ->capture_default_str()
      ->check(finite_in(1, 1e9, true, "MiB"));
  app.add_option("--socket", o.socket,
                 "Control socket for live queries ('none': no socket)")
      ->capture_default_str();
  app.add_option("--socket-group", o.socket_group,
                 "Group allowed to query the control socket");
  app.add_option("--metrics-listen", o.metrics_listen,
                 "Serve OpenMetrics at ADDRESS:PORT (default: off)")
      ->check(CLI::Validator(check_listen, "ADDRESS:PORT"));
  app.add_option("--metrics-group-by", o.metrics_group_by,
                 "Group metrics by comm or cgroup")
      ->capture_default_str()
      ->check(CLI::IsMember({"comm", "cgroup"}));
  app.add_option("--metrics-top", o.metrics_top,
                 "Groups given their own series")
      ->capture_default_str()
      ->check(whole_in(1, 1000, "groups"));
  app.add_option("--metrics-processes", o.metrics_processes,
                 "Processes with the largest drift given their own series "
                 "(a pid label: 0, none, by default)")
      ->capture_default_str()
      ->check(whole_in(0, 1000, "processes"));
  app.add_flag("--metrics-names-under-hidepid", o.metrics_names_under_hidepid,
               "Where /proc hides other users' processes (hidepid), name "
               "processes and groups in the metrics anyway (default: only "
               "an unnamed 'other' group)");
}

// CLI11 takes its argument vector in reverse order.
void parse(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());
  app.parse(args);
}

// The text of the config file at `path`: a regular file (open_input_file:
// a FIFO given as the config is refused instead of freezing the daemon at
// start or on SIGHUP) of at most kMaxConfigBytes (/dev/zero is refused
// anyway, a growing file is not read until memory runs out).
Result<std::string> config_text(const std::string& path) {
  constexpr std::string_view doing = "cannot read config file";
  Result<UniqueFd, Error> fd = open_input_file(path, doing);
  if (!fd) return unexpected(std::move(fd).error());
  const auto fail = [&](std::string why) {
    return unexpected(Error{fmt::format("{}: {}: {}", path, doing, why)});
  };
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd->get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::strerror(errno));
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxConfigBytes)
      return fail(fmt::format("larger than {} bytes", kMaxConfigBytes));
  }
}

// The entries of the config file at `path`; none when it is missing and
// need not exist.
Result<std::vector<ConfigEntry>> read_config(const std::string& path,
                                             bool must_exist) {
  if (!must_exist && ::access(path.c_str(), F_OK) != 0 && errno == ENOENT)
    return std::vector<ConfigEntry>{};
  auto text = config_text(path);
  if (!text) return unexpected(text.error());
  auto parsed = parse_config(*text);
  if (!parsed)
    return unexpected(Error{fmt::format("{}:{}: {}", path, parsed.error().line,
                                        parsed.error().message)});
  return std::move(parsed).value();
}

// Checks one entry alone, so an error can name its line and key.
Result<void> check_entry(const std::string& path, const ConfigEntry& e) {
  const auto fail = [](std::string message) {
    return unexpected(Error{std::move(message)});
  };
  // Flags that act instead of setting anything: CLI11 would throw its
  // request to print the help ("This should be caught in your main
  // function") as if it were an error of the file.
  if (e.key == "config" || e.key == "help" || e.key == "version")
    return fail(fmt::format("{}:{}: key '{}' cannot be set in a config file",
                            path, e.line, e.key));
  DaemonOptions scratch;
  CLI::App app;
  add_options(app, scratch);
  if (app.get_option_no_throw("--" + e.key) == nullptr)
    return fail(fmt::format("{}:{}: unknown key '{}'", path, e.line, e.key));
  try {
    parse(app, {"--" + e.key + "=" + e.value});
  } catch (const CLI::ParseError& err) {
    return fail(
        fmt::format("{}:{}: key '{}': {}", path, e.line, e.key, err.what()));
  }
  return {};
}

}  // namespace

WalkPolicy walk_policy(const DaemonOptions& o) {
  WalkPolicy p;
  for (const std::string& w : o.walk) {
    if (w == "all")
      p.all = true;
    else
      p.pids.insert(static_cast<uint32_t>(std::stoul(w)));
  }
  p.min_interval_ns = static_cast<uint64_t>(o.walk_interval_s * 1e9);
  p.min_rss_pages = o.walk_min_rss_pages;
  return p;
}

RecorderOptions recorder_options(const DaemonOptions& o) {
  RecorderOptions r = o.recorder;
  r.pid = o.pid;
  return r;
}

Result<DaemonOptions, OptionsError> load_daemon_options(
    const std::vector<std::string>& args) {
  // A message echoes what it was given: one line, no control reaching the
  // terminal, whatever bytes an argument or the file's path hold.
  const auto fail = [](std::string_view message, int exit_code) {
    return unexpected(OptionsError{printable(message), exit_code});
  };
  DaemonOptions flags;
  CLI::App app{"rssauditd: audits every RSS counter update of this host"};
  use_help_formatter(app);
  app.set_version_flag("--version", "rssauditd " RSSAUDIT_VERSION);
  add_options(app, flags);
  try {
    parse(app, args);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0)  // the caller says it, in one line
      return fail(e.what(), 2);
    app.exit(e);  // --help, --version
    return unexpected(OptionsError{"", 0});
  }
  std::set<std::string> given;
  for (const CLI::Option* opt : app.get_options())
    if (opt->count() > 0) given.insert(opt->get_name(false, true));

  // The default file is optional even when named (the unit names it), so
  // a fresh install runs on defaults; another path must exist.
  const bool must_exist =
      given.count("--config") > 0 && flags.config != kDefaultConfigPath;
  Result<std::vector<ConfigEntry>> file = read_config(flags.config, must_exist);
  if (!file) return fail(file.error().message, 1);
  std::vector<std::string> merged;
  for (const ConfigEntry& e : *file) {
    if (Result<void> checked = check_entry(flags.config, e); !checked)
      return fail(checked.error().message, 1);
    if (!given.count("--" + e.key))
      merged.push_back("--" + e.key + "=" + e.value);
  }
  merged.insert(merged.end(), args.begin(), args.end());
  DaemonOptions result;
  CLI::App final_app;
  add_options(final_app, result);
  try {
    parse(final_app, merged);
  } catch (const CLI::ParseError& e) {
    return fail(e.what(), 2);
  }
  return result;
}

std::vector<std::string> keep_restart_only(const DaemonOptions& running,
                                           DaemonOptions& loaded) {
  std::vector<std::string> changed;
  auto keep = [&](auto DaemonOptions::*field, const char* key) {
    if (running.*field == loaded.*field) return;
    changed.emplace_back(key);
    loaded.*field = running.*field;
  };
  keep(&DaemonOptions::db, "db");
  keep(&DaemonOptions::pid, "pid");
  keep(&DaemonOptions::poll_ms, "poll-ms");
  keep(&DaemonOptions::stream_kib, "stream-kib");
  keep(&DaemonOptions::consumer_threads, "consumer-threads");
  keep(&DaemonOptions::duration_s, "duration");
  keep(&DaemonOptions::socket, "socket");
  keep(&DaemonOptions::socket_group, "socket-group");
  keep(&DaemonOptions::metrics_listen, "metrics-listen");
  return changed;
}

}  // namespace rssaudit
