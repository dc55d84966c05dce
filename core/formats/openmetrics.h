// Renders a LiveView for a fleet scrape: OpenMetrics 1.0.0, or the classic
// Prometheus text format 0.0.4 for clients that do not ask for OpenMetrics.
// Both exist because `promtool check metrics` (2.42) parses only 0.0.4: it
// rejects the OpenMetrics `info` type and lints an OpenMetrics counter (family
// `x`, sample `x_total`) as "no help text", while Prometheus 2.42 itself asks
// for OpenMetrics first.
//
// Prometheus' conventions: memory in bytes (names end in `_bytes`), counters
// sampled as `_total`. Label cardinality is bounded: at most top_n groups
// (the rest folded into one "other" group), and per-process series (a pid
// label churns series) only when asked, at most process_series. A value the
// snapshot does not know is left out, never rendered as zero.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/formats/live_view.h"

namespace rssaudit {

enum class GroupBy { kComm, kCgroup };

struct MetricsOptions {
  GroupBy group_by = GroupBy::kComm;
  size_t top_n = 20;          // groups with their own series
  size_t process_series = 0;  // processes with their own series; 0: none
  std::string version{};  // rssaudit's, for rssaudit_build_info
};

enum class ExpositionFormat { kOpenMetrics, kPrometheusText };

// The Content-Type header value of a scrape answer in `format`.
std::string_view content_type(ExpositionFormat format);

// The format to answer an HTTP Accept header with: OpenMetrics when the
// client accepts application/openmetrics-text with a non-zero q, else the
// text format, which every Prometheus-compatible client reads.
ExpositionFormat negotiate_format(std::string_view accept);

std::string render_openmetrics(const LiveView& view,
                               const MetricsOptions& options);
std::string render_prometheus_text(const LiveView& view,
                                   const MetricsOptions& options);
std::string render_metrics(const LiveView& view, const MetricsOptions& options,
                           ExpositionFormat format);

}  // namespace rssaudit
