#include "cli/simulate_command.h"

#include <fmt/core.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli/errors.h"
#include "cli/query_support.h"
#include "cli/scheme_report.h"
#include "cli/units.h"
#include "core/schemes/hpcc_tree.h"
#include "core/schemes/reader_tolerance.h"
#include "core/schemes/scheme_set.h"
#include "core/schemes/topology.h"
#include "core/schemes/upstream_percpu.h"

namespace rssaudit::cli {
namespace {

struct SimulateOptions {
  SyntheticRun run;
  UnitOptions units;
  bool json = false;
  bool table = false;
  bool tolerance = false;
};

// Per scheme, how far each reader's RSS can be off for a process of
// --threads threads on --cpus CPUs: the question of a test author whose
// maxrss check runs on other machines than this one.
void print_tolerance(const SimulateOptions& o) {
  if (o.run.cpus == -1)
    throw UsageError("simulate --tolerance: --cpus N is required");
  if (o.run.threads == 0)
    throw UsageError("simulate --tolerance: --threads T (>= 1) is required");
  const Topology t = model_topology(o.run.model, o.run.cpus);
  const SizeUnit unit = o.units.unit();
  if (o.json) {
    nlohmann::json schemes = nlohmann::json::array();
    for (std::string_view name : SchemeSet::kNames) {
      nlohmann::json readers = nlohmann::json::array();
      for (const ReaderTolerance& r : reader_tolerance(name, t, o.run.threads))
        readers.push_back(tolerance_json(r, kPageSize));
      schemes.push_back({{"name", name}, {"readers", readers}});
    }
    fmt::print("{}\n",
               json_text(nlohmann::json{{"cpus", o.run.cpus},
                                        {"threads", o.run.threads},
                                        {"page_size", kPageSize},
                                        {"upstream_batch", t.upstream_batch},
                                        {"hpcc_batch", t.hpcc_batch},
                                        {"hpcc_shape", hpcc_shape(t)},
                                        {"schemes", schemes}}));
    return;
  }
  fmt::print(
      "How far each reader's RSS can be from the truth for a process of {} "
      "thread{}\non {} CPUs (percpu_counter batch {}, HPCC batch {} shape "
      "{}):\n",
      o.run.threads, o.run.threads == 1 ? "" : "s", o.run.cpus,
      t.upstream_batch, t.hpcc_batch, shape_text(hpcc_shape(t)));
  constexpr std::string_view kRow = "{:<13}{:>12}{:>12}{:>12}{:>12}{}\n";
  fmt::print(kRow, "scheme", "stat", "VmHWM", "ru_maxrss", "status", "");
  for (std::string_view name : SchemeSet::kNames) {
    const auto readers = reader_tolerance(name, t, o.run.threads);
    std::array<std::string, 4> cells;
    for (size_t i = 0; i < readers.size() && i < cells.size(); ++i)
      cells[i] = readers[i].rss_pages == 0
                     ? "exact"
                     : format_size(readers[i].rss_pages, kPageSize, unit);
    fmt::print(kRow, name, cells[0], cells[1], cells[2], cells[3],
               readers.front().bounded_in_time ? "" : " *");
  }
  fmt::print(
      "upstream is the kernel's scheme since 6.2, per_task before it; the "
      "others are\nproposals (docs/counters.md). * while the threads "
      "neither fault nor exit:\nno bound in time. RSS counts file, anon and "
      "shmem; a file fault maps up to {}\npages.\n",
      kFaultAroundPages);
}

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
  if (o.json) fmt::print("{}\n", json_text(rows));
}

void run(const SimulateOptions& o) {
  if (o.table) return print_table(o);
  if (o.tolerance) return print_tolerance(o);
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
  CLI::Option* table =
      sub->add_flag("--table", o->table,
                    "Sweep CPU counts 1..65536: HPCC shape and both bounds");
  sub->add_flag("--tolerance", o->tolerance,
                "How far each reader (stat, VmHWM, ru_maxrss, status) can "
                "be off under each scheme, for --threads T on --cpus N")
      ->excludes(table);
  sub->callback([o] { run(*o); });
}

}  // namespace rssaudit::cli
