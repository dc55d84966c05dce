// Records the capture lost, by cause (capture/bpf_capture.h losses()): a
// plain type the summary, the status and the metrics share.
#pragma once

#include <array>
#include <cstdint>

namespace rssaudit {

// Each cause on its own: a stream full under load and a program that never
// published its number call for different remedies.
struct CaptureLosses {
  uint64_t stream_full = 0, unpublished = 0, unexpanded = 0, missed_runs = 0;
  uint64_t total() const {
    return stream_full + unpublished + unexpanded + missed_runs;
  }
  bool operator==(const CaptureLosses&) const = default;
};

// Each cause's name, as the metrics' label, the JSON key and the summary's
// key (after "drops_") spell it, and its field: one list for every output.
struct CaptureCause {
  const char* name;
  uint64_t CaptureLosses::*count;
};
inline constexpr std::array<CaptureCause, 4> kCaptureCauses{{
    {"stream_full", &CaptureLosses::stream_full},
    {"unpublished", &CaptureLosses::unpublished},
    {"unexpanded", &CaptureLosses::unexpanded},
    {"missed_runs", &CaptureLosses::missed_runs},
}};

}  // namespace rssaudit
