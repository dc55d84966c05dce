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
Result<void> known_fields(const json& j,
                          std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : j.items())
    if (std::ranges::find(allowed, key) == allowed.end())
      return unexpected(
          Error{fmt::format("unknown field '{}' in a '{}' request", key,
                            j["request"].get<std::string>())});
  return {};
}

// An unsigned integer from `lo` to `hi`, or the error naming `field`.
Result<uint64_t> bounded(const json& v, const char* field, uint64_t lo,
                         uint64_t hi) {
  // Negative integers, floats (1.5, 1e30, numbers past 2^64) and other
  // types are not unsigned.
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u >= lo && u <= hi) return u;
  }
  return unexpected(
      Error{fmt::format("{}: expected an integer from {} to {}, got {}", field,
                        lo, hi, shown(v))});
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

Result<Request, RequestError> parse_request(std::string_view line) {
  const auto fail = [](std::string why, std::optional<json> id = {}) {
    return unexpected(RequestError{std::move(why), std::move(id)});
  };
  if (line.find_first_not_of(" \t\r") == line.npos)
    return fail("empty request: send one JSON object per line");
  // No exceptions: a parse failure is the common case for garbage. The
  // parser and the destructor are iterative, but dump() (an error quoting a
  // value, an echoed id) recurses: a deep line would overflow the stack.
  bool too_deep = false;
  json j = json::parse(
      line,
      [&](int depth, json::parse_event_t, json&) {
        too_deep = too_deep || depth > kMaxRequestDepth;
        return true;
      },
      /*allow_exceptions=*/false);
  if (j.is_discarded())
    return fail("invalid JSON: send one JSON object per line");
  if (too_deep)
    return fail(
        fmt::format("request nested deeper than {} levels", kMaxRequestDepth));
  if (!j.is_object()) return fail("expected a JSON object, got " + shown(j));
  Request r{.kind = HealthRequest{}, .id = std::nullopt};
  if (auto it = j.find("id"); it != j.end()) r.id = *it;
  auto it = j.find("request");
  if (it == j.end())
    return fail(
        "missing \"request\": one of \"health\", \"processes\", \"process\"",
        r.id);
  if (!it->is_string())
    return fail("request: expected a string, got " + shown(*it), r.id);
  const std::string name = it->get<std::string>();
  if (name == "health") {
    if (auto known = known_fields(j, {"request", "id"}); !known)
      return fail(known.error().message, r.id);
  } else if (name == "processes") {
    if (auto known = known_fields(j, {"request", "id", "top"}); !known)
      return fail(known.error().message, r.id);
    ProcessesRequest p;
    if (auto top = j.find("top"); top != j.end()) {
      auto n = bounded(*top, "top", 0, std::numeric_limits<uint64_t>::max());
      if (!n) return fail(n.error().message, r.id);
      p.top = *n;
    }
    r.kind = p;
  } else if (name == "process") {
    if (auto known = known_fields(j, {"request", "id", "pid", "comm"}); !known)
      return fail(known.error().message, r.id);
    ProcessRequest p;
    auto pid = j.find("pid");
    auto comm = j.find("comm");
    if ((pid == j.end()) == (comm == j.end()))
      return fail("a 'process' request needs \"pid\" or \"comm\", not both",
                  r.id);
    if (pid != j.end()) {
      auto n = bounded(*pid, "pid", 1, std::numeric_limits<uint32_t>::max());
      if (!n) return fail(n.error().message, r.id);
      p.pid = static_cast<uint32_t>(*n);
    } else {
      if (!comm->is_string() || comm->get<std::string>().empty())
        return fail("comm: expected a non-empty string, got " + shown(*comm),
                    r.id);
      p.comm = comm->get<std::string>();
    }
    r.kind = p;
  } else {
    return fail(fmt::format("unknown request {}: one of \"health\", "
                            "\"processes\", \"process\"",
                            shown(*it)),
                r.id);
  }
  return r;
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

LabelScope label_scope(const Request& r) {
  if (std::holds_alternative<HealthRequest>(r.kind))
    return LabelScope{.top = 0};
  if (auto* p = std::get_if<ProcessesRequest>(&r.kind))
    return p->top ? LabelScope{.top = *p->top} : LabelScope{};
  const auto& q = std::get<ProcessRequest>(r.kind);
  if (q.pid) return LabelScope{.top = 0, .pid = *q.pid};
  return LabelScope{};  // a comm: every process's is compared
}

std::string answer_line(std::string_view line, const ViewSource& view,
                        bool* ok) {
  if (ok) *ok = false;
  const Result<Request, RequestError> request = parse_request(line);
  if (!request) return error_line(request.error().message, request.error().id);
  try {
    std::string out = dump_line(answer(*request, view(label_scope(*request))));
    if (ok) *ok = true;
    return out;
  } catch (const NoAnswer& e) {
    return error_line(e.what(), request->id);
  } catch (const std::exception& e) {
    // The snapshot failed (allocation, a bug): the client gets a reason,
    // the daemon keeps serving.
    return error_line(fmt::format("internal error: {}", e.what()), request->id);
  }
}

Result<json> parse_response(std::string_view line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return unexpected(
        Error{"not a response line: " + std::string(line.substr(0, 60))});
  auto ok = j.find("ok");
  if (ok == j.end() || !ok->is_boolean())
    return unexpected(Error{"response without \"ok\""});
  if (!ok->get<bool>()) {
    auto error = j.find("error");
    return unexpected(Error{error != j.end() && error->is_string()
                                ? error->get<std::string>()
                                : "error without a reason"});
  }
  return j;
}

}  // namespace rssaudit
