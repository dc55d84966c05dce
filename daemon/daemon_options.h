// rssauditd's settings: every one is a long flag and the same key in the
// config file (core/formats/config_file.h). Flags win over the file. SIGHUP
// loads the file again with the original flags; settings that only take effect
// at start are kept by keep_restart_only().
#pragma once

#include <string>
#include <vector>

#include "capture/consumer_threads.h"
#include "core/formats/control_protocol.h"
#include "core/result.h"
#include "daemon/history_recorder.h"
#include "sampler/sampler.h"

namespace rssaudit {

inline constexpr const char* kDefaultConfigPath =
    "/etc/rssaudit/rssauditd.conf";

struct DaemonOptions {
  std::string config = kDefaultConfigPath;
  double duration_s = 0;  // 0: until SIGTERM/SIGINT
  uint32_t pid = 0;
  unsigned poll_ms = 50;
  // Memory of the capture's per-CPU streams, shared out between the
  // possible CPUs (CaptureOptions::stream_bytes); 0: automatic.
  uint64_t stream_kib = 0;
  // Who reads the streams (capture/live_audit.h ConsumerThreads).
  ConsumerThreads consumer_threads = ConsumerThreads::automatic;
  double summary_s = 0;
  size_t top = 20;
  std::string db = "rssaudit.db";
  double sample_s = 1;
  double flush_s = 5;
  RecorderOptions recorder;
  std::vector<std::string> walk;  // "all" or pids
  double walk_interval_s = 60;
  uint64_t walk_min_rss_pages = 0;
  double retention_days = 30;
  // The history's default cap: ~2 weeks of 1 000 busy processes (measured,
  // docs/rssauditd.md), so no host's disk fills by default.
  double retention_mib = 1024;
  std::string socket = kDefaultSocketPath;  // "" or "none": no socket
  std::string socket_group;                 // "" keeps the daemon's group
  std::string metrics_listen;               // "ADDR:PORT"; "": off
  std::string metrics_group_by = "comm";    // or "cgroup"
  size_t metrics_top = 20;
  size_t metrics_processes = 0;  // per-process series; 0: none
  // Where /proc hides processes from other users (hidepid), the metrics,
  // which anyone who reaches the port reads, name none unless this is set.
  bool metrics_names_under_hidepid = false;

  bool operator==(const DaemonOptions&) const = default;
};

WalkPolicy walk_policy(const DaemonOptions& o);
// The recorder's options, with the process --pid names.
RecorderOptions recorder_options(const DaemonOptions& o);

// Why rssauditd must not start with the options it was given.
struct OptionsError {
  std::string message;  // names the flag, or the file, line and key
  int exit_code = 1;    // 2: bad flag; 1: bad or unreadable config; 0 (and
                        // no message): --help was printed
};

// Parses the command line (without argv[0]) and the config file it names;
// the default one is read when present.
Result<DaemonOptions, OptionsError> load_daemon_options(
    const std::vector<std::string>& args);

// Sets back in `loaded` the settings that only take effect at start
// (database, capture target, socket, endpoint) to their `running` values;
// returns the names of those that differed.
std::vector<std::string> keep_restart_only(const DaemonOptions& running,
                                           DaemonOptions& loaded);

}  // namespace rssaudit
