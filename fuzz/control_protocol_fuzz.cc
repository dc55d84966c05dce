// The control socket's lines (core/formats/control_protocol.h): answer_line
// never throws and answers one line of JSON saying "ok" as *ok does; a
// parsed request sent again parses the same; parse_response takes any line.
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/formats/control_protocol.h"
#include "core/formats/live_view.h"
#include "fuzz/fuzz_check.h"

namespace rssaudit::fuzz {
namespace {

using nlohmann::json;

// A small daemon: two processes share a comm, one comm is not UTF-8.
LiveView sample_view() {
  LiveView v;
  v.health.host = "fuzz";
  v.health.kernel_release = "6.1.0-fuzz";
  v.health.nr_cpus = 2;
  v.health.batch = 32;
  v.health.status_precise = true;
  v.health.events = 12345;
  v.health.live_mms = 3;
  const struct {
    uint32_t pid;
    const char* comm;
    int64_t exact, kernel;
  } processes[] = {
      {1, "systemd", 3000, 3010},
      {42, "bash", 500, 480},
      {4242, "bash", 90, 90},
      {77,
       "\xff\xfe"
       "bad",
       7, 7},
  };
  for (const auto& p : processes) {
    LiveProcess lp;
    lp.pid = p.pid;
    lp.comm = p.comm;
    lp.cgroup = "/system.slice/x.service";
    lp.from_zero = lp.kernel_known = true;
    lp.exact_rss = p.exact;
    lp.kernel_rss = p.kernel;
    lp.peak_rss = p.exact;
    lp.updates = 10;
    v.processes.push_back(lp);
  }
  return v;
}

bool same_request(const Request& a, const Request& b) {
  if (a.kind.index() != b.kind.index() || a.id.has_value() != b.id.has_value())
    return false;
  if (a.id && *a.id != *b.id) return false;
  if (const auto* p = std::get_if<ProcessesRequest>(&a.kind))
    return p->top == std::get<ProcessesRequest>(b.kind).top;
  if (const auto* p = std::get_if<ProcessRequest>(&a.kind)) {
    const auto& q = std::get<ProcessRequest>(b.kind);
    return p->pid == q.pid && p->comm == q.comm;
  }
  return true;
}

void check_answer(std::string_view line) {
  static const LiveView view = sample_view();
  bool ok = false;
  std::string out;
  try {
    out = answer_line(
        line, [](const LabelScope&) { return view; }, &ok);
  } catch (...) {
    FUZZ_CHECK(false, "answer_line threw on " + shown(line));
  }
  const std::string what = fmt::format("{} for {}", shown(out), shown(line));
  FUZZ_CHECK(out.find('\n') == std::string::npos, what);
  const json response = json::parse(out, nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(response.is_object() && response.contains("ok") &&
                 response["ok"].is_boolean() && response["ok"] == ok,
             what);
  FUZZ_CHECK(parse_response(out).has_value() == ok, what);

  const auto request = parse_request(line);
  if (!request) {
    FUZZ_CHECK(!ok && !request.error().message.empty(), what);
    return;
  }
  // Echoed as given (what JSON can carry: a non-finite number is null).
  if (request->id)
    FUZZ_CHECK(response.contains("id") && response["id"] == *request->id, what);
  const std::string again_line = request_line(*request);
  FUZZ_CHECK(again_line.find('\n') == std::string::npos, again_line);
  const auto again = parse_request(again_line);
  FUZZ_CHECK(again && same_request(*again, *request),
             fmt::format("{} from {}", shown(again_line), shown(line)));
}

// A line as a client reads it from the daemon: anything.
void check_response(std::string_view line) {
  const auto response = parse_response(line);
  if (response) {
    FUZZ_CHECK(response->is_object() && (*response)["ok"] == true, shown(line));
  }
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = rssaudit::fuzz::as_text(data, size);
  // The daemon and the client split what they read at '\n', and the
  // daemon answers longer request lines without parsing them.
  const std::string_view line = text.substr(0, text.find('\n'));
  if (line.size() <= rssaudit::kMaxRequestBytes)
    rssaudit::fuzz::check_answer(line);
  rssaudit::fuzz::check_response(line);
  return 0;
}
