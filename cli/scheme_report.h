// What `simulate` and `whatif` share: the model options (--shape, --batch),
// the --pages/--bytes flags, a synthetic run, and the per-scheme table and
// JSON, so both commands print a scheme's figures the same way.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/units.h"
#include "core/schemes/reader_tolerance.h"
#include "core/schemes/topology.h"
#include "core/sim/simulation.h"

namespace rssaudit::cli {

// HPCC parameters, and the percpu_counter batch where a command offers it.
struct ModelOptions {
  std::vector<uint32_t> shape;
  int64_t batch = kHpccDefaultBatch;
  int64_t upstream_batch = 0;  // 0: the kernel's max(32, 2 * CPUs)
};

// --shape and --batch.
void add_model_options(CLI::App& sub, ModelOptions& o);

// `base` with the HPCC parameters of `o`; a UsageError names the bad option.
Topology with_model_options(Topology base, const ModelOptions& o);

// A topology of `cpus` CPUs with `o` applied; a UsageError names the bad
// option (--cpus out of 1..65536, a shape too small, a negative batch).
Topology model_topology(const ModelOptions& o, int64_t cpus);

// "8,8,4"
std::string shape_text(const std::vector<uint32_t>& shape);

// The schemes of a run of `updates` updates as a JSON array, one object per
// scheme: name, bound_per_counter_pages (null: no static bound),
// largest_error_pages, final_error_pages, their *_bytes, shared_updates,
// shared_per_1000, bytes_per_mm and read_lines_approximate/_precise (null:
// no precise read).
nlohmann::json schemes_json(const std::vector<SchemeOutcome>& schemes,
                            uint64_t updates, int64_t page_size);

// The same as a table of at most 80 columns, sizes in `unit`, and the read
// costs below it.
void print_schemes(const std::vector<SchemeOutcome>& schemes, uint64_t updates,
                   int64_t page_size, SizeUnit unit);

// One reader's tolerance as check and simulate print it: reader, what,
// rss_error_pages, rss_error_bytes, anon_error_pages, bounded_in_time.
nlohmann::json tolerance_json(const ReaderTolerance& t, int64_t page_size);

// A synthetic workload through every scheme, as `simulate` and
// `whatif --workload` run it.
struct SyntheticRun {
  int64_t cpus = -1;  // -1: not given
  ModelOptions model;
  std::string workload = "hop";
  uint64_t updates = 1'000'000;
  uint64_t seed = 1;
  uint32_t threads = 0;  // 0: min(CPUs, 64)
};

// --workload, --updates, --seed and --threads; returns them, so a command
// can refuse them with another source.
std::vector<CLI::Option*> add_synthetic_options(CLI::App& sub, SyntheticRun& r);

// Runs it with progress on stderr and prints the result (JSON when `json`;
// `source`, when not empty, is added to the JSON as "source"). UsageError
// for a bad option, naming it; `command` prefixes the missing --cpus error.
void run_synthetic(const SyntheticRun& run, std::string_view command, bool json,
                   SizeUnit unit, std::string_view source = {});

}  // namespace rssaudit::cli
