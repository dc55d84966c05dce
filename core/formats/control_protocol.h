// The control socket's protocol (docs/control-socket.md): one JSON object
// per line each way, one response per request, in order.
//
//   {"request":"health"}
//   {"request":"processes","top":N}            top is optional: all if absent
//   {"request":"process","pid":P}   or   {"request":"process","comm":"name"}
//
// Any request may carry "id" (any JSON value), echoed in its response.
// Responses: {"ok":true,"health":{...},...} or {"ok":false,"error":"..."}.
// Pure: the transport (daemon/control_server, cli/daemon_client) lives
// elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/formats/live_view.h"
#include "core/formats/live_view_json.h"
#include "core/result.h"

namespace rssaudit {

// Longest request line (without its '\n') a server reads; longer ones are
// answered with an error and the connection closed.
inline constexpr size_t kMaxRequestBytes = 64 * 1024;
// Deepest nesting of arrays and objects a request may hold (a request is
// two levels; an "id" may use the rest): refused beyond, whole.
inline constexpr int kMaxRequestDepth = 16;

// Where rssauditd listens and the CLI asks, unless told otherwise.
inline constexpr const char* kDefaultSocketPath = "/run/rssaudit/control.sock";

struct HealthRequest {};
struct ProcessesRequest {
  std::optional<uint64_t> top;  // the first `top` by |drift|; all if empty
};
// One process, by pid or by comm (exactly one of the two).
struct ProcessRequest {
  std::optional<uint32_t> pid;
  std::optional<std::string> comm;
};

struct Request {
  std::variant<HealthRequest, ProcessesRequest, ProcessRequest> kind;
  std::optional<nlohmann::json> id;  // echoed back when present
};

// Why a line is not a request.
struct RequestError {
  std::string message;
  std::optional<nlohmann::json> id;  // echoed in the error when readable
};
// The request on `line` (without its '\n'), or why it is not one.
Result<Request, RequestError> parse_request(std::string_view line);

// `r` as one line, without the '\n': what a client sends.
std::string request_line(const Request& r);

// The successful response to `r` over `view`; std::runtime_error naming
// the process when a 'process' request names none (or a comm names
// several). Ordered so "ok" (and "id") lead the line for a human reader.
nlohmann::ordered_json answer(const Request& r, const LiveView& view);

// {"ok":false,"error":...} (with "id" when given) on one line.
std::string error_line(std::string_view error,
                       const std::optional<nlohmann::json>& id = {});

// The processes a response to `r` names: none for health, the first `top`
// for processes, those of the pid (or every one, for a comm) for process.
LabelScope label_scope(const Request& r);

// Builds the view with its processes labelled as far as the scope says.
using ViewSource = std::function<LiveView(const LabelScope&)>;

// The response line (without '\n') to a request line. `view` is called
// only for a well-formed request, so garbage costs no snapshot, with the
// request's label_scope(); what it throws becomes an error response. Never
// throws. `*ok` (when given) says whether the response is a success.
std::string answer_line(std::string_view line, const ViewSource& view,
                        bool* ok = nullptr);

// A response line as a client reads it: the whole object when "ok" is
// true; the daemon's "error" (or why the line is not a response) when not.
Result<nlohmann::json> parse_response(std::string_view line);

}  // namespace rssaudit
