// Writes the synthetic seeds of fuzz/corpus/ that no host file provides:
// recordings made with RecordWriter (record_reader_fuzz) and the raw record
// streams inside them (stream_records_fuzz, record_roundtrip_fuzz), from a
// model of the kernel's counters: lib/percpu_counter.c since 6.2, the
// per-task caches before. Run: fuzz_seed_corpus fuzz/corpus
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bpf/rss_event.h"
#include "core/formats/record_format.h"
#include "core/schemes/update.h"

namespace rssaudit::fuzz {
namespace {

using Bytes = std::vector<uint8_t>;

// The kernel side: every mm's counters and per-CPU slots, and the records
// the capture writes for them.
class Kernel {
 public:
  Kernel(uint16_t cpus, int32_t batch) : cpus_(cpus), batch_(batch) {}

  // An add of `pages` to `member` of `mm` on `cpu`, percpu_counter style.
  void add(uint64_t mm, uint32_t tid, uint32_t tgid, uint16_t cpu, int member,
           int32_t pages, uint8_t flags) {
    Counter& c = counters_[{mm, member}];
    c.slots.resize(cpus_);
    int32_t& slot = c.slots[cpu];
    const int64_t v = int64_t{slot} + pages;
    if (v >= batch_ || v <= -batch_) {
      c.count += v;
      slot = 0;
    } else {
      slot = static_cast<int32_t>(v);
    }
    if (flags & RSS_EVF_IN_FAULT) ++faults_[tid];
    rss_event e = record(RSS_EV_UPDATE, mm, tid, tgid, cpu);
    e.aux = c.count;
    e.slot = slot;
    // A slot left non-zero: its end is not taken (rss_event.h).
    e.span_ns = slot ? 0 : 250;
    e.member = static_cast<uint8_t>(member);
    e.flags = flags;
    e.faults = (flags & RSS_EVF_OWNER) ? faults_[tid] : 0;
    e.preempt = RSS_PREEMPT_KNOWN | 2;  // the page-table lock held
    events.push_back(e);
  }

  rss_event& life(uint8_t kind, uint64_t mm, uint32_t tid, uint32_t tgid,
                  uint16_t cpu, int64_t aux = 0, uint8_t flags = 0) {
    rss_event e = record(kind, mm, tid, tgid, cpu);
    e.aux = aux;
    e.flags = flags;
    e.span_ns = 400;
    events.push_back(e);
    return events.back();
  }

  std::vector<rss_event> events;

 private:
  struct Counter {
    int64_t count = 0;
    std::vector<int32_t> slots;
  };

  rss_event record(uint8_t kind, uint64_t mm, uint32_t tid, uint32_t tgid,
                   uint16_t cpu) {
    rss_event e{};
    e.kind = kind;
    e.mm = mm;
    e.tid = tid;
    e.tgid = tgid;
    e.cpu = cpu;
    e.start_ns = now_ns_ += 1500;
    return e;
  }

  uint16_t cpus_;
  int32_t batch_;
  uint64_t now_ns_ = 5'000'000'000;
  std::map<std::pair<uint64_t, int>, Counter> counters_;
  std::map<uint32_t, uint16_t> faults_;
};

constexpr uint64_t kMmA = 0xffff888004a1c000, kMmB = 0xffff888004a1d400,
                   kMmC = 0xffff88800512f800;
constexpr uint8_t kFault = RSS_EVF_OWNER | RSS_EVF_IN_FAULT;

// 6.2+: a fork, the child's faults on two CPUs, a thread, an exec, exits.
std::vector<rss_event> fork_exec_exit() {
  Kernel k(2, 32);
  k.life(RSS_EV_NEW_TASK, kMmA, 200, 200, 0, SIGCHLD);
  for (int i = 0; i < 12; ++i)  // the parent copies page tables
    k.add(kMmA, 100, 100, 0, kFilePages, 1, RSS_EVF_CREATING);
  for (int i = 0; i < 90; ++i)
    k.add(kMmA, 200, 200, i / 45, kAnonPages, 1, kFault);
  k.life(RSS_EV_NEW_TASK, kMmA, 201, 200, 1,
         CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD);
  for (int i = 0; i < 40; ++i)
    k.add(kMmA, 200 + i % 2, 200, i % 2, i % 5 ? kAnonPages : kFilePages, 1,
          kFault);
  k.add(kMmA, 200, 200, 0, kAnonPages, -37, RSS_EVF_OWNER);  // munmap
  k.life(RSS_EV_EXIT, kMmA, 201, 200, 1);
  k.life(RSS_EV_EXEC, kMmB, 200, 200, 0);
  for (int i = 0; i < 20; ++i)
    k.add(kMmB, 200, 200, 0, kFilePages, 1, kFault | RSS_EVF_CREATING);
  k.life(RSS_EV_EXIT_MMAP, kMmA, 200, 200, 0);
  for (int i = 0; i < 50; ++i) k.add(kMmB, 200, 200, 1, kAnonPages, 2, kFault);
  k.add(kMmB, 200, 200, 1, kShmemPages, 64, RSS_EVF_OWNER);
  k.life(RSS_EV_EXIT, kMmB, 200, 200, 1, 0, RSS_EVF_GROUP_DEAD);
  k.add(kMmB, 200, 200, 1, kAnonPages, -100, RSS_EVF_OWNER);
  k.life(RSS_EV_EXIT_MMAP, kMmB, 200, 200, 1);
  return k.events;
}

// 6.2+: an mm from before the capture, on four CPUs, and a capture loss.
std::vector<rss_event> older_mm_and_loss() {
  Kernel k(4, 32);
  for (int i = 0; i < 120; ++i)
    k.add(kMmC, 300 + i % 3, 300, static_cast<uint16_t>(i % 4),
          i % 7 ? kAnonPages : kFilePages, i % 11 ? 1 : -3, kFault);
  k.add(kMmC, 301, 300, 2, kAnonPages, 1, kFault);
  k.events.back().flags |= RSS_EVF_AFTER_LOSS;
  for (int i = 0; i < 40; ++i)
    k.add(kMmC, 300, 300, static_cast<uint16_t>(i % 4), kAnonPages, 1, kFault);
  k.add(kMmC, 999, 999, 3, kAnonPages, -5, 0);  // khugepaged
  return k.events;
}

// Before 6.2 (bpf/task_cache.bpf.c): cached faults, a sync announced and
// folded, atomic adds by the parent while it populates the child.
std::vector<rss_event> task_cache() {
  std::vector<rss_event> out;
  uint64_t now = 9'000'000'000;
  int64_t atomic = 0;
  uint16_t faults = 0;
  const auto record = [&](uint8_t kind, uint8_t flags, int64_t aux,
                          int32_t slot, uint32_t tid, uint8_t member) {
    rss_event e{};
    e.mm = kMmA;
    e.kind = kind;
    e.flags = flags;
    e.member = member;
    e.aux = aux;
    e.slot = slot;
    e.tid = e.tgid = tid;
    e.start_ns = (flags & RSS_EVF_CACHED) ? 0 : (now += 1000);
    e.span_ns = (flags & RSS_EVF_CACHED) ? 0 : 300;
    e.faults = (flags & RSS_EVF_ATOMIC) ? 0 : faults;
    out.push_back(e);
  };
  record(RSS_EV_NEW_TASK, 0, SIGCHLD, 0, 200, 0);
  for (int i = 0; i < 8; ++i)
    record(RSS_EV_UPDATE, RSS_EVF_ATOMIC | RSS_EVF_CREATING, ++atomic, 0, 100,
           kFilePages);
  for (int round = 0; round < 3; ++round) {
    int32_t cached = 0;
    for (int i = 0; i < 20; ++i) {
      ++faults;
      ++cached;
      record(RSS_EV_UPDATE, RSS_EVF_OWNER | RSS_EVF_CACHED | RSS_EVF_IN_FAULT,
             atomic, 1, 200, kAnonPages);
    }
    for (uint8_t m = 0; m < kMembers; ++m)
      record(RSS_EV_CACHE_SYNC, RSS_EVF_OWNER, m == kAnonPages ? cached : 0,
             64 + round, 200, m);
    atomic += cached;
    record(RSS_EV_UPDATE, RSS_EVF_OWNER | RSS_EVF_ATOMIC, atomic, 0, 200,
           kAnonPages);
    out.back().faults = static_cast<uint16_t>(cached);
  }
  record(RSS_EV_EXIT, RSS_EVF_GROUP_DEAD, 0, 0, 200, 0);
  record(RSS_EV_EXIT_MMAP, 0, 0, 0, 200, 0);
  return out;
}

void write(const std::filesystem::path& path, const Bytes& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  std::printf("%s: %zu bytes\n", path.c_str(), bytes.size());
}

Bytes recording(const RecordHeader& h, const std::vector<rss_event>& events,
                const std::vector<RecordedName>& names, uint32_t block) {
  RecordWriter w(h, block);
  Bytes out;
  const auto take = [&] {
    const auto b = w.take();
    out.insert(out.end(), b.begin(), b.end());
  };
  size_t next_name = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    // Each mm is named when first seen, as `rssaudit record` does.
    if (next_name < names.size() && events[i].mm == names[next_name].mm)
      w.append_name(names[next_name++]);
    if (w.append(events[i])) take();
  }
  w.flush();
  take();
  return out;
}

// stream_records_fuzz's input: the replay's figures, then the records.
Bytes stream(uint16_t cpus, int32_t batch, uint8_t advance_every,
             const std::vector<rss_event>& events) {
  Bytes out(8);
  out[0] = static_cast<uint8_t>((cpus - 1) & 0xff);
  out[1] = static_cast<uint8_t>((cpus - 1) >> 8);
  const auto b = static_cast<uint32_t>(batch - 1);
  for (int i = 0; i < 4; ++i) out[2 + i] = (b >> (8 * i)) & 0xff;
  out[6] = advance_every;
  out[7] = 0;  // preemptible
  const auto* bytes = reinterpret_cast<const uint8_t*>(events.data());
  out.insert(out.end(), bytes, bytes + events.size() * sizeof(rss_event));
  return out;
}

RecordHeader header(uint32_t cpus, int32_t batch, const char* release) {
  return RecordHeader{.nr_cpu_ids = cpus,
                      .online_cpus = cpus,
                      .percpu_batch = batch,
                      .page_size = 4096,
                      .start_realtime_ns = 1'767'225'600'000'000'000,
                      .start_monotonic_ns = 5'000'000'000,
                      .kernel_release = release,
                      .host_name = "fuzzhost"};
}

}  // namespace
}  // namespace rssaudit::fuzz

int main(int argc, char** argv) {
  using namespace rssaudit;
  using namespace rssaudit::fuzz;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const auto a = fork_exec_exit(), b = older_mm_and_loss(), c = task_cache();
  const std::vector<RecordedName> names = {
      {kMmA, 200, "worker"}, {kMmB, 200, "a) b (c\nd"}, {kMmC, 300, "java"}};
  const auto rec_a = recording(header(2, 32, "6.1.0-18-amd64"), a, names, 64);
  const auto rec_b = recording(header(4, 32, "6.8.0-rc1"), b, {names[2]}, 4096);
  const auto rec_c =
      recording(header(2, 32, "5.15.0-91-generic"), c, {names[0]}, 16);
  const auto reader = dir / "record_reader_fuzz";
  write(reader / "fork-exec-exit.rec", rec_a);
  write(reader / "older-mm-loss.rec", rec_b);
  write(reader / "task-cache.rec", rec_c);
  // Cut inside its second block, and a file of its header alone.
  write(reader / "cut-in-a-block.rec",
        Bytes(rec_a.begin(), rec_a.end() - 1000));
  write(reader / "header-only.rec",
        recording(header(1, 32, "6.1.0"), {}, {}, 1));

  const auto streams = dir / "stream_records_fuzz";
  write(streams / "fork-exec-exit", stream(2, 32, 63, a));
  write(streams / "older-mm-loss", stream(4, 32, 15, b));
  write(streams / "task-cache", stream(2, 32, 255, c));
  // Any bytes drive record_roundtrip_fuzz; records make plausible ones.
  const auto roundtrip = dir / "record_roundtrip_fuzz";
  write(roundtrip / "fork-exec-exit", stream(2, 32, 63, a));
  write(roundtrip / "task-cache", stream(2, 32, 255, c));
  return 0;
}
