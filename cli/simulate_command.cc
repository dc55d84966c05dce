#include "cli/simulate_command.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/errors.h"
#include "cli/progress.h"
#include "cli/units.h"
#include "core/hpcc_tree.h"
#include "core/simulation.h"
#include "core/topology.h"
#include "core/upstream_percpu.h"

namespace rssaudit::cli {
namespace {

struct SimulateOptions {
  int64_t cpus = -1;  // -1: not given
  std::vector<uint32_t> shape;
  int64_t batch = kHpccDefaultBatch;
  int64_t upstream_batch = 0;  // 0: max(32, 2 * cpus) as the kernel does
  std::string workload = "hop";
  uint64_t updates = 1'000'000;
  uint64_t seed = 1;
  uint32_t threads = 0;
  bool json = false;
  bool table = false;
};

Topology make_topology(const SimulateOptions& o, int64_t cpus) {
  if (cpus < 1 || cpus > kMaxCpus)
    throw UsageError(
        fmt::format("--cpus must be in 1..{}, got {}", kMaxCpus, cpus));
  Topology t = Topology::for_cpus(static_cast<uint32_t>(cpus));
  if (o.upstream_batch) t.upstream_batch = o.upstream_batch;
  t.hpcc_batch = o.batch;
  t.hpcc_shape = o.shape;
  if (o.batch < 1 || o.batch > INT32_MAX)
    throw UsageError(fmt::format("--batch must be positive, got {}", o.batch));
  if (o.upstream_batch < 0 || o.upstream_batch > INT32_MAX)
    throw UsageError(fmt::format("--upstream-batch must be positive, got {}",
                                 o.upstream_batch));
  if (std::string why = validate(t); !why.empty())
    throw UsageError(fmt::format("--shape/--batch: {}", why));
  return t;
}

nlohmann::json bound_json(const Bound& b) {
  return b ? nlohmann::json(*b) : nlohmann::json(nullptr);
}

std::string shape_text(const std::vector<uint32_t>& shape) {
  return fmt::format("{}", fmt::join(shape, ","));
}

void print_run(const SimulateOptions& o, const Topology& t,
               const SimulationResult& r) {
  if (o.json) {
    nlohmann::json j = {{"cpus", t.nr_cpus},
                        {"workload", o.workload},
                        {"seed", o.seed},
                        {"updates", r.updates},
                        {"mms", r.mms},
                        {"peak_rss_pages", r.peak_rss},
                        {"page_size", kPageSize},
                        {"upstream_batch", t.upstream_batch},
                        {"hpcc_batch", t.hpcc_batch},
                        {"hpcc_shape", hpcc_shape(t)},
                        {"schemes", nlohmann::json::array()}};
    for (const SchemeOutcome& s : r.schemes) {
      j["schemes"].push_back(
          {{"name", s.name},
           {"bound_pages", bound_json(s.bound)},
           {"largest_error_pages", s.largest_error},
           {"final_error_pages", s.final_error},
           {"shared_updates", s.shared_updates},
           {"shared_per_1000",
            r.updates ? 1000.0 * s.shared_updates / r.updates : 0.0},
           {"bytes_per_mm", s.bytes_per_mm}});
    }
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("{} CPUs, workload {}, {} updates in {} mm, seed {}\n", t.nr_cpus,
             o.workload, r.updates, r.mms, o.seed);
  fmt::print("upstream batch {}; hpcc batch {}, shape {}\n\n", t.upstream_batch,
             t.hpcc_batch, shape_text(hpcc_shape(t)));
  fmt::print("{:<12}{:>11}{:>10}{:>11}{:>10}{:>11}{:>10}\n", "scheme",
             "bound pg", "bound MiB", "max err pg", "final pg", "shared/1k",
             "bytes/mm");
  for (const SchemeOutcome& s : r.schemes) {
    fmt::print("{:<12}{:>11}{:>10}{:>11}{:>10}{:>11.2f}{:>10}\n", s.name,
               s.bound ? std::to_string(*s.bound) : "none",
               s.bound ? pages_as_mib(*s.bound) : "-", s.largest_error,
               s.final_error,
               r.updates ? 1000.0 * s.shared_updates / r.updates : 0.0,
               s.bytes_per_mm);
  }
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
  for (int64_t c : counts) {
    SimulateOptions per_row = o;
    per_row.shape.clear();  // the table shows the shape each size would get
    const Topology t = make_topology(per_row, c);
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
  if (o.cpus == -1) throw UsageError("simulate: --cpus N is required");
  const Topology t = make_topology(o, o.cpus);
  WorkloadParams p;
  const auto kind = parse_workload(o.workload);
  if (!kind)
    throw UsageError(fmt::format(
        "--workload must be hop, threads, oscillate or forkstorm, got '{}'",
        o.workload));
  p.kind = *kind;
  p.updates = o.updates;
  p.seed = o.seed;
  p.threads = o.threads;
  SimulationResult r;
  {
    Progress progress("simulate", o.updates);
    r = simulate(t, p, [&](uint64_t done) { progress.update(done); });
  }
  print_run(o, t, r);
}

}  // namespace

void register_simulate(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "Run a synthetic workload through every counting scheme on a "
      "simulated CPU topology");
  sub->add_option("--cpus", o->cpus, "Number of CPUs, 1..65536");
  sub->add_option("--shape", o->shape,
                  "HPCC fan-outs from the per-CPU level to the root, "
                  "e.g. 8,8,4 (product >= CPUs)")
      ->delimiter(',');
  sub->add_option("--batch", o->batch, "HPCC per-CPU batch")
      ->capture_default_str();
  sub->add_option("--upstream-batch", o->upstream_batch,
                  "percpu_counter batch (default max(32, 2*CPUs))");
  sub->add_option("--workload", o->workload,
                  "hop | threads | oscillate | forkstorm")
      ->capture_default_str();
  sub->add_option("--updates", o->updates, "Counter updates to simulate")
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Random seed")->capture_default_str();
  sub->add_option("--threads", o->threads,
                  "Threads for threads/oscillate (default min(CPUs, 64))");
  sub->add_flag("--json", o->json, "Print JSON");
  sub->add_flag("--table", o->table,
                "Sweep CPU counts 1..65536: HPCC shape and both bounds");
  sub->callback([o] { run(*o); });
}

}  // namespace rssaudit::cli
