#include "core/formats/control_protocol.h"

#include <fmt/core.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <set>

namespace rssaudit {
namespace {

using nlohmann::json;

// A request value as an error message shows it: short, one line.
std::string shown(const json& v) {
  std::string text = dump_line(v);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

// Requests are strict about their fields, so a typo ("pdi") is an error
// rather than a silently different question.
std::string unknown_field(const json& j,
                          std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : j.items())
    if (std::ranges::find(allowed, key) == allowed.end())
      return fmt::format("unknown field '{}' in a '{}' request", key,
                         j["request"].get<std::string>());
  return {};
}

// An unsigned integer from `lo` to `hi`, or the error naming `field`.
std::variant<uint64_t, std::string> bounded(const json& v, const char* field,
                                            uint64_t lo, uint64_t hi) {
  const std::string why = fmt::format(
      "{}: expected an integer from {} to {}, got {}", field, lo, hi, shown(v));
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u < lo || u > hi) return why;
    return u;
  }
  // Negative integers, floats (1.5, 1e30, numbers past 2^64) and other
  // types all land here.
  return why;
}

std::string comm_matches(const std::string& comm,
                         const std::vector<const LiveProcess*>& found) {
  std::string pids;
  for (const LiveProcess* p : found)
    pids += fmt::format("{}{}", pids.empty() ? "" : ", ", p->pid);
  return fmt::format("comm '{}' matches {} processes (pids {}); ask by pid",
                     comm, found.size(), pids);
}

// Thrown by answer() for a well-formed question without an answer (an
// unknown pid); answer_line() turns it into an error response.
struct NoAnswer : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

ParsedRequest parse_request(std::string_view line) {
  ParsedRequest out;
  if (line.find_first_not_of(" \t\r") == line.npos) {
    out.error = "empty request: send one JSON object per line";
    return out;
  }
  // No exceptions: a parse failure is the common case for garbage.
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    out.error = "invalid JSON: send one JSON object per line";
    return out;
  }
  if (!j.is_object()) {
    out.error = "expected a JSON object, got " + shown(j);
    return out;
  }
  if (auto it = j.find("id"); it != j.end()) out.id = *it;
  auto fail = [&](std::string why) {
    out.error = std::move(why);
    return out;
  };
  auto it = j.find("request");
  if (it == j.end())
    return fail(
        "missing \"request\": one of \"health\", \"processes\", \"process\"");
  if (!it->is_string())
    return fail("request: expected a string, got " + shown(*it));
  const std::string name = it->get<std::string>();
  Request r{.kind = HealthRequest{}, .id = out.id};
  if (name == "health") {
    if (auto why = unknown_field(j, {"request", "id"}); !why.empty())
      return fail(why);
  } else if (name == "processes") {
    if (auto why = unknown_field(j, {"request", "id", "top"}); !why.empty())
      return fail(why);
    ProcessesRequest p;
    if (auto top = j.find("top"); top != j.end()) {
      auto n = bounded(*top, "top", 0, std::numeric_limits<uint64_t>::max());
      if (auto* why = std::get_if<std::string>(&n)) return fail(*why);
      p.top = std::get<uint64_t>(n);
    }
    r.kind = p;
  } else if (name == "process") {
    if (auto why = unknown_field(j, {"request", "id", "pid", "comm"});
        !why.empty())
      return fail(why);
    ProcessRequest p;
    auto pid = j.find("pid");
    auto comm = j.find("comm");
    if ((pid == j.end()) == (comm == j.end()))
      return fail("a 'process' request needs \"pid\" or \"comm\", not both");
    if (pid != j.end()) {
      auto n = bounded(*pid, "pid", 1, std::numeric_limits<uint32_t>::max());
      if (auto* why = std::get_if<std::string>(&n)) return fail(*why);
      p.pid = static_cast<uint32_t>(std::get<uint64_t>(n));
    } else {
      if (!comm->is_string() || comm->get<std::string>().empty())
        return fail("comm: expected a non-empty string, got " + shown(*comm));
      p.comm = comm->get<std::string>();
    }
    r.kind = p;
  } else {
    return fail(fmt::format(
        "unknown request {}: one of \"health\", \"processes\", \"process\"",
        shown(*it)));
  }
  out.request = std::move(r);
  return out;
}

std::string request_line(const Request& r) {
  json j;
  if (std::holds_alternative<HealthRequest>(r.kind)) {
    j["request"] = "health";
  } else if (auto* p = std::get_if<ProcessesRequest>(&r.kind)) {
    j["request"] = "processes";
    if (p->top) j["top"] = *p->top;
  } else {
    const auto& q = std::get<ProcessRequest>(r.kind);
    j["request"] = "process";
    if (q.pid) j["pid"] = *q.pid;
    if (q.comm) j["comm"] = *q.comm;
  }
  if (r.id) j["id"] = *r.id;
  return dump_line(j);
}

nlohmann::ordered_json answer(const Request& r, const LiveView& view) {
  nlohmann::ordered_json out = {{"ok", true}};
  if (r.id) out["id"] = *r.id;
  out["health"] = health_to_json(view.health);
  if (auto* p = std::get_if<ProcessesRequest>(&r.kind)) {
    const size_t n = p->top ? std::min<uint64_t>(*p->top, view.processes.size())
                            : view.processes.size();
    json list = json::array();
    for (size_t i = 0; i < n; ++i)
      list.push_back(process_to_json(view.processes[i]));
    out["total"] = view.processes.size();
    out["processes"] = std::move(list);
  } else if (auto* q = std::get_if<ProcessRequest>(&r.kind)) {
    std::vector<const LiveProcess*> found;
    for (const LiveProcess& p : view.processes)
      if (q->pid ? p.pid == *q->pid : p.comm == *q->comm) found.push_back(&p);
    if (found.empty())
      throw NoAnswer(
          q->pid ? fmt::format("no audited process with pid {}", *q->pid)
                 : fmt::format("no audited process with comm '{}'", *q->comm));
    // A pid names one process; several live mms with one pid are an exec
    // in flight, and the first (largest drift) is the one worth showing.
    if (!q->pid && found.size() > 1)
      throw NoAnswer(comm_matches(*q->comm, found));
    out["process"] = process_to_json(*found.front());
  }
  return out;
}

std::string error_line(std::string_view error, const std::optional<json>& id) {
  nlohmann::ordered_json j = {{"ok", false}};
  if (id) j["id"] = *id;
  j["error"] = error;
  return dump_line(j);
}

std::string answer_line(std::string_view line,
                        const std::function<LiveView()>& view, bool* ok) {
  if (ok) *ok = false;
  ParsedRequest parsed = parse_request(line);
  if (!parsed.request) return error_line(parsed.error, parsed.id);
  try {
    std::string out = dump_line(answer(*parsed.request, view()));
    if (ok) *ok = true;
    return out;
  } catch (const NoAnswer& e) {
    return error_line(e.what(), parsed.id);
  } catch (const std::exception& e) {
    // The snapshot failed (allocation, a bug): the client gets a reason,
    // the daemon keeps serving.
    return error_line(fmt::format("internal error: {}", e.what()), parsed.id);
  }
}

JsonResult<json> parse_response(std::string_view line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return {std::nullopt,
            "not a response line: " + std::string(line.substr(0, 60))};
  auto ok = j.find("ok");
  if (ok == j.end() || !ok->is_boolean())
    return {std::nullopt, "response without \"ok\""};
  if (!ok->get<bool>()) {
    auto error = j.find("error");
    return {std::nullopt, error != j.end() && error->is_string()
                              ? error->get<std::string>()
                              : "error without a reason"};
  }
  return {std::move(j), {}};
}

}  // namespace rssaudit
