#include "cli/simulate_command.h"

#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli/scheme_report.h"
#include "cli/units.h"
#include "core/schemes/hpcc_tree.h"
#include "core/schemes/topology.h"
#include "core/schemes/upstream_percpu.h"

namespace rssaudit::cli {
namespace {

struct SimulateOptions {
  SyntheticRun run;
  UnitOptions units;
  bool json = false;
  bool table = false;
};

// Bounds of HPCC and upstream for CPU counts from 1 to 65536.
void print_table(const SimulateOptions& o) {
  std::vector<int64_t> counts;
  for (int64_t c = 1; c <= kMaxCpus; c *= 2) {
    counts.push_back(c);
    if (c == 256) counts.push_back(384);
  }
  nlohmann::json rows = nlohmann::json::array();
  if (!o.json) {
    fmt::print("{:>6} {:<12}{:>10}{:>10}{:>8}{:>13}{:>13}\n", "cpus",
               "hpcc shape", "hpcc pg", "hpcc MiB", "batch", "upstream pg",
               "upstream MiB");
  }
  ModelOptions per_row = o.run.model;
  per_row.shape.clear();  // the table shows the shape each size would get
  for (int64_t c : counts) {
    const Topology t = model_topology(per_row, c);
    const int64_t hpcc = hpcc_bound(t);
    const int64_t upstream = *UpstreamPercpu(t).bound(kAnonPages);
    if (o.json) {
      rows.push_back({{"cpus", c},
                      {"hpcc_shape", hpcc_shape(t)},
                      {"hpcc_batch", t.hpcc_batch},
                      {"hpcc_bound_pages", hpcc},
                      {"upstream_batch", t.upstream_batch},
                      {"upstream_bound_pages", upstream}});
    } else {
      fmt::print("{:>6} {:<12}{:>10}{:>10}{:>8}{:>13}{:>13}\n", c,
                 shape_text(hpcc_shape(t)), hpcc, pages_as_mib(hpcc),
                 t.upstream_batch, upstream, pages_as_mib(upstream));
    }
  }
  if (o.json) fmt::print("{}\n", rows.dump(2));
}

void run(const SimulateOptions& o) {
  if (o.table) return print_table(o);
  run_synthetic(o.run, "simulate", o.json, o.units.unit());
}

}  // namespace

void register_simulate(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  SyntheticRun& r = o->run;
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "Run a synthetic workload through every counting scheme on a "
      "simulated CPU topology");
  sub->add_option("--cpus", r.cpus, "Number of CPUs, 1..65536");
  add_model_options(*sub, r.model);
  sub->add_option("--upstream-batch", r.model.upstream_batch,
                  "percpu_counter batch (default max(32, 2*CPUs))");
  add_synthetic_options(*sub, r);
  sub->add_flag("--json", o->json, "Print JSON");
  add_unit_options(*sub, o->units);
  sub->add_flag("--table", o->table,
                "Sweep CPU counts 1..65536: HPCC shape and both bounds");
  sub->callback([o] { run(*o); });
}

}  // namespace rssaudit::cli
