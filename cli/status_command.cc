#include "cli/status_command.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/daemon_client.h"
#include "cli/errors.h"
#include "cli/host_rss.h"
#include "cli/live_queries.h"
#include "cli/query_support.h"
#include "cli/time_args.h"
#include "cli/units.h"
#include "core/formats/live_view_json.h"

namespace rssaudit::cli {
namespace {

struct StatusOptions {
  std::string socket;
  std::string db = kDefaultDb;  // read when no daemon answers
  bool json = false;
  std::string gap;  // --gap: a shortfall to explain, e.g. "1.4G"
};

// How much of a gap between what the kernel's readers add up to and the
// memory in use RSS drift can account for: what it accounts for now (the
// host's drift), and at most (its worst case).
struct GapShare {
  int64_t gap_pages = 0;
  int64_t now_pages = 0;    // |host drift|
  int64_t worst_pages = 0;  // 0: no bound (before 6.2)
};

GapShare gap_share(const HostRss& h, int64_t gap_bytes) {
  GapShare g;
  g.gap_pages = gap_bytes / h.page_size;
  g.now_pages = std::llabs(h.kernel_pages - h.exact_pages);
  g.worst_pages = h.worst_case_pages.value_or(0);
  return g;
}

std::string share_text(int64_t part, int64_t whole) {
  if (whole <= 0) return "";
  return fmt::format(" ({:.1f}% of the gap)",
                     100.0 * double(std::min(part, whole)) / double(whole));
}

void print_gap(const HostRss& h, const GapShare& g) {
  auto size = [&](int64_t pages) {
    return format_size(pages, h.page_size, SizeUnit::kHuman);
  };
  fmt::print("a gap of {} between the readers' RSS and memory in use:\n",
             size(g.gap_pages));
  fmt::print("  drift accounts for {} of it now{}\n", size(g.now_pages),
             share_text(g.now_pages, g.gap_pages));
  if (!h.worst_case_pages) {
    fmt::print(
        "  at most: no bound on this kernel (per-task caches hide up to 66\n"
        "  faults per thread, with no bound in time: rssaudit check "
        "--threads T)\n");
    return;
  }
  fmt::print(
      "  and at most {}{},\n  every audited process off by its RSS bound\n",
      size(g.worst_pages), share_text(g.worst_pages, g.gap_pages));
  if (g.worst_pages < g.gap_pages)
    fmt::print(
        "  the rest, {}, is not RSS counter drift (page cache, kernel\n"
        "  memory, processes not audited)\n",
        size(g.gap_pages - g.worst_pages));
}

std::string duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto total = static_cast<int64_t>(s);
  const int64_t d = total / 86400, h = total / 3600 % 24, m = total / 60 % 60,
                sec = total % 60;
  if (d > 0) return fmt::format("{}d {:02}h {:02}m", d, h, m);
  if (h > 0) return fmt::format("{}h {:02}m {:02}s", h, m, sec);
  return fmt::format("{}m {:02}s", m, sec);
}

std::string bytes_text(uint64_t bytes) {
  return format_size(static_cast<int64_t>(bytes), 1, SizeUnit::kHuman);
}

// The history's size and cap, then how fast it grows: two lines for the
// caller to indent.
std::array<std::string, 2> database_lines(const DaemonHealth& h) {
  std::array<std::string, 2> out;
  out[0] = fmt::format("{} on disk, {} of data", bytes_text(h.store_file_bytes),
                       bytes_text(h.store_used_bytes));
  out[0] += h.store_cap_bytes > 0
                ? fmt::format(" (cap {})", bytes_text(h.store_cap_bytes))
                : " (no cap)";
  if (!h.store_growth_bytes_per_s) {
    out[1] = "growth not measured yet (a minute of flushes)";
    return out;
  }
  const double per_day = *h.store_growth_bytes_per_s * 86400;
  out[1] = fmt::format("growing {}/day over the last hour",
                       bytes_text(uint64_t(per_day)));
  if (h.store_cap_bytes > 0 && per_day > 0)
    out[1] += fmt::format(" (the cap holds {:.1f} days)",
                          double(h.store_cap_bytes) / per_day);
  return out;
}

// No daemon answers: what its database says of the last run, if there is
// one, before the failure is thrown on.
void print_last_run(const StatusOptions& o) {
  std::error_code ec;
  if (!std::filesystem::exists(o.db, ec)) return;
  Result<std::unique_ptr<StoreReader>, StoreError> reader =
      StoreReader::open_read_only(o.db);
  Result<std::vector<RunSummary>, StoreError> listed =
      reader ? (*reader)->list_runs()
             : Result<std::vector<RunSummary>, StoreError>(
                   unexpected(reader.error()));
  if (!listed) {
    fmt::print(stderr, "rssaudit: {}\n", listed.error().message);
    return;
  }
  const std::vector<RunSummary>& runs = *listed;
  if (runs.empty()) return;
  const RunSummary& r = runs.back();
  if (o.json) {
    fmt::print("{}\n",
               json_text({{"running", false},
                          {"database", o.db},
                          {"last_run",
                           {{"id", r.id},
                            {"host", r.info.host},
                            {"started_ns", r.info.started_ns},
                            {"state", run_state_name(r.state)},
                            {"stopped_ns", json_or_null(r.stopped_ns)}}}}));
    return;
  }
  fmt::print("{}: last run {} on {}, started {}\n  {}\n", o.db, r.id,
             printable(r.info.host), local_time_text(r.info.started_ns),
             r.state == RunState::kRunning
                 ? std::string("running, but its control socket did not "
                               "answer")
                 : run_stopped_text(r.state, r.stopped_ns));
  if (r.state == RunState::kDied) fmt::print("  {}\n", kRunDiedNote);
}

void run(const StatusOptions& o) {
  nlohmann::json response;
  try {
    response = ask_daemon(o.socket, Request{HealthRequest{}, {}});
  } catch (const DaemonNotRunning&) {
    print_last_run(o);
    throw;
  }
  const DaemonHealth h = health_of(response);
  const HostRss host_total = host_rss(h);
  std::optional<GapShare> gap;
  if (!o.gap.empty()) {
    const std::optional<int64_t> bytes = parse_bytes(o.gap);
    if (!bytes)
      throw UsageError(fmt::format(
          "--gap takes a size such as 1.4G or 512MiB, got '{}'", o.gap));
    gap = gap_share(host_total, *bytes);
  }
  if (o.json) {
    nlohmann::json j = health_to_json(h);
    j["socket"] = o.socket;
    if (gap)
      j["gap"] = {
          {"gap_pages", gap->gap_pages},
          {"drift_now_pages", gap->now_pages},
          {"drift_at_most_pages", json_or_null(host_total.worst_case_pages)}};
    fmt::print("{}\n", json_text(j));
    return;
  }
  fmt::print("rssauditd on {} (kernel {}), up {}\n", printable(h.host),
             printable(h.kernel_release), duration_text(h.uptime_s));
  fmt::print("  as of    {}\n", local_time_text(h.time_ns));
  fmt::print("  cpus {}, rss_stat batch {}, page size {} B\n", h.nr_cpus,
             h.batch, h.page_size);
  fmt::print("  events   {} ({:.1f}/s), behind by {:.3f} s{}\n", h.events,
             h.events_per_s, h.lag_s,
             h.bpf_ns_per_event
                 ? fmt::format(", BPF {:.0f} ns/event", *h.bpf_ns_per_event)
                 : "");
  fmt::print("  loop     answers within {:.3f} s (the longest wait in the last "
             "minute)\n",
             h.loop_delay_s);
  fmt::print(
      "  losses   {} records lost in capture at {} places, {} ambiguous\n",
      h.drops.total(), h.losses, h.ambiguous);
  if (h.drops.total())
    fmt::print(
        "           by cause: {} stream full, {} unpublished, {} unexpanded, "
        "{} missed runs\n",
        h.drops.stream_full, h.drops.unpublished, h.drops.unexpanded,
        h.drops.missed_runs);
  fmt::print("  fidelity {}\n",
             fidelity_text(h.fidelity_matched, h.fidelity_checked));
  fmt::print(
      "  live mms {}, and {} quiet processes (no update yet: "
      "audited from /proc)\n",
      h.live_mms, h.quiet_processes);
  fmt::print(
      "  drift    unknown in samples: {} moving (the counters moved while\n"
      "           /proc was read), {} exiting, {} beyond the kernel's bound\n",
      h.drift_unknown_moving, h.drift_unknown_exiting, h.drift_beyond_bound);
  if (h.drift_beyond_bound)
    fmt::print(
        "           ANOMALY: no drift of one moment can be beyond the bound\n"
        "           (a kernel bug?): the anomalies table has the figures\n");
  fmt::print("  store    {}\n", h.store_error.empty()
                                    ? "writing"
                                    : "FAILING: " + printable(h.store_error));
  if (h.store_dropped_rows > 0)
    fmt::print(
        "           {} rows DROPPED (the oldest, while flushes failed)\n",
        h.store_dropped_rows);
  const auto database = database_lines(h);
  fmt::print("  database {}\n           {}\n", database[0], database[1]);
  if (h.sampling_gaps > 0)
    fmt::print(
        "  gaps     {} sampling gaps (the daemon was stopped or stalled)\n",
        h.sampling_gaps);
  const auto host = host_lines(host_total, SizeUnit::kHuman);
  fmt::print("  host     {}\n           {}\n", host[0], host[1]);
  if (gap) print_gap(host_total, *gap);
}

}  // namespace

void register_status(CLI::App& app) {
  auto o = std::make_shared<StatusOptions>();
  CLI::App* sub = app.add_subcommand(
      "status", "The running rssauditd's health: events, losses, fidelity");
  add_socket_option(*sub, o->socket);
  sub->add_option("--db", o->db,
                  "History database, read when no rssauditd answers")
      ->capture_default_str();
  sub->add_flag("--json", o->json, "Print JSON");
  sub->add_option("--gap", o->gap,
                  "How much of this gap (e.g. 1.4G) between the processes' "
                  "RSS as readers see it and memory in use drift can explain");
  sub->callback([o] { run(*o); });
}

}  // namespace rssaudit::cli
