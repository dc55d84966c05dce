// Whether the running kernel may preempt a task in kernel code, which
// decides if an update whose add took no lock can have been moved to
// another CPU before its record (audit/delta_reconstructor.h).
#pragma once

#include <string>
#include <string_view>

namespace rssaudit {

struct PreemptionModel {
  // "none", "voluntary", "full", "lazy"; empty when unknown.
  std::string mode;
  std::string source;  // where it was read, for a human
};

// From /sys/kernel/debug/sched/preempt (PREEMPT_DYNAMIC, debugfs mounted),
// else from the kernel's configuration (/proc/config.gz, or
// /boot/config-RELEASE) and the preempt= boot option.
PreemptionModel read_preemption_model();

// "none voluntary (full) lazy": the mode in parentheses is in force.
std::string mode_from_debugfs(std::string_view line);
// The mode a kernel built with `config` (a .config's text) boots into
// with `cmdline` (/proc/cmdline): preempt= chooses where PREEMPT_DYNAMIC
// allows it (kernel/sched/core.c), else the configured model.
std::string mode_from_config(std::string_view config, std::string_view cmdline);

}  // namespace rssaudit
