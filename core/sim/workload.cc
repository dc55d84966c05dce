#include "core/sim/workload.h"

#include <array>
#include <utility>

namespace rssaudit {
namespace {

constexpr std::array<std::pair<std::string_view, WorkloadKind>, 4> kWorkloads =
    {{{"hop", WorkloadKind::kHop},
      {"threads", WorkloadKind::kThreads},
      {"oscillate", WorkloadKind::kOscillate},
      {"forkstorm", WorkloadKind::kForkstorm}}};

}  // namespace

std::optional<WorkloadKind> parse_workload(std::string_view name) {
  for (const auto& [n, kind] : kWorkloads)
    if (n == name) return kind;
  return std::nullopt;
}

std::string_view workload_name(WorkloadKind kind) {
  for (const auto& [n, k] : kWorkloads)
    if (k == kind) return n;
  return "?";
}

}  // namespace rssaudit
