// The capture's record stream (bpf/rss_event.h) replayed as
// capture/recording.cc's replay_file does, through DeltaReconstructor into
// an AuditPipeline: every mm is announced before its events and destroyed
// once, and every update counted is emitted once with one fidelity; and
// the memory the replay holds grows with the records it is given, not
// with the CPU count its header claims (up to 8 192).
#include <fmt/format.h>
#include <sanitizer/allocator_interface.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "audit/audit_pipeline.h"
#include "audit/delta_reconstructor.h"
#include "bpf/rss_event.h"
#include "core/formats/record_format.h"
#include "fuzz/fuzz_check.h"

namespace rssaudit::fuzz {
namespace {

// Heap bytes allocated less those freed since the hooks went in (signed:
// what was allocated before may be freed after), and the most since the
// replay began, as the sanitizer's allocator reports each call.
struct HeapWatch {
  int64_t live = 0;
  int64_t peak = 0;
};
HeapWatch heap;
void on_malloc(const volatile void*, size_t size) {
  heap.live += static_cast<int64_t>(size);
  heap.peak = std::max(heap.peak, heap.live);
}
void on_free(const volatile void* p) {
  heap.live -= static_cast<int64_t>(
      __sanitizer_get_allocated_size(const_cast<const void*>(p)));
}
[[maybe_unused]] const int kHooked =
    __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);

// What one record may add to the memory a replay holds: a new mm with its
// models (~23 KiB at 8 192 CPUs: bench/mm_footprint), or its first record
// in another group of 16 CPUs (~4 KiB), with its task and what the
// pipeline keeps of an ended mm. A snapshot or an unlocked
// add once wrote every CPU of an mm: 1 MiB at 8 192 CPUs.
constexpr size_t kBytesPerRecord = 32 << 10;
constexpr size_t kBytesFixed = 256 << 10;

// Records per input: a replay's work grows with the records held back.
constexpr size_t kMaxRecords = 4096;
// The input's first bytes: the recording header's figures and the drain.
constexpr size_t kConfigBytes = 8;

// Checks the sink's side of ReconstructorSink's promises, and forwards
// every call to the pipeline as replay does.
class CheckingSink : public ReconstructorSink {
 public:
  CheckingSink(AuditPipeline& pipeline, uint32_t nr_cpus)
      : pipeline_(pipeline), nr_cpus_(nr_cpus) {}

  void on_mm_created(const MmKey& mm, bool from_zero) override {
    FUZZ_CHECK(!live_.contains(mm.addr),
               fmt::format("mm {:#x} created twice", mm.addr));
    FUZZ_CHECK(
        mm.generation > last_generation_,
        fmt::format("generation {} after {}", mm.generation, last_generation_));
    last_generation_ = mm.generation;
    live_[mm.addr] = mm.generation;
    ++created_;
    pipeline_.on_mm_created(mm, from_zero);
  }
  void on_update(const MmKey& mm, const Update& u,
                 const UpdateInfo& info) override {
    check_live(mm, "update");
    FUZZ_CHECK(u.member < kMembers && u.cpu < nr_cpus_,
               fmt::format("member {} cpu {}", u.member, u.cpu));
    ++updates_;
    pipeline_.on_update(mm, u, info);
  }
  void on_life(const MmKey& mm, const LifeEvent& e) override {
    check_live(mm, "life event");
    FUZZ_CHECK(e.cpu < nr_cpus_, fmt::format("life event cpu {}", e.cpu));
    pipeline_.on_life(mm, e);
  }
  void on_cache_fold(const MmKey& mm, const LifeEvent& sync,
                     const UpdateInfo& info) override {
    check_live(mm, "cache fold");
    FUZZ_CHECK(sync.kind == LifeKind::kCacheSync && sync.count < kMembers,
               fmt::format("fold of member {}", sync.count));
    pipeline_.on_cache_fold(mm, sync, info);
  }
  void on_mm_destroyed(const MmKey& mm) override {
    check_live(mm, "destruction");
    live_.erase(mm.addr);
    ++destroyed_;
    pipeline_.on_mm_destroyed(mm);
  }
  void on_baseline(const MmKey& mm, int member, std::optional<int64_t> pages,
                   std::optional<int64_t> kernel_count) override {
    check_live(mm, "baseline");
    FUZZ_CHECK(member >= 0 && member < kMembers,
               fmt::format("baseline of member {}", member));
    pipeline_.on_baseline(mm, member, pages, kernel_count);
  }
  void on_loss() override { pipeline_.on_loss(); }

  size_t live() const { return live_.size(); }
  uint64_t created() const { return created_; }
  uint64_t destroyed() const { return destroyed_; }
  uint64_t updates() const { return updates_; }

 private:
  void check_live(const MmKey& mm, const char* what) {
    const auto it = live_.find(mm.addr);
    FUZZ_CHECK(it != live_.end() && it->second == mm.generation,
               fmt::format("{} of mm {:#x} generation {}, not live", what,
                           mm.addr, mm.generation));
  }

  AuditPipeline& pipeline_;
  uint32_t nr_cpus_;
  std::unordered_map<uint64_t, uint64_t> live_;  // addr -> generation
  uint64_t last_generation_ = 0;
  uint64_t created_ = 0, destroyed_ = 0, updates_ = 0;
};

uint64_t le(const uint8_t* p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

void check(const uint8_t* data, size_t size) {
  if (size < kConfigBytes) return;
  // A header a recording may hold (record_format.h's bounds).
  RecordHeader header;
  header.nr_cpu_ids = 1 + static_cast<uint32_t>(le(data, 2) % kMaxRecordedCpus);
  header.online_cpus = header.nr_cpu_ids;
  header.percpu_batch =
      1 + static_cast<int32_t>(le(data + 2, 4) % kMaxRecordedBatch);
  header.page_size = kMinPageSize;
  const size_t advance_every = 1 + data[6];
  ReconstructorOptions options{header.nr_cpu_ids, header.percpu_batch};
  // Replay's default (true) unless the input says the kernel is not
  // preemptible.
  options.preemptible = !(data[7] & 1);

  AuditPipeline pipeline(topology_of(header), /*finished_kept=*/kMaxRecords);
  CheckingSink sink(pipeline, header.nr_cpu_ids);
  DeltaReconstructor reconstructor(options);
  const size_t records =
      std::min((size - kConfigBytes) / sizeof(rss_event), kMaxRecords);
  const int64_t held_before = heap.live;
  heap.peak = heap.live;
  uint64_t latest_start = 0;
  for (size_t i = 0; i < records; ++i) {
    rss_event e;
    std::memcpy(&e, data + kConfigBytes + i * sizeof e, sizeof e);
    reconstructor.on_event(e, sink);
    latest_start = std::max<uint64_t>(latest_start, e.start_ns);
    // As replay_file after each read, or a live drain after each poll.
    if ((i + 1) % advance_every == 0) reconstructor.advance(latest_start, sink);
  }
  reconstructor.advance(latest_start, sink);
  reconstructor.flush(sink);
  const auto grown = static_cast<size_t>(heap.peak - held_before);
  FUZZ_CHECK(grown <= kBytesFixed + kBytesPerRecord * records,
             fmt::format("{} records at {} CPUs held up to {} bytes more",
                         records, header.nr_cpu_ids, grown));

  const ReconstructorStats& s = reconstructor.stats();
  const std::string stats = fmt::format(
      "{} records: events {} updates {} (exact {} ambiguous {} no_baseline "
      "{} inconsistent {} count_ahead {}; emitted {}) mms {}-{} (sink {}-{})",
      records, s.events, s.updates, s.exact, s.ambiguous, s.no_baseline,
      s.inconsistent, s.count_ahead, sink.updates(), s.mms_created,
      s.mms_destroyed, sink.created(), sink.destroyed());
  FUZZ_CHECK(s.events == records, stats);
  // Flushed: every update counted was emitted, with exactly one fidelity.
  FUZZ_CHECK(
      s.exact + s.ambiguous + s.no_baseline + s.inconsistent + s.count_ahead ==
          s.updates,
      stats);
  FUZZ_CHECK(sink.updates() == s.updates, stats);
  FUZZ_CHECK(s.bad_records <= s.events, stats);
  FUZZ_CHECK(
      sink.created() == s.mms_created && sink.destroyed() == s.mms_destroyed,
      stats);
  FUZZ_CHECK(sink.live() == reconstructor.live_mms() &&
                 pipeline.live_mms() == reconstructor.live_mms() &&
                 pipeline.finished_mms() == s.mms_destroyed,
             stats);
  FUZZ_CHECK(pipeline.fidelity_matched() <= pipeline.fidelity_checked(), stats);
  uint64_t updates = 0;
  for (const MmSummary& m : pipeline.summaries()) {
    updates += m.updates;
    FUZZ_CHECK(
        m.flagged <= m.updates && m.fidelity_matched <= m.fidelity_checked,
        fmt::format("mm {:#x}: updates {} flagged {} fidelity {}/{}",
                    m.key.addr, m.updates, m.flagged, m.fidelity_matched,
                    m.fidelity_checked));
  }
  FUZZ_CHECK(updates == s.updates,
             fmt::format("summaries hold {} updates: {}", updates, stats));
}

}  // namespace
}  // namespace rssaudit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rssaudit::fuzz::check(data, size);
  return 0;
}
