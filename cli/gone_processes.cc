#include "cli/gone_processes.h"

#include <sys/utsname.h>

#include <set>

#include "cli/query_support.h"
#include "core/procfs/proc_stat.h"
#include "sampler/proc_reader.h"

namespace rssaudit::cli {
namespace {

// Whether the process `who` still runs here: its pid names it (same start
// time) and it is no zombie whose threads have all exited.
bool still_runs(const ProcessIdentity& who, const std::string& proc_root,
                ProcReader& reader) {
  const ProcDir dir = ProcDir::open(proc_root, who.pid);
  if (dir.status() != ReadStatus::kOk)
    return dir.status() != ReadStatus::kVanished;
  const auto text = reader.read(dir, "stat");
  if (!text) return !text.error().vanished();
  const auto stat = parse_proc_stat(*text);
  if (!stat) return true;  // unreadable is not gone
  if (stat->start_time != who.start_ticks) return false;
  const bool zombie = stat->state == 'Z' || stat->state == 'X';
  return !(zombie && stat->num_threads <= 1);
}

}  // namespace

size_t mark_gone(std::vector<ProcessWindow>& windows, StoreReader& reader,
                 const std::string& this_host, const std::string& proc_root) {
  std::set<int64_t> here;  // runs still running on this host
  for (const RunSummary& r : checked(reader.list_runs()))
    if (r.state == RunState::kRunning && r.info.host == this_host)
      here.insert(r.id);
  size_t gone = 0;
  ProcReader proc;
  for (ProcessWindow& w : windows) {
    if (w.process.exit_ns || !here.contains(w.process.run_id)) continue;
    // Unknown start time (a process named only at its exit): not checked.
    if (w.process.identity.start_ticks == 0) continue;
    w.gone = !still_runs(w.process.identity, proc_root, proc);
    gone += w.gone;
  }
  return gone;
}

std::string this_host_name() {
  utsname u{};
  uname(&u);
  return u.nodename;
}

}  // namespace rssaudit::cli
