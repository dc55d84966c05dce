// The capture's doorbell (bpf/capture.bpf.h, capture/doorbell.h): a
// consumer that sleeps until it rings loses nothing to a burst many times
// larger than its streams.
#include <bpf/libbpf.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/kernel/capture_support.h"

namespace rssaudit {
namespace {

// Alternates a fault on an anonymous page and one on a shared memory page,
// `pairs` times: every update a record of its own (a repeat joins only an
// update of the same counter, bpf/rss_event.h).
[[noreturn]] void fault_two_counters(size_t pairs) {
  constexpr size_t kPage = 4096;
  const int fd = memfd_create("doorbell_test", 0);
  if (fd < 0 || ftruncate(fd, off_t(pairs * kPage)) != 0) _exit(3);
  auto* shared = static_cast<volatile char*>(
      mmap(nullptr, pairs * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  auto* anon = static_cast<volatile char*>(
      mmap(nullptr, pairs * kPage, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (shared == MAP_FAILED || anon == MAP_FAILED) _exit(3);
  madvise(const_cast<char*>(anon), pairs * kPage, MADV_NOHUGEPAGE);
  for (size_t i = 0; i < pairs; ++i) {
    anon[i * kPage] = 1;
    shared[i * kPage] = 1;
  }
  _exit(0);
}

TEST(Doorbell, ABurstWakesTheConsumerBeforeAStreamFills) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON)";
  CaptureOptions options;
  // 2 Ki slots per CPU, whatever the CPU count.
  const int cpus = libbpf_num_possible_cpus();
  ASSERT_GT(cpus, 0);
  options.stream_bytes = size_t(cpus) * 2048 * sizeof(rss_slot);
  auto opened = BpfCapture::open(options);
  if (!opened && opened.error().unsupported)
    GTEST_SKIP() << opened.error().message;
  ASSERT_TRUE(opened) << opened.error().message;
  BpfCapture& capture = **opened;
  ASSERT_EQ(capture.stream_records(), 2048u);
  // Twenty streams' worth of updates from one CPU.
  const size_t pairs = 10 * capture.stream_records();

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) fault_two_counters(pairs);
  uint64_t updates = 0, wakes = 0;
  const auto take = [&] {
    capture.poll(monotonic_ns(), 1u << 20, [&](const rss_event& e) {
      if (e.tgid == uint32_t(child) && e.kind == RSS_EV_UPDATE) ++updates;
    });
  };
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    // Only the doorbell ends this wait early: a consumer paced for a quiet
    // host would sleep through the burst.
    pollfd fd{capture.doorbell().fd(), POLLIN, 0};
    if (poll(&fd, 1, 2000) > 0) {
      capture.doorbell().answer();
      ++wakes;
    }
    take();
  }
  take();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_GT(wakes, 0u);
  EXPECT_GE(capture.doorbell().rings(), wakes);
  EXPECT_EQ(capture.drops(), 0u);
  // Both counters' faults, and the child's exit teardown besides.
  EXPECT_GE(updates, 2 * pairs);
}

}  // namespace
}  // namespace rssaudit
