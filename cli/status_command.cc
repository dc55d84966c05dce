#include "cli/status_command.h"

#include <fmt/core.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/daemon_client.h"
#include "cli/query_support.h"
#include "cli/time_args.h"
#include "cli/units.h"
#include "core/formats/live_view_json.h"

namespace rssaudit::cli {
namespace {

struct StatusOptions {
  std::string socket;
  bool json = false;
};

std::string duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto total = static_cast<int64_t>(s);
  const int64_t d = total / 86400, h = total / 3600 % 24, m = total / 60 % 60,
                sec = total % 60;
  if (d > 0) return fmt::format("{}d {:02}h {:02}m", d, h, m);
  if (h > 0) return fmt::format("{}h {:02}m {:02}s", h, m, sec);
  return fmt::format("{}m {:02}s", m, sec);
}

void run(const StatusOptions& o) {
  const nlohmann::json response =
      ask_daemon(o.socket, Request{HealthRequest{}, {}});
  const DaemonHealth h = health_of(response);
  if (o.json) {
    nlohmann::json j = health_to_json(h);
    j["socket"] = o.socket;
    fmt::print("{}\n",
               j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  fmt::print("rssauditd on {} (kernel {}), up {}\n", printable(h.host),
             printable(h.kernel_release), duration_text(h.uptime_s));
  fmt::print("  as of    {}\n", local_time_text(h.time_ns));
  fmt::print("  cpus {}, rss_stat batch {}, page size {} B\n", h.nr_cpus,
             h.batch, h.page_size);
  fmt::print("  events   {} ({:.1f}/s), lag {:.3f} s{}\n", h.events,
             h.events_per_s, h.lag_s,
             h.bpf_ns_per_event
                 ? fmt::format(", BPF {:.0f} ns/event", *h.bpf_ns_per_event)
                 : "");
  fmt::print("  losses   {} lost in capture (stream full), {} ambiguous\n",
             h.drops, h.ambiguous);
  fmt::print("  fidelity {}\n",
             fidelity_text(h.fidelity_matched, h.fidelity_checked));
  fmt::print(
      "  live mms {}, and {} quiet processes (no update yet: "
      "audited from /proc)\n",
      h.live_mms, h.quiet_processes);
  fmt::print("  store    {}\n", h.store_error.empty()
                                    ? "writing"
                                    : "FAILING: " + printable(h.store_error));
}

}  // namespace

void register_status(CLI::App& app) {
  auto o = std::make_shared<StatusOptions>();
  CLI::App* sub = app.add_subcommand(
      "status", "The running rssauditd's health: events, losses, fidelity");
  add_socket_option(*sub, o->socket);
  sub->add_flag("--json", o->json, "Print JSON");
  sub->callback([o] { run(*o); });
}

}  // namespace rssaudit::cli
