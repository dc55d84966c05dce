#include "cli/scheme_report.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "cli/errors.h"
#include "cli/progress.h"
#include "cli/query_support.h"
#include "core/formats/option_checks.h"
#include "core/schemes/hpcc_tree.h"
#include "core/sim/workload.h"

namespace rssaudit::cli {
namespace {

double per_1000(uint64_t shared, uint64_t updates) {
  return updates ? 1000.0 * shared / updates : 0.0;
}

}  // namespace

void add_model_options(CLI::App& sub, ModelOptions& o) {
  sub.add_option("--shape", o.shape,
                 "HPCC fan-outs from the per-CPU level to the root, "
                 "e.g. 8,8,4 (product >= CPUs)")
      ->delimiter(',');
  sub.add_option("--batch", o.batch, "HPCC per-CPU batch")
      ->capture_default_str();
}

Topology with_model_options(Topology t, const ModelOptions& o) {
  if (o.batch < 1 || o.batch > INT32_MAX)
    throw UsageError(fmt::format("--batch must be positive, got {}", o.batch));
  if (o.upstream_batch < 0 || o.upstream_batch > INT32_MAX)
    throw UsageError(fmt::format("--upstream-batch must be positive, got {}",
                                 o.upstream_batch));
  if (o.upstream_batch)
    t.upstream_batch = static_cast<int32_t>(o.upstream_batch);
  t.hpcc_batch = static_cast<int32_t>(o.batch);
  t.hpcc_shape = o.shape;
  if (std::string why = validate(t); !why.empty())
    throw UsageError(fmt::format("--shape/--batch: {}", why));
  return t;
}

Topology model_topology(const ModelOptions& o, int64_t cpus) {
  if (cpus < 1 || cpus > kMaxCpus)
    throw UsageError(
        fmt::format("--cpus must be in 1..{}, got {}", kMaxCpus, cpus));
  return with_model_options(Topology::for_cpus(static_cast<uint32_t>(cpus)), o);
}

std::string shape_text(const std::vector<uint32_t>& shape) {
  return fmt::format("{}", fmt::join(shape, ","));
}

nlohmann::json schemes_json(const std::vector<SchemeOutcome>& schemes,
                            uint64_t updates, int64_t page_size) {
  nlohmann::json out = nlohmann::json::array();
  for (const SchemeOutcome& s : schemes) {
    out.push_back(
        {{"name", s.name},
         {"bound_per_counter_pages", json_or_null(s.bound)},
         {"bound_per_counter_bytes",
          json_or_null(s.bound ? Bound(*s.bound * page_size) : Bound())},
         {"largest_error_pages", s.largest_error},
         {"largest_error_bytes", s.largest_error * page_size},
         {"final_error_pages", s.final_error},
         {"final_error_bytes", s.final_error * page_size},
         {"shared_updates", s.shared_updates},
         {"shared_per_1000", per_1000(s.shared_updates, updates)},
         {"bytes_per_mm", s.bytes_per_mm},
         {"read_lines_approximate", s.read_cost.approximate},
         {"read_lines_precise", json_or_null(s.read_cost.precise)}});
  }
  return out;
}

void print_schemes(const std::vector<SchemeOutcome>& schemes, uint64_t updates,
                   int64_t page_size, SizeUnit unit) {
  // Widths leave room for --bytes figures of 65536-CPU bounds.
  fmt::print("{:<12}{:>16}{:>13}{:>13}{:>11}{:>10}\n", "scheme",
             "bound/counter", "max error", "final", "shared/1k", "bytes/mm");
  for (const SchemeOutcome& s : schemes) {
    fmt::print("{:<12}{:>16}{:>13}{:>13}{:>11.2f}{:>10}\n", s.name,
               s.bound ? format_size(*s.bound, page_size, unit) : "none",
               format_size(s.largest_error, page_size, unit),
               format_size(s.final_error, page_size, unit, true),
               per_1000(s.shared_updates, updates), s.bytes_per_mm);
  }
  // What the accuracy above costs each reader.
  fmt::print("\n{:<12}{:>16}{:>13}  {}\n", "read cost", "approximate",
             "precise", "(cache lines per counter read)");
  for (const SchemeOutcome& s : schemes)
    fmt::print(
        "{:<12}{:>16}{:>13}\n", s.name, s.read_cost.approximate,
        s.read_cost.precise ? std::to_string(*s.read_cost.precise) : "none");
}

nlohmann::json tolerance_json(const ReaderTolerance& t, int64_t page_size) {
  return {{"reader", t.reader},
          {"what", t.what},
          {"rss_error_pages", t.rss_pages},
          {"rss_error_bytes", t.rss_pages * page_size},
          {"anon_error_pages", t.anon_pages},
          {"bounded_in_time", t.bounded_in_time}};
}

std::vector<CLI::Option*> add_synthetic_options(CLI::App& sub,
                                                SyntheticRun& r) {
  return {
      sub.add_option("--workload", r.workload,
                     "hop | threads | oscillate | forkstorm")
          ->capture_default_str(),
      // -1 read as 2^64 - 1 never ended, and CLI::Range took
      // -18446744073709551615 as 1; a billion takes about a minute.
      sub.add_option("--updates", r.updates, "Counter updates to simulate")
          ->capture_default_str()
          ->check(whole_in(1, 10'000'000'000, "updates")),
      sub.add_option("--seed", r.seed, "Random seed")
          ->capture_default_str()
          ->check(whole_in(0, UINT64_MAX, "a seed")),
      sub.add_option("--threads", r.threads,
                     "Threads for threads/oscillate (default min(CPUs, "
                     "64))")};
}

void run_synthetic(const SyntheticRun& run, std::string_view command, bool json,
                   SizeUnit unit, std::string_view source) {
  if (run.cpus == -1)
    throw UsageError(fmt::format("{}: --cpus N is required", command));
  const Topology t = model_topology(run.model, run.cpus);
  const auto kind = parse_workload(run.workload);
  if (!kind)
    throw UsageError(fmt::format(
        "--workload must be hop, threads, oscillate or forkstorm, got '{}'",
        run.workload));
  WorkloadParams p;
  p.kind = *kind;
  p.updates = run.updates;
  p.seed = run.seed;
  p.threads = run.threads;
  SimulationResult r;
  {
    Progress progress(std::string(command), run.updates);
    r = simulate(t, p, [&](uint64_t done) { progress.update(done); });
  }
  if (json) {
    nlohmann::json j = {
        {"cpus", t.nr_cpus},
        {"workload", run.workload},
        {"seed", run.seed},
        {"updates", r.updates},
        {"mms", r.mms},
        {"peak_rss_pages", r.peak_rss},
        {"page_size", kPageSize},
        {"upstream_batch", t.upstream_batch},
        {"hpcc_batch", t.hpcc_batch},
        {"hpcc_shape", hpcc_shape(t)},
        {"schemes", schemes_json(r.schemes, r.updates, kPageSize)}};
    if (!source.empty()) j["source"] = source;
    fmt::print("{}\n", json_text(j));
    return;
  }
  fmt::print("{} CPUs, workload {}, {} updates in {} mm, seed {}\n", t.nr_cpus,
             run.workload, r.updates, r.mms, run.seed);
  fmt::print("upstream batch {}; hpcc batch {}, shape {}\n\n", t.upstream_batch,
             t.hpcc_batch, shape_text(hpcc_shape(t)));
  print_schemes(r.schemes, r.updates, kPageSize, unit);
}

}  // namespace rssaudit::cli
