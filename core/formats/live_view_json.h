// LiveView as JSON, both ways: the daemon's control socket writes it, the
// CLI reads it back. The round trip is exact: integers keep all 64 bits,
// doubles are printed with enough digits to parse back to the same value.
// Two things JSON cannot carry are mapped rather than refused, because the
// daemon must never fail to answer: a non-finite double becomes null (and
// parses back as NaN, or as an empty optional), and dump_line() replaces
// invalid UTF-8 in strings (a comm is raw bytes) with U+FFFD.
//
// Parsing is strict about types and ranges (a negative pid, 2^32 CPUs, a
// float where a count belongs are errors), ignores unknown fields so a
// newer daemon can add some, and names the offending field in every error:
// "processes[3].largest_error.hpcc: missing": the Error's message.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/formats/live_view.h"
#include "core/result.h"

namespace rssaudit {

nlohmann::json health_to_json(const DaemonHealth& h);
// `largest_error` is an object keyed by SchemeSet::kNames.
nlohmann::json process_to_json(const LiveProcess& p);
// {"health": {...}, "processes": [...]}
nlohmann::json live_view_to_json(const LiveView& v);

// `where` prefixes the field names in errors ("health", "processes[2]").
Result<DaemonHealth> health_from_json(const nlohmann::json& j,
                                      const std::string& where = "health");
Result<LiveProcess> process_from_json(const nlohmann::json& j,
                                      const std::string& where = "process");
Result<LiveView> live_view_from_json(const nlohmann::json& j);

// `j` on one line, never throwing: invalid UTF-8 becomes U+FFFD.
std::string dump_line(const nlohmann::json& j);
std::string dump_line(const nlohmann::ordered_json& j);

}  // namespace rssaudit
