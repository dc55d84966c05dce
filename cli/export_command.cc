#include "cli/export_command.h"

#include <fmt/core.h>

#include <cmath>
#include <ext/stdio_filebuf.h>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

#include "cli/errors.h"
#include "cli/gone_processes.h"
#include "cli/host_rss.h"
#include "cli/progress.h"
#include "cli/query_support.h"
#include "cli/svg.h"
#include "cli/table_cells.h"
#include "cli/time_args.h"
#include "core/formats/option_checks.h"
#include "core/schemes/scheme_set.h"
#include "os/path_files.h"

namespace rssaudit::cli {
namespace {

struct ExportOptions {
  std::string db = kDefaultDb;
  std::string format;
  std::string output;
  std::string since = "24h";
  std::string until = "now";
  size_t top = 8;
  FieldSelection fields;  // of the samples, csv and json
};

// What the export reads once: the runs and processes the samples refer to.
struct Context {
  Window window;
  std::map<int64_t, RunSummary> runs;
  std::map<int64_t, ProcessSummary> processes;
  std::vector<StoredGap> gaps;  // sampling gaps overlapping the window

  int64_t page_size(const ProcessSummary& p) const {
    return runs.at(p.run_id).info.page_size;
  }
};

// The exported columns of a sample, in order (docs/export-columns.md):
// CSV and JSON share this one list. The names do not depend on the values.
Row sample_cells(const ProcessSummary& p, int64_t page_size,
                 const StoredSample& s) {
  const SampleRow& r = s.row;
  Row out = {
      {"time_ns", r.time_ns},
      {"time_utc", utc_time_text(r.time_ns)},
      {"run_id", p.run_id},
      {"process_id", p.id},
      {"pid", int64_t{p.identity.pid}},
      {"start_ticks", static_cast<int64_t>(p.identity.start_ticks)},
      {"comm", p.comm},
      {"page_size", page_size},
  };
  auto members = [&](std::string_view source, const MemberPages& m) {
    for (int i = 0; i < kMembers; ++i)
      out.emplace_back(fmt::format("{}_{}", source, kMemberNames[i]),
                       cell(m[i]));
  };
  members("approx", r.approximate);
  out.emplace_back("stat_rss", cell(r.stat_rss));
  members("precise", r.precise);
  out.emplace_back("statm_resident", cell(r.statm_resident));
  members("exact", r.exact);
  members("walk", r.walk);
  out.emplace_back("walk_rss", cell(r.walk_rss));
  out.emplace_back("vm_hwm", cell(r.vm_hwm));
  out.emplace_back("true_peak", cell(r.true_peak));
  out.emplace_back("threads", cell(r.threads));
  out.emplace_back("fidelity_checked", cell(r.fidelity_checked));
  out.emplace_back("fidelity_matched", cell(r.fidelity_matched));
  out.emplace_back("rss", cell(resident_pages(r)));
  out.emplace_back("drift", cell(s.drift));
  out.emplace_back(
      "drift_bytes",
      cell(s.drift ? std::optional(*s.drift * page_size) : std::nullopt));
  out.emplace_back("drift_unknown", cell(drift_unknown_cell(s)));
  return out;
}

Row sample_cells(const Context& c, const StoredSample& s) {
  const ProcessSummary& p = c.processes.at(s.row.process_id);
  return sample_cells(p, c.page_size(p), s);
}

// Streams the window's samples to `visit`, with progress on stderr.
void each_sample(StoreReader& reader, const Context& c,
                 const std::function<void(const StoredSample&)>& visit) {
  const int64_t total =
      checked(reader.count_samples(c.window.since_ns, c.window.until_ns));
  Progress progress("export", static_cast<uint64_t>(total));
  uint64_t done = 0;
  const Result<void, StoreError> status = reader.for_each_sample(
      c.window.since_ns, c.window.until_ns, [&](const StoredSample& s) {
        visit(s);
        if (++done % 4096 == 0) progress.update(done);
      });
  if (!status) throw std::runtime_error(status.error().message);
}

void write_samples_csv(std::ostream& out, StoreReader& reader, const Context& c,
                       const std::vector<size_t>& columns) {
  write_csv_header(out, sample_cells(ProcessSummary{}, 0, StoredSample{}),
                   columns);
  each_sample(reader, c, [&](const StoredSample& s) {
    write_csv_line(out, sample_cells(c, s), columns);
  });
}

nlohmann::json run_json(const RunSummary& r) {
  return {{"id", r.id},
          {"host", r.info.host},
          {"kernel_release", r.info.kernel_release},
          {"nr_cpus", r.info.nr_cpus},
          {"batch", r.info.batch},
          {"counting", r.info.counting},
          {"status_precise", r.info.status_precise
                                 ? nlohmann::json(*r.info.status_precise)
                                 : nlohmann::json(nullptr)},
          {"page_size", r.info.page_size},
          {"rssaudit_version", r.info.rssaudit_version},
          {"started_ns", r.info.started_ns},
          {"ended_ns", json_or_null(r.ended_ns)},
          {"state", run_state_name(r.state)},
          {"stopped_ns", json_or_null(r.stopped_ns)}};
}

// Streams the samples rather than building one document: a day of a busy
// host is millions of rows.
void write_json(std::ostream& out, StoreReader& reader, const Context& c,
                const std::string& db, const std::vector<size_t>& columns) {
  nlohmann::json head = {{"database", db},
                         {"since_ns", c.window.since_ns},
                         {"until_ns", c.window.until_ns},
                         {"runs", nlohmann::json::array()},
                         {"processes", nlohmann::json::array()},
                         {"sampling_gaps", nlohmann::json::array()},
                         {"model_errors", nlohmann::json::array()}};
  for (const auto& [id, r] : c.runs) head["runs"].push_back(run_json(r));
  for (const StoredGap& g : c.gaps)
    head["sampling_gaps"].push_back({{"run_id", g.run_id},
                                     {"start_ns", g.gap.start_ns},
                                     {"end_ns", g.gap.end_ns}});
  for (const auto& [id, p] : c.processes)
    head["processes"].push_back(process_json(p));
  for (const ModelErrorRow& e : checked(reader.model_errors(
           std::nullopt, c.window.since_ns, c.window.until_ns))) {
    nlohmann::json row = model_error_json(e);
    row["process_id"] = e.process_id;
    head["model_errors"].push_back(std::move(row));
  }
  out << "{";
  for (const auto& [key, value] : head.items())
    out << json_text(key, -1) << ":" << json_text(value, -1) << ",\n";
  out << "\"samples\":[";
  bool first = true;
  each_sample(reader, c, [&](const StoredSample& s) {
    nlohmann::json row = nlohmann::json::object();
    const Row cells = sample_cells(c, s);
    for (size_t i : columns) row[cells[i].first] = json_cell(cells[i].second);
    out << (first ? "\n" : ",\n") << json_text(row, -1);
    first = false;
  });
  out << "\n]}\n";
}

// The unit that shows amounts up to `largest_bytes` with short numbers.
std::pair<double, std::string_view> human_scale(double largest_bytes) {
  if (largest_bytes >= 1 << 30) return {double(1 << 30), "GiB"};
  if (largest_bytes >= 1 << 20) return {double(1 << 20), "MiB"};
  return {1024.0, "KiB"};
}

std::string label_of(const ProcessSummary& p) {
  return fmt::format("{} {} (run {})", p.identity.pid, p.comm, p.run_id);
}

std::string drift_chart(StoreReader& reader, const Context& c,
                        const std::vector<ProcessWindow>& offenders) {
  svg::LineChart chart;
  chart.title = "RSS drift (approximate - precise) over time, top offenders";
  double largest = 0;
  for (const ProcessWindow& w : offenders) {
    svg::Series s{label_of(w.process), {}};
    for (const StoredSample& sample : checked(reader.process_history(
             w.process.id, c.window.since_ns, c.window.until_ns))) {
      if (!sample.drift) continue;
      const double bytes = double(*sample.drift) * double(w.page_size);
      largest = std::max(largest, std::abs(bytes));
      s.points.push_back({double(sample.row.time_ns) / 1e9, bytes});
    }
    chart.series.push_back(std::move(s));
  }
  // The kernel's RSS bound of the plotted processes (one per run's CPUs).
  double bound = 0;
  for (const ProcessWindow& w : offenders)
    if (const auto b = rss_bound(w.bound_per_counter))
      bound = std::max(bound, double(*b) * double(w.page_size));
  const auto [scale, unit] = human_scale(std::max(largest, bound));
  for (svg::Series& s : chart.series)
    for (svg::Point& p : s.points) p.y /= scale;
  chart.y_label = fmt::format("drift, {}", unit);
  chart.x_label = "local time";
  if (bound > 0) {
    chart.band = bound / scale;
    chart.band_label = fmt::format("\u00b1 the kernel's RSS bound, {:g} {}",
                                   std::round(bound / scale * 10) / 10, unit);
  }
  double first = INFINITY, last = -INFINITY;
  for (const svg::Series& s : chart.series)
    for (const svg::Point& p : s.points) {
      first = std::min(first, p.x);
      last = std::max(last, p.x);
    }
  const bool days = std::isfinite(first) &&
                    local_time_text(int64_t(first * 1e9)).substr(0, 10) !=
                        local_time_text(int64_t(last * 1e9)).substr(0, 10);
  // What tells the ticks apart: seconds, minutes, or the day too.
  chart.x_text = [days](double seconds, double step) {
    const std::string t = local_time_text(int64_t(seconds * 1e9));
    if (step >= 86400) return t.substr(5, 5);
    if (days) return t.substr(5, 11);
    return step < 60 ? t.substr(11, 8) : t.substr(11, 5);
  };
  chart.y_text = [](double v) { return fmt::format("{:g}", v); };
  return svg::line_chart(chart);
}

std::string scheme_chart(const std::vector<SchemeWindow>& schemes,
                         const Context& c) {
  svg::BarChart chart;
  chart.title = "Largest error of one counter vs its bound, per scheme";
  chart.y_label = "KiB (log scale)";
  chart.y_text = [](double v) { return fmt::format("{:.0f}", v); };
  for (const SchemeWindow& s : schemes) {
    // In KiB, as the rest of the report: pages of the measured process's
    // run.
    const auto p = c.processes.find(s.process_id);
    const double kib =
        p != c.processes.end() ? double(c.page_size(p->second)) / 1024 : 4;
    chart.groups.push_back(
        {std::string(SchemeSet::kNames[s.scheme]),
         double(s.largest_error) * kib,
         s.bound ? std::optional<double>(double(*s.bound) * kib) : std::nullopt,
         p != c.processes.end()
             ? fmt::format("{} {}", p->second.identity.pid,
                           printable(p->second.comm).substr(0, 15))
             : std::string()});
  }
  return svg::bar_chart(chart);
}

// What each scheme's readers would have been off by and what a read of its
// counter costs them, beside whose interval it was.
std::string scheme_table(const std::vector<SchemeWindow>& schemes,
                         const Context& c) {
  std::string out =
      "<div "
      "class=\"scroll\"><table>\n<tr><th>scheme</th><th>process</"
      "th><th>largest error</th>"
      "<th>bound per counter</th><th>read lines, approximate/precise</th>"
      "<th>intervals</th></tr>\n";
  for (const SchemeWindow& s : schemes) {
    const auto p = c.processes.find(s.process_id);
    const int64_t page_size =
        p != c.processes.end() ? c.page_size(p->second) : 0;
    auto size = [&](int64_t pages) {
      return page_size > 0 ? format_size(pages, page_size, SizeUnit::kHuman)
                           : fmt::format("{} pages", pages);
    };
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>\n",
        SchemeSet::kNames[s.scheme],
        p != c.processes.end() ? svg::escape(label_of(p->second)) : "?",
        size(s.largest_error), s.bound ? size(*s.bound) : "none",
        read_cost_text(s.read_cost), s.intervals);
  }
  return out + "</table></div>\n";
}

// A table's reasons for unknown drifts, in words below it.
std::string legend_paragraph(const DriftLegend& legend) {
  std::string out;
  for (char c : svg::escape(legend.text()))
    out += c == '\n' ? std::string("<br>\n") : std::string(1, c);
  return out.empty() ? out : "<p>" + out + "</p>\n";
}

// What the drift chart leaves out: the window's samples whose drift is
// unknown, by reason.
std::string unplotted_paragraph(
    const std::array<int64_t, kDriftUnknownReasons>& unknown) {
  const auto n = [&](DriftUnknown why) {
    return unknown[static_cast<size_t>(why)];
  };
  if (n(DriftUnknown::kMoving) + n(DriftUnknown::kExiting) +
          n(DriftUnknown::kBeyondBound) ==
      0)
    return {};
  return fmt::format(
      "<p>Not plotted, as their drift is unknown: {} samples read while the "
      "counters moved (a fold between the reads of <code>stat</code> and "
      "<code>status</code>), {} read while their process exited, {} beyond "
      "the kernel's bound{}.</p>\n",
      n(DriftUnknown::kMoving), n(DriftUnknown::kExiting),
      n(DriftUnknown::kBeyondBound),
      n(DriftUnknown::kBeyondBound)
          ? ", which no drift of one moment can be (anomalies: a kernel bug, "
            "or, in a database from before schema version 9, reads that were "
            "never checked)"
          : "");
}

// The host's RSS as the kernel's approximate readers add it up against the
// exact total, at the newest samples.
std::string host_section(const HostRss& h) {
  if (h.page_size == 0) return "<p>No process sampled in this window.</p>\n";
  auto size = [&](int64_t pages, bool sign = false) {
    return format_size(pages, h.page_size, SizeUnit::kHuman, sign);
  };
  return fmt::format(
      "<p>At the newest sample of each of the {} processes of the newest run "
      "still running at the end of the window (with a known drift): the "
      "kernel's approximate readers (<code>/proc/PID/stat</code>, VmHWM, "
      "<code>ru_maxrss</code>) add up to <b>{}</b>, the exact total is "
      "<b>{}</b>, a drift of <b>{}</b>. Worst case: {}.</p>\n",
      h.processes_known, size(h.kernel_pages), size(h.exact_pages),
      size(h.kernel_pages - h.exact_pages, true),
      h.worst_case_pages
          ? "&plusmn;" + size(*h.worst_case_pages) +
                ", every process off by its RSS bound"
          : std::string("no bound (before 6.2, per-task caches)"));
}

// The largest processes by RSS: what the kernel's approximate readers show
// against the exact value, at their newest sample.
std::string largest_table(const std::vector<ProcessWindow>& largest) {
  DriftLegend legend;
  std::string out =
      "<div class=\"scroll\"><table>\n<tr><th>pid</th><th>comm</th>"
      "<th>RSS as stat reads it</th><th>exact RSS</th><th>drift</th>"
      "<th>at</th></tr>\n";
  for (const ProcessWindow& w : largest) {
    const std::optional<int64_t> kernel = readers_rss(w.latest.row);
    const std::optional<int64_t> exact =
        kernel && w.latest.drift ? std::optional(*kernel - *w.latest.drift)
                                 : std::nullopt;
    auto size = [&](const std::optional<int64_t>& pages, bool sign) {
      return pages ? format_size(*pages, w.page_size, SizeUnit::kHuman, sign)
                   : "-";
    };
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td></tr>\n",
        w.process.identity.pid, svg::escape(w.process.comm),
        size(kernel, false), size(exact, false),
        drift_text(w.latest, w.page_size, SizeUnit::kHuman),
        local_time_text(w.latest.row.time_ns));
    legend.note(w.latest);
  }
  return out + "</table></div>\n" + legend_paragraph(legend);
}

std::string offenders_table(const std::vector<ProcessWindow>& offenders) {
  DriftLegend legend;
  std::string out =
      "<div "
      "class=\"scroll\"><table>\n<tr><th>pid</th><th>comm</th><th>run</"
      "th><th>start ticks"
      "</th><th>RSS</th><th>drift</th><th>largest |drift|</th><th>at</th>"
      "<th>drift / RSS bound</th><th>samples</th></tr>\n";
  for (const ProcessWindow& w : offenders) {
    auto size = [&](const std::optional<int64_t>& pages, bool sign) {
      return pages ? format_size(*pages, w.page_size, SizeUnit::kHuman, sign)
                   : "-";
    };
    const std::optional<double> ratio = drift_to_rss_bound(w);
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
        w.process.identity.pid, svg::escape(w.process.comm), w.process.run_id,
        w.process.identity.start_ticks,
        size(resident_pages(w.latest.row), false),
        drift_text(w.latest, w.page_size, SizeUnit::kHuman),
        size(w.worst_drift, true),
        w.worst_drift ? local_time_text(w.worst_at_ns) : "-",
        ratio ? fmt::format("{:.1f}%", 100 * *ratio) : "-", w.samples);
    legend.note(w.latest);
  }
  return out + "</table></div>\n" + legend_paragraph(legend);
}

// How the runs stand, and when the history does not cover them: a stopped
// newest run first (its values are as of then), then the sampling gaps.
std::string coverage_section(const Context& c) {
  std::string out;
  if (!c.runs.empty()) {
    const RunSummary& newest = c.runs.rbegin()->second;
    if (const std::string s = run_stopped_text(newest.state, newest.stopped_ns);
        !s.empty())
      out += fmt::format("<p><b>{}.</b>{}</p>\n", svg::escape(s),
                         newest.state == RunState::kDied
                             ? fmt::format(" ({}.)", kRunDiedNote)
                             : std::string());
  }
  if (c.gaps.empty()) return out;
  out +=
      "<p>Sampling gaps: no process was sampled between these times "
      "(rssauditd was stopped or stalled):</p>\n<ul>\n";
  for (const StoredGap& g : c.gaps)
    out += fmt::format("<li>run {}: {} to {} ({:.1f} s)</li>\n", g.run_id,
                       local_time_text(g.gap.start_ns),
                       local_time_text(g.gap.end_ns),
                       double(g.gap.end_ns - g.gap.start_ns) / 1e9);
  return out + "</ul>\n";
}

// One run as the report lists it: host, kernel, counting, and its state.
std::string run_item(const RunSummary& r) {
  const std::string note = counting_note(r.info.counting);
  return fmt::format("<li>run {}: {}, kernel {}, {} CPUs, {}{}; {}</li>\n",
                     r.id, svg::escape(r.info.host),
                     svg::escape(r.info.kernel_release), r.info.nr_cpus,
                     note.empty()
                         ? fmt::format("percpu_counter batch {}", r.info.batch)
                         : std::string("atomics + per-task caches"),
                     note.empty() ? "" : ": " + svg::escape(note),
                     r.state == RunState::kRunning
                         ? std::string("running")
                         : svg::escape(run_end_text(r.state, r.stopped_ns)));
}

void write_html(std::ostream& out, StoreReader& reader, const Context& c,
                const ExportOptions& o) {
  std::vector<ProcessWindow> offenders =
      checked(reader.process_windows(c.window.since_ns, c.window.until_ns));
  mark_gone(offenders, reader, this_host_name());
  const HostRss host = host_rss(offenders, c.window.until_ns);
  // Under the host's words: its processes, still running at the end.
  std::vector<ProcessWindow> largest =
      host_processes(offenders, c.window.until_ns);
  rank(largest, TopSort::kRss);
  if (largest.size() > o.top) largest.resize(o.top);
  const std::vector<SchemeWindow> schemes =
      checked(reader.scheme_errors(c.window.since_ns, c.window.until_ns));
  rank(offenders, TopSort::kDrift);
  if (offenders.size() > o.top) offenders.resize(o.top);
  std::string runs;
  for (const auto& [id, r] : c.runs) runs += run_item(r);
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
         "charset=\"utf-8\">\n"
         "<title>rssaudit report</title>\n<style>\n"
         "body { font-family: sans-serif; margin: 24px auto; padding: 0 "
         "16px; max-width: 1150px; color: #222; }\n"
         "p { max-width: 70em; line-height: 1.4; }\n"
         ".scroll { overflow-x: auto; }\n"
         "table { border-collapse: collapse; }\n"
         "th, td { border: 1px solid #ccc; padding: 4px 8px; "
         "text-align: right; }\n"
         "td:nth-child(2) { text-align: left; white-space: pre; }\n"
         "th { background: #eef1f5; }\n"
         "</style>\n</head>\n<body>\n"
      << fmt::format(
             "<h1>rssaudit report</h1>\n<p>{} to {} (local time), database "
             "<code>{}</code>, {} processes.</p>\n<ul>\n{}</ul>\n",
             local_time_text(c.window.since_ns),
             local_time_text(c.window.until_ns), svg::escape(o.db),
             c.processes.size(), runs)
      << coverage_section(c) << "<h2>The host</h2>\n"
      << host_section(host) << largest_table(largest)
      << "<h2>Drift over time</h2>\n"
      << "<p>Each line is one process's drift: its RSS as "
         "<code>/proc/PID/stat</code>, <code>ru_maxrss</code> and "
         "exporters read it, minus the exact RSS. The dashed lines are the "
         "kernel's RSS bound (3 counters &times; CPUs &times; (batch "
         "&minus; 1) pages): a line near them means those readers are as "
         "wrong as the kernel allows. Tools reading "
         "<code>/proc/PID/status</code> (ps, top) see the exact value where "
         "status is precise.</p>\n"
      << drift_chart(reader, c, offenders)
      << unplotted_paragraph(checked(
             reader.count_drift_unknown(c.window.since_ns, c.window.until_ns)))
      << "<h2>Model error vs bound</h2>\n"
      << "<p>For each counting scheme, the kernel's and proposed ones, the "
         "largest error one counter reached on these processes' own updates "
         "(red) beside the scheme's bound (blue), the process it was "
         "measured on, and what one read of a counter costs. A scheme with "
         "a small error and a cheap read is the better trade for this "
         "workload.</p>\n"
      << scheme_chart(schemes, c) << scheme_table(schemes, c)
      << "<h2>Top offenders</h2>\n"
      << "<p>The processes with the largest drift in the window. Drift / "
         "RSS bound near 100%: the approximate readers are off by as much as "
         "the kernel allows; a capacity figure built on them is that far "
         "off.</p>\n"
      << offenders_table(offenders) << "</body>\n</html>\n";
}

void run(const ExportOptions& o) {
  if (o.format == "html" && o.output.empty())
    throw UsageError("export --format html needs -o FILE");
  // Checked before anything is written: a bad --fields leaves no file.
  const std::vector<size_t> columns =
      o.fields.pick(sample_cells(ProcessSummary{}, 0, StoredSample{}));
  Context c;
  c.window = parse_window(o.since, o.until);
  std::unique_ptr<StoreReader> reader = open_history(o.db);
  for (RunSummary& r : checked(reader->list_runs())) c.runs[r.id] = r;
  for (ProcessSummary& p :
       checked(reader->processes_seen(c.window.since_ns, c.window.until_ns)))
    c.processes[p.id] = p;
  c.gaps = checked(reader->sampling_gaps(c.window.since_ns, c.window.until_ns));
  // Not through a symbolic link, not into a FIFO or device
  // (os/path_files.h): export runs as root, often into /tmp.
  std::optional<__gnu_cxx::stdio_filebuf<char>> buffer;
  std::optional<std::ostream> file;
  if (!o.output.empty()) {
    Result<UniqueFd, Error> fd = open_output_file(o.output);
    if (!fd) throw std::runtime_error(fd.error().message);
    buffer.emplace(fd->release(), std::ios::out | std::ios::binary);
    file.emplace(&*buffer);
  }
  std::ostream& out = o.output.empty() ? std::cout : *file;
  if (o.format == "csv") write_samples_csv(out, *reader, c, columns);
  if (o.format == "json") write_json(out, *reader, c, o.db, columns);
  if (o.format == "html") write_html(out, *reader, c, o);
  out.flush();
  if (!out)
    throw std::runtime_error(fmt::format(
        "{}: write failed", o.output.empty() ? "stdout" : o.output));
}

}  // namespace

void register_export(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* sub = app.add_subcommand(
      "export", "Samples as CSV or JSON, or an HTML report with plots");
  sub->add_option("--format", o->format, "csv, json or html")
      ->required()
      ->check(CLI::IsMember({"csv", "json", "html"}));
  sub->add_option("-o,--output", o->output,
                  "File to write (default stdout; html needs one)");
  add_window_options(*sub, o->since, o->until);
  o->fields.add_fields_option(*sub);
  sub->add_option("--top", o->top, "Processes plotted and tabulated (html)")
      ->capture_default_str()
      ->check(whole_in(0, 10'000'000, "processes"));
  add_db_option(*sub, o->db);
  sub->callback([o] { run(*o); });
}

}  // namespace rssaudit::cli
