#include "core/formats/live_view_json.h"

#include <fmt/core.h>

#include <cmath>
#include <concepts>
#include <limits>
#include <stdexcept>

#include "core/schemes/scheme_set.h"

namespace rssaudit {
namespace {

using nlohmann::json;

// Thrown by the readers below, caught at the public entry points: parsing
// a nested document reads better as straight-line code than as a chain of
// checked results.
struct FieldError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& field, const std::string& why) {
  throw FieldError((field.empty() ? "the document" : field) + ": " + why);
}

// What was found instead, short enough for one line.
std::string shown(const json& v) {
  std::string text = dump_line(v);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

json number_or_null(double d) {
  return std::isfinite(d) ? json(d) : json(nullptr);
}

class ObjectReader {
 public:
  ObjectReader(const json& j, std::string where)
      : j_(j), where_(std::move(where)) {
    if (!j_.is_object()) fail(where_, "expected an object, got " + shown(j_));
  }

  std::string field(const char* key) const {
    return where_.empty() ? key : where_ + "." + key;
  }

  const json& at(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end()) fail(field(key), "missing");
    return *it;
  }

  template <std::integral T>
  T integer(const char* key) const {
    const json& v = at(key);
    constexpr auto lo = std::numeric_limits<T>::min();
    constexpr auto hi = std::numeric_limits<T>::max();
    const auto out_of_range = [&] {
      return FieldError(
          fmt::format("{}: expected an integer from {} to {}, got {}",
                      field(key), lo, hi, shown(v)));
    };
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(hi)) throw out_of_range();
      return static_cast<T>(u);
    }
    if (v.is_number_integer()) {
      // Signed storage, but not necessarily negative: a value built in
      // code rather than parsed.
      const int64_t i = v.get<int64_t>();
      if (i < 0) {
        if constexpr (std::is_unsigned_v<T>) throw out_of_range();
        if (i < static_cast<int64_t>(lo)) throw out_of_range();
      } else if (static_cast<uint64_t>(i) > static_cast<uint64_t>(hi)) {
        throw out_of_range();
      }
      return static_cast<T>(i);
    }
    throw out_of_range();
  }

  double real(const char* key) const {
    const json& v = at(key);
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) fail(field(key), "expected a number, got " + shown(v));
    return v.get<double>();
  }

  std::optional<double> optional_real(const char* key) const {
    const json& v = at(key);
    if (v.is_null()) return std::nullopt;
    return real(key);
  }

  std::optional<bool> optional_boolean(const char* key) const {
    if (at(key).is_null()) return std::nullopt;
    return boolean(key);
  }

  bool boolean(const char* key) const {
    const json& v = at(key);
    if (!v.is_boolean())
      fail(field(key), "expected true or false, got " + shown(v));
    return v.get<bool>();
  }

  std::string string(const char* key) const {
    const json& v = at(key);
    if (!v.is_string()) fail(field(key), "expected a string, got " + shown(v));
    return v.get<std::string>();
  }

 private:
  const json& j_;
  std::string where_;
};

DaemonHealth read_health(const json& j, const std::string& where) {
  const ObjectReader r(j, where);
  DaemonHealth h;
  h.time_ns = r.integer<int64_t>("time_ns");
  h.uptime_s = r.real("uptime_s");
  h.host = r.string("host");
  h.kernel_release = r.string("kernel_release");
  h.nr_cpus = r.integer<uint32_t>("nr_cpus");
  h.batch = r.integer<int32_t>("batch");
  h.counting = r.string("counting");
  h.status_precise = r.optional_boolean("status_precise");
  h.page_size = r.integer<int64_t>("page_size");
  h.events = r.integer<uint64_t>("events");
  h.events_per_s = r.real("events_per_s");
  const ObjectReader drops(r.at("drops_by_cause"), r.field("drops_by_cause"));
  for (const CaptureCause& cause : kCaptureCauses)
    h.drops.*cause.count = drops.integer<uint64_t>(cause.name);
  h.ambiguous = r.integer<uint64_t>("ambiguous");
  h.losses = r.integer<uint64_t>("losses");
  h.lag_s = r.real("lag_s");
  h.loop_delay_s = r.real("loop_delay_s");
  h.bpf_ns_per_event = r.optional_real("bpf_ns_per_event");
  h.fidelity_checked = r.integer<uint64_t>("fidelity_checked");
  h.fidelity_matched = r.integer<uint64_t>("fidelity_matched");
  h.live_mms = r.integer<uint64_t>("live_mms");
  h.quiet_processes = r.integer<uint64_t>("quiet_processes");
  h.host_processes_known = r.integer<uint64_t>("host_processes_known");
  h.host_kernel_rss = r.integer<int64_t>("host_kernel_rss");
  h.host_exact_rss = r.integer<int64_t>("host_exact_rss");
  h.host_worst_case = r.integer<int64_t>("host_worst_case");
  h.drift_unknown_moving = r.integer<uint64_t>("drift_unknown_moving");
  h.drift_unknown_exiting = r.integer<uint64_t>("drift_unknown_exiting");
  h.drift_beyond_bound = r.integer<uint64_t>("drift_beyond_bound");
  h.store_error = r.string("store_error");
  h.store_dropped_rows = r.integer<uint64_t>("store_dropped_rows");
  h.store_pending_rows = r.integer<uint64_t>("store_pending_rows");
  h.store_file_bytes = r.integer<uint64_t>("store_file_bytes");
  h.store_used_bytes = r.integer<uint64_t>("store_used_bytes");
  h.store_cap_bytes = r.integer<uint64_t>("store_cap_bytes");
  h.store_growth_bytes_per_s = r.optional_real("store_growth_bytes_per_s");
  h.sampling_gaps = r.integer<uint64_t>("sampling_gaps");
  return h;
}

LiveProcess read_process(const json& j, const std::string& where) {
  const ObjectReader r(j, where);
  LiveProcess p;
  p.pid = r.integer<uint32_t>("pid");
  p.start_ticks = r.integer<uint64_t>("start_ticks");
  p.comm = r.string("comm");
  p.cgroup = r.string("cgroup");
  p.from_zero = r.boolean("from_zero");
  p.quiet = r.boolean("quiet");
  p.updates = r.integer<uint64_t>("updates");
  p.flagged = r.integer<uint64_t>("flagged");
  p.fidelity_checked = r.integer<uint64_t>("fidelity_checked");
  p.fidelity_matched = r.integer<uint64_t>("fidelity_matched");
  p.exact_rss = r.integer<int64_t>("exact_rss");
  p.kernel_rss = r.integer<int64_t>("kernel_rss");
  p.kernel_known = r.boolean("kernel_known");
  p.peak_rss = r.integer<int64_t>("peak_rss");
  p.rss_bound = r.integer<int64_t>("rss_bound");
  const ObjectReader errors(r.at("largest_error"), r.field("largest_error"));
  for (size_t i = 0; i < SchemeSet::kCount; ++i)
    p.largest_error[i] =
        errors.integer<int64_t>(std::string(SchemeSet::kNames[i]).c_str());
  return p;
}

template <class T, class Fn>
Result<T> guarded(Fn&& fn) {
  try {
    return fn();
  } catch (const FieldError& e) {
    return unexpected(Error{e.what()});
  }
}

json drops_by_cause(const CaptureLosses& drops) {
  json j = json::object();
  for (const CaptureCause& cause : kCaptureCauses)
    j[cause.name] = drops.*cause.count;
  return j;
}

}  // namespace

json health_to_json(const DaemonHealth& h) {
  return {
      {"time_ns", h.time_ns},
      {"uptime_s", number_or_null(h.uptime_s)},
      {"host", h.host},
      {"kernel_release", h.kernel_release},
      {"nr_cpus", h.nr_cpus},
      {"batch", h.batch},
      {"counting", h.counting},
      {"status_precise",
       h.status_precise ? json(*h.status_precise) : json(nullptr)},
      {"page_size", h.page_size},
      {"events", h.events},
      {"events_per_s", number_or_null(h.events_per_s)},
      {"drops", h.drops.total()},
      {"drops_by_cause", drops_by_cause(h.drops)},
      {"ambiguous", h.ambiguous},
      {"losses", h.losses},
      {"lag_s", number_or_null(h.lag_s)},
      {"loop_delay_s", number_or_null(h.loop_delay_s)},
      {"bpf_ns_per_event", h.bpf_ns_per_event
                               ? number_or_null(*h.bpf_ns_per_event)
                               : json(nullptr)},
      {"fidelity_checked", h.fidelity_checked},
      {"fidelity_matched", h.fidelity_matched},
      {"live_mms", h.live_mms},
      {"quiet_processes", h.quiet_processes},
      {"host_processes_known", h.host_processes_known},
      {"host_kernel_rss", h.host_kernel_rss},
      {"host_exact_rss", h.host_exact_rss},
      {"host_worst_case", h.host_worst_case},
      {"drift_unknown_moving", h.drift_unknown_moving},
      {"drift_unknown_exiting", h.drift_unknown_exiting},
      {"drift_beyond_bound", h.drift_beyond_bound},
      {"store_error", h.store_error},
      {"store_dropped_rows", h.store_dropped_rows},
      {"store_pending_rows", h.store_pending_rows},
      {"store_file_bytes", h.store_file_bytes},
      {"store_used_bytes", h.store_used_bytes},
      {"store_cap_bytes", h.store_cap_bytes},
      {"store_growth_bytes_per_s",
       h.store_growth_bytes_per_s ? number_or_null(*h.store_growth_bytes_per_s)
                                  : json(nullptr)},
      {"sampling_gaps", h.sampling_gaps},
  };
}

json process_to_json(const LiveProcess& p) {
  json errors = json::object();
  for (size_t i = 0; i < SchemeSet::kCount; ++i)
    errors[std::string(SchemeSet::kNames[i])] = p.largest_error[i];
  return {
      {"pid", p.pid},
      {"start_ticks", p.start_ticks},
      {"comm", p.comm},
      {"cgroup", p.cgroup},
      {"from_zero", p.from_zero},
      {"quiet", p.quiet},
      {"updates", p.updates},
      {"flagged", p.flagged},
      {"fidelity_checked", p.fidelity_checked},
      {"fidelity_matched", p.fidelity_matched},
      {"exact_rss", p.exact_rss},
      {"kernel_rss", p.kernel_rss},
      {"kernel_known", p.kernel_known},
      {"peak_rss", p.peak_rss},
      {"rss_bound", p.rss_bound},
      {"largest_error", std::move(errors)},
  };
}

json live_view_to_json(const LiveView& v) {
  json processes = json::array();
  for (const LiveProcess& p : v.processes)
    processes.push_back(process_to_json(p));
  return {{"health", health_to_json(v.health)},
          {"processes", std::move(processes)}};
}

Result<DaemonHealth> health_from_json(const json& j, const std::string& where) {
  return guarded<DaemonHealth>([&] { return read_health(j, where); });
}

Result<LiveProcess> process_from_json(const json& j, const std::string& where) {
  return guarded<LiveProcess>([&] { return read_process(j, where); });
}

Result<LiveView> live_view_from_json(const json& j) {
  return guarded<LiveView>([&] {
    const ObjectReader r(j, "");
    LiveView v;
    v.health = read_health(r.at("health"), "health");
    const json& list = r.at("processes");
    if (!list.is_array())
      fail("processes", "expected an array, got " + shown(list));
    v.processes.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i)
      v.processes.push_back(
          read_process(list[i], fmt::format("processes[{}]", i)));
    return v;
  });
}

std::string dump_line(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string dump_line(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace rssaudit
