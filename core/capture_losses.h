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

// How often and how long a record's number not yet published held the
// streams back (capture/stream_reader.h): while one does, every CPU's
// stream fills behind it, and past their room the records are lost as
// stream_full.
struct StreamHolds {
  uint64_t count = 0, ns = 0, max_ns = 0;
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
