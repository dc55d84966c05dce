// The two maps of a capture over memory, laid out as the BPF side lays
// them out, for the readers' tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "capture/stream_reader.h"

namespace rssaudit {

// The two maps of a capture with `cpus` streams of `per_cpu` slots, and a
// producer that writes them as bpf/capture.bpf.h does.
class MemoryStreams {
 public:
  MemoryStreams(uint32_t cpus, uint32_t per_cpu)
      : per_cpu_(per_cpu), slots_(cpus * per_cpu), positions_(cpus) {}
  // Writes a record with sequence number `seq` into `cpu`'s stream;
  // published (head advanced) unless `publish` is false.
  void write(uint32_t cpu, uint64_t seq, bool publish = true) {
    rss_stream_position& at = positions_[cpu];
    const uint64_t pos = at.head + unpublished_[cpu];
    ASSERT_LT(pos - at.tail, per_cpu_) << "the producer would drop it";
    rss_slot& s = slots_[cpu * per_cpu_ + pos % per_cpu_];
    s.seq = seq;
    s.event = rss_event{};
    s.event.mm = 0x1000 + seq;  // the record tells its number
    s.event.cpu = static_cast<uint16_t>(cpu);
    if (publish)
      at.head += 1 + unpublished_[cpu], unpublished_[cpu] = 0;
    else
      ++unpublished_[cpu];
  }
  // The record written last on `cpu`.
  rss_event& last(uint32_t cpu) {
    const uint64_t pos = positions_[cpu].head + unpublished_[cpu] - 1;
    return slots_[cpu * per_cpu_ + pos % per_cpu_].event;
  }
  // Publishes what write(..., false) left unpublished on `cpu`.
  void publish(uint32_t cpu) {
    positions_[cpu].head += unpublished_[cpu];
    unpublished_[cpu] = 0;
  }
  StreamReader reader() {
    return StreamReader(slots_.data(), positions_.data(),
                        static_cast<uint32_t>(positions_.size()), per_cpu_);
  }
  const rss_stream_position& at(uint32_t cpu) const { return positions_[cpu]; }

 private:
  uint32_t per_cpu_;
  std::vector<rss_slot> slots_;
  std::vector<rss_stream_position> positions_;
  uint64_t unpublished_[8] = {};
};

}  // namespace rssaudit
