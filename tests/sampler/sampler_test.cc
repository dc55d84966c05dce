// The sampler against real child processes of known RSS: every /proc source
// agrees with the others and with the memory the child touched, and a walk's
// gap from the precise counters is explained. Also the walk policy (pure) and
// the reader against a fake procfs tree.
#include "sampler/sampler.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "os/clock.h"
#include "os/faults_counted.h"
#include "sampler/pagemap_walk.h"
#include "sampler/proc_reader.h"
#include "tests/support/fake_proc.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kHuge = 2 * kMiB;
constexpr uint64_t kTmpfsMagic = 0x01021994;

// What a child maps after its "go", in bytes; each region is touched page
// by page (4 KiB pages: no THP).
struct ChildSpec {
  uint64_t anon = 0;  // private anonymous, written
  uint64_t zero = 0;  // private anonymous, only read: the zero page
  // Only read too, but huge-page aligned and MADV_HUGEPAGE: the huge zero
  // page where THP allows. A multiple of kHuge.
  uint64_t huge_zero = 0;
  int file_fd = -1;    // a file to map shared and read, `file` bytes
  uint64_t file = 0;   // (disk: RssFile, tmpfs: RssShmem)
  int shmem_fd = -1;   // a tmpfs file to map shared and write, `shmem`
  uint64_t shmem = 0;  // bytes
};

void* map_region(uint64_t bytes, int prot, int flags, int fd) {
  void* p = mmap(nullptr, bytes, prot, flags, fd, 0);
  if (p == MAP_FAILED) _exit(3);
  madvise(p, bytes, MADV_NOHUGEPAGE);
  return p;
}

// A forked child that stops twice: once before mapping anything (the
// baseline), once with `spec` mapped and touched; then it waits for its
// command pipe to close and exits.
class Child {
 public:
  explicit Child(const ChildSpec& spec) {
    int to_child[2];
    int from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0)
      std::abort();
    pid_ = fork();
    if (pid_ < 0) std::abort();
    if (pid_ == 0) {
      close(to_child[1]);
      close(from_child[0]);
      run(spec, to_child[0], from_child[1]);
    }
    close(to_child[0]);
    close(from_child[1]);
    command_ = to_child[1];
    ready_ = from_child[0];
    wait_ready();
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() { stop(); }

  pid_t pid() const { return pid_; }

  // Maps and touches the spec's memory; returns once it is done.
  void go() {
    const char c = 'g';
    ASSERT_EQ(write(command_, &c, 1), 1);
    wait_ready();
  }
  // Exits and is reaped: its pid is gone.
  void stop() {
    if (command_ >= 0) close(command_);
    command_ = -1;
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
    pid_ = -1;
    if (ready_ >= 0) close(ready_);
    ready_ = -1;
  }
  // Exits but is not reaped: a zombie.
  void exit_unreaped() {
    close(command_);
    command_ = -1;
    siginfo_t info;
    waitid(P_PID, pid_, &info, WEXITED | WNOWAIT);
  }

 private:
  [[noreturn]] RSSAUDIT_FAULTS_COUNTED static void run(const ChildSpec& spec,
                                                       int command, int ready) {
    // Faults in the vDSO (fork does not copy its page table entries), so
    // the walk sees a special mapping's page.
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    char c = 'r';
    if (write(ready, &c, 1) != 1 || read(command, &c, 1) != 1) _exit(1);
    if (spec.anon) {
      auto* p = static_cast<volatile char*>(map_region(
          spec.anon, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1));
      for (uint64_t i = 0; i < spec.anon; i += kPage) p[i] = 1;
    }
    if (spec.zero) {
      auto* p = static_cast<volatile char*>(
          map_region(spec.zero, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1));
      for (uint64_t i = 0; i < spec.zero; i += kPage) (void)p[i];
    }
    if (spec.huge_zero) {
      void* map = mmap(nullptr, spec.huge_zero + kHuge, PROT_READ,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (map == MAP_FAILED) _exit(3);
      const uintptr_t aligned =
          (reinterpret_cast<uintptr_t>(map) + kHuge - 1) & ~(kHuge - 1);
      madvise(reinterpret_cast<void*>(aligned), spec.huge_zero, MADV_HUGEPAGE);
      auto* p = reinterpret_cast<volatile char*>(aligned);
      for (uint64_t i = 0; i < spec.huge_zero; i += kHuge) (void)p[i];
    }
    if (spec.file) {
      auto* p = static_cast<volatile char*>(
          map_region(spec.file, PROT_READ, MAP_SHARED, spec.file_fd));
      for (uint64_t i = 0; i < spec.file; i += kPage) (void)p[i];
    }
    if (spec.shmem) {
      auto* p = static_cast<volatile char*>(map_region(
          spec.shmem, PROT_READ | PROT_WRITE, MAP_SHARED, spec.shmem_fd));
      for (uint64_t i = 0; i < spec.shmem; i += kPage) p[i] = 1;
    }
    c = 'd';
    if (write(ready, &c, 1) != 1) _exit(1);
    while (read(command, &c, 1) > 0) {
    }
    _exit(0);
  }

  // Returns once the child has reported and is asleep in read() on its
  // command pipe: after its report it may still fault in pages of libc on
  // the way there, which made a sample's sources disagree (1 run in 10).
  void wait_ready() {
    char c;
    ASSERT_EQ(read(ready_, &c, 1), 1);
    const std::string syscall_file =
        "/proc/" + std::to_string(pid_) + "/syscall";
    const std::string blocked = std::to_string(SYS_read) + " ";
    for (int tries = 0; tries < 5000; ++tries) {
      std::ifstream in(syscall_file);
      std::string line;
      if (std::getline(in, line) && line.starts_with(blocked)) return;
      usleep(1000);
    }
    FAIL() << "child " << pid_ << " never blocked in read(): " << syscall_file;
  }

  pid_t pid_ = -1;
  int command_ = -1;
  int ready_ = -1;
};

// A file of `bytes` in `dir`, written (so its pages are in the page cache)
// and unlinked; the descriptor stays valid.
int make_file(const fs::path& dir, uint64_t bytes) {
  std::string path = (dir / "rssaudit-sampler-XXXXXX").string();
  const int fd = mkstemp(path.data());
  if (fd < 0) return -1;
  unlink(path.c_str());
  const std::vector<char> block(kMiB, 'x');
  for (uint64_t done = 0; done < bytes; done += kMiB) {
    if (write(fd, block.data(), block.size()) != ssize_t(block.size())) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

bool is_tmpfs(const fs::path& dir) {
  struct statfs s;
  return statfs(dir.c_str(), &s) == 0 && uint64_t(s.f_type) == kTmpfsMagic;
}

// Why a pagemap walk cannot be tested here, or empty.
std::string pagemap_unreadable() {
  const UniqueFd fd(open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  uint64_t entry;
  if (!fd || pread(fd.get(), &entry, sizeof(entry), 0) != sizeof(entry))
    return std::string("/proc/self/pagemap unreadable: ") + strerror(errno);
  return {};
}

WalkPolicy walk_everything() {
  WalkPolicy p;
  p.all = true;
  p.min_interval_ns = 0;
  return p;
}

// GCC warns about designated initializers that leave members out. Reads
// stat again after status, as for a drift from /proc.
SampleRequest request(pid_t pid, bool walks = false,
                      std::optional<ProcessId> expected = std::nullopt,
                      std::optional<uint64_t> last_walk_ns = std::nullopt) {
  SampleRequest r;
  r.pid = uint32_t(pid);
  r.walks = walks;
  r.expected = expected;
  r.last_walk_ns = last_walk_ns;
  r.stat_again = true;
  return r;
}

uint64_t kb_to_pages(std::optional<uint64_t> kb) {
  return kb.value_or(0) * 1024 / kPage;
}

// Samples `pid` with every walk, expecting success.
Sample sample_all(ProcessSampler& sampler, pid_t pid) {
  const SampleResult r = sampler.sample(request(pid, true));
  EXPECT_EQ(r.outcome, SampleOutcome::kOk) << r.error;
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.sample.smaps_rollup.has_value());
  EXPECT_TRUE(r.sample.pagemap.has_value());
  return r.sample;
}

void print_sources(const char* what, const Sample& s) {
  const ProcStatus& st = s.status;
  const PagemapWalk& w = *s.pagemap;
  const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf(
      "%s: pages: stat rss (approximate) %llu, statm resident %llu, "
      "VmRSS %llu (anon %llu file %llu shmem %llu swap %llu), "
      "smaps_rollup Rss %llu; sampled in %llu us\n",
      what, u(s.stat.rss), u(s.statm.resident), u(kb_to_pages(st.vm_rss_kb)),
      u(kb_to_pages(st.rss_anon_kb)), u(kb_to_pages(st.rss_file_kb)),
      u(kb_to_pages(st.rss_shmem_kb)), u(kb_to_pages(st.vm_swap_kb)),
      u(kb_to_pages(s.smaps_rollup->rss_kb)),
      u((s.end_ns - s.begin_ns) / 1000));
  const int64_t gap =
      int64_t(kb_to_pages(st.vm_rss_kb)) - int64_t(w.total.present);
  std::printf(
      "%s: walk of %llu VMAs: present %llu (file/shared %llu, exclusive "
      "%llu), swapped %llu; [vdso] %llu, [vvar] %llu; zero page %llu (%llu "
      "flagged file/shared)\n"
      "%s: walk gap (VmRSS - present) %lld = -%llu zero-page entries "
      "(never in RSS) %+lld unexplained\n",
      what, u(w.vmas), u(w.total.present), u(w.total.present_file_or_shared),
      u(w.total.present_exclusive), u(w.total.swapped),
      u(w.kind(VmaKind::kVdso).present), u(w.kind(VmaKind::kVvar).present),
      u(w.present_zero_page), u(w.present_zero_page_file_or_shared), what,
      (long long)gap, u(w.present_zero_page),
      (long long)(gap + int64_t(w.present_zero_page)));
}

// For a quiescent process every precise source and both walks agree, per
// member, once the walk's zero-page entries are set aside (measured on
// 6.18; a running process would differ by its in-flight faults).
void expect_sources_agree(const Sample& s) {
  const ProcStatus& st = s.status;
  const uint64_t vm_rss = kb_to_pages(st.vm_rss_kb);
  EXPECT_EQ(s.statm.resident, vm_rss);
  EXPECT_EQ(kb_to_pages(s.smaps_rollup->rss_kb), vm_rss);
  const PagemapWalk& w = *s.pagemap;
  ASSERT_TRUE(w.zero_page_known);
  EXPECT_EQ(w.present_counted(), vm_rss);
  EXPECT_EQ(w.file_or_shared_counted(),
            kb_to_pages(st.rss_file_kb) + kb_to_pages(st.rss_shmem_kb));
  EXPECT_EQ(w.anon_counted(), kb_to_pages(st.rss_anon_kb));
  EXPECT_EQ(w.total.swapped, kb_to_pages(st.vm_swap_kb));
  EXPECT_LE(s.begin_ns, s.end_ns);
  // stat read again after status: the counters held still in between.
  ASSERT_TRUE(s.stat_after.has_value());
  EXPECT_EQ(s.stat_after->rss, s.stat.rss);
  EXPECT_EQ(s.rss_reads, RssReads::kStill);
}

class SamplerOnChild : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = pagemap_unreadable(); !why.empty())
      GTEST_SKIP() << why;
  }
  ProcessSampler sampler_{walk_everything()};
};

TEST_F(SamplerOnChild, TouchedAnonymousMemoryShowsInEverySource) {
  constexpr uint64_t kAnon = 64 * kMiB;
  Child child({.anon = kAnon});
  const Sample before = sample_all(sampler_, child.pid());
  child.go();
  const Sample after = sample_all(sampler_, child.pid());
  print_sources("baseline", before);
  print_sources("+64 MiB anon", after);

  EXPECT_EQ(after.id, before.id);
  const int64_t grown = int64_t(kb_to_pages(after.status.rss_anon_kb)) -
                        int64_t(kb_to_pages(before.status.rss_anon_kb));
  EXPECT_NEAR(grown, int64_t(kAnon / kPage), 8);
  expect_sources_agree(before);
  expect_sources_agree(after);
  EXPECT_GE(after.pagemap->kind(VmaKind::kAnonymous).present_anon(),
            kAnon / kPage);
  // Measured on 6.18: the vDSO page the child faulted in is present and
  // counted in RSS (a file page); [vvar] is a PFN map the walk skips.
  EXPECT_GE(after.pagemap->kind(VmaKind::kVdso).present, 1u);
  EXPECT_EQ(after.pagemap->kind(VmaKind::kVvar).present, 0u);
}

// Read-only anonymous memory: where read faults map a zero page it is in
// the walk but not in RSS (the walk gap); where the kernel maps none, each
// page is the process's own and in both.
TEST_F(SamplerOnChild, ZeroPageMappingsAreTheWalkGap) {
  constexpr uint64_t kZero = 16 * kMiB;
  constexpr uint64_t kHugeZero = 8 * kMiB;
  constexpr int64_t kRead = (kZero + kHugeZero) / kPage;
  const ZeroPagePfns zero = learn_zero_page_pfns();
  ASSERT_TRUE(zero.known()) << "PFNs hidden: not CAP_SYS_ADMIN";
  if (zero.unused)
    std::printf("this kernel maps no zero page: read faults get pages\n");
  // THP "never" or use_zero_page 0: read faults map small zero pages.
  else if (zero.huge_count == 0)
    std::printf("no huge zero page here: THP read faults map small ones\n");
  Child child({.zero = kZero, .huge_zero = kHugeZero});
  const Sample before = sample_all(sampler_, child.pid());
  child.go();
  const Sample after = sample_all(sampler_, child.pid());
  print_sources("+16 MiB + 8 MiB (huge) read-only anon", after);

  const int64_t grown = int64_t(kb_to_pages(after.status.vm_rss_kb)) -
                        int64_t(kb_to_pages(before.status.vm_rss_kb));
  if (zero.unused) {
    EXPECT_NEAR(grown, kRead, 8);
    EXPECT_EQ(after.pagemap->present_zero_page, 0u);
  } else {
    EXPECT_NEAR(grown, 0, 8);
    EXPECT_GE(int64_t(after.pagemap->present_zero_page),
              int64_t(before.pagemap->present_zero_page) + kRead);
  }
  expect_sources_agree(before);
  expect_sources_agree(after);
}

TEST_F(SamplerOnChild, DiskFilePagesAreRssFileAndTmpfsPagesRssShmem) {
  constexpr uint64_t kFile = 8 * kMiB;
  constexpr uint64_t kShmem = 12 * kMiB;
  fs::path disk_dir = fs::temp_directory_path();
  if (is_tmpfs(disk_dir)) disk_dir = fs::current_path();
  if (is_tmpfs(disk_dir)) GTEST_SKIP() << "no disk-backed directory found";
  const fs::path shm_dir = "/dev/shm";
  if (!is_tmpfs(shm_dir)) GTEST_SKIP() << "/dev/shm is not tmpfs";
  const int file_fd = make_file(disk_dir, kFile);
  const int shmem_fd = make_file(shm_dir, kShmem);
  ASSERT_GE(file_fd, 0);
  ASSERT_GE(shmem_fd, 0);

  Child child({.file_fd = file_fd,
               .file = kFile,
               .shmem_fd = shmem_fd,
               .shmem = kShmem});
  const Sample before = sample_all(sampler_, child.pid());
  child.go();
  const Sample after = sample_all(sampler_, child.pid());
  print_sources("+8 MiB disk file, +12 MiB tmpfs file", after);
  close(file_fd);
  close(shmem_fd);

  const auto grown = [&](std::optional<uint64_t> ProcStatus::*member) {
    return int64_t(kb_to_pages(after.status.*member)) -
           int64_t(kb_to_pages(before.status.*member));
  };
  // Besides the file, the child faults in a few pages of its own code and
  // libraries while it works (10 seen here under load).
  EXPECT_NEAR(grown(&ProcStatus::rss_file_kb), int64_t(kFile / kPage), 32);
  EXPECT_NEAR(grown(&ProcStatus::rss_shmem_kb), int64_t(kShmem / kPage), 8);
  EXPECT_NEAR(grown(&ProcStatus::rss_anon_kb), 0, 8);
  // The walk cannot tell file from shmem, but both are file/shared.
  EXPECT_GE(
      after.pagemap->file_or_shared_counted(),
      before.pagemap->file_or_shared_counted() + (kFile + kShmem) / kPage);
  expect_sources_agree(before);
  expect_sources_agree(after);
}

TEST(Sampler, ExitedProcessIsVanishedNotAFailure) {
  ProcessSampler sampler(walk_everything());
  Child reaped({});
  const pid_t reaped_pid = reaped.pid();
  ASSERT_EQ(sampler.sample(request(reaped_pid)).outcome, SampleOutcome::kOk);
  reaped.stop();
  EXPECT_EQ(sampler.sample(request(reaped_pid, true)).outcome,
            SampleOutcome::kVanished);

  Child zombie({});
  zombie.exit_unreaped();
  const SampleResult r = sampler.sample(request(zombie.pid(), true));
  EXPECT_EQ(r.outcome, SampleOutcome::kVanished) << r.error;

  const SamplerStats& stats = sampler.stats();
  EXPECT_EQ(stats.vanished, 2u);
  for (size_t f = 0; f < SamplerStats::kFiles; ++f) {
    EXPECT_EQ(stats.read_failures[f], 0u) << f;
    EXPECT_EQ(stats.parse_failures[f], 0u) << f;
  }
  EXPECT_EQ(stats.pagemap_read_failures, 0u);
}

TEST(Sampler, FilesOfAProcessDirOpenedBeforeItsExitReadAsVanished) {
  Child child({});
  const ProcDir dir = ProcDir::open("/proc", uint32_t(child.pid()));
  ASSERT_EQ(dir.status(), ReadStatus::kOk);
  ProcReader reader;
  ASSERT_TRUE(reader.read(dir, "stat").has_value());
  child.stop();
  // Whoever gets the pid next, this directory still means the old process.
  const Result<std::string_view, ReadError> r = reader.read(dir, "stat");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().status, ReadStatus::kVanished)
      << strerror(r.error().errnum);
}

TEST(Sampler, StartTimeChangeIsReportedAsAnotherProcess) {
  ProcessSampler sampler(walk_everything());
  Child child({});
  const SampleResult first = sampler.sample(request(child.pid()));
  ASSERT_EQ(first.outcome, SampleOutcome::kOk);
  EXPECT_EQ(
      sampler.sample(request(child.pid(), false, first.sample.id)).outcome,
      SampleOutcome::kOk);

  // As if the process we tracked had exited and its pid been reused.
  ProcessId old = first.sample.id;
  old.start_time -= 1;
  const SampleResult r = sampler.sample(request(child.pid(), false, old));
  EXPECT_EQ(r.outcome, SampleOutcome::kReplaced);
  EXPECT_EQ(r.sample.id, first.sample.id);  // the sample is of the new one
  EXPECT_EQ(sampler.stats().replaced, 1u);
}

TEST(Sampler, CgroupIsReadWithTheCheapSources) {
  // A child starts in its parent's cgroup: the sample must give the path
  // this process reads for itself.
  std::ifstream self("/proc/self/cgroup");
  const std::string text((std::istreambuf_iterator<char>(self)),
                         std::istreambuf_iterator<char>());
  const auto own = parse_proc_cgroup(text);
  ASSERT_TRUE(own.has_value()) << own.error().message;
  ProcessSampler sampler(walk_everything());
  Child child({});
  const SampleResult r = sampler.sample(request(child.pid()));
  ASSERT_EQ(r.outcome, SampleOutcome::kOk) << r.error;
  ASSERT_TRUE(r.sample.cgroup.has_value()) << r.error;
  EXPECT_EQ(r.sample.cgroup->v2_path, own.value().v2_path);
  const size_t cgroup = static_cast<size_t>(ProcFile::kCgroup);
  EXPECT_EQ(sampler.stats().read_failures[cgroup], 0u);
  EXPECT_EQ(sampler.stats().parse_failures[cgroup], 0u);
}

TEST(Sampler, WalksFollowThePolicyAndAreNotTakenUnasked) {
  WalkPolicy policy;
  policy.pids = {uint32_t(getpid())};
  ProcessSampler sampler(policy);
  const pid_t self = getpid();

  const SampleResult cheap = sampler.sample(request(self));
  EXPECT_FALSE(cheap.sample.walk_decision.has_value());
  EXPECT_FALSE(cheap.sample.smaps_rollup || cheap.sample.pagemap);

  const SampleResult too_soon =
      sampler.sample(request(self, true, std::nullopt, monotonic_ns()));
  EXPECT_EQ(too_soon.sample.walk_decision, WalkDecision::kTooSoon)
      << walk_decision_name(*too_soon.sample.walk_decision);
  EXPECT_FALSE(too_soon.sample.smaps_rollup || too_soon.sample.pagemap);

  const SampleResult walked = sampler.sample(request(self, true));
  EXPECT_EQ(walked.sample.walk_decision, WalkDecision::kWalk);
  EXPECT_TRUE(walked.sample.smaps_rollup && walked.sample.pagemap);
  EXPECT_EQ(sampler.stats().smaps_rollup_walks, 1u);
  EXPECT_EQ(sampler.stats().pagemap_walks, 1u);
}

// A tick's walks stop once they took its budget: the next tick takes them
// up, and no sampling tick holds the daemon's loop for long.
TEST(Sampler, WalksStopWhenTheTicksBudgetIsSpent) {
  WalkPolicy policy;
  policy.all = true;
  policy.min_interval_ns = 0;
  ProcessSampler sampler(policy);
  const pid_t self = getpid();
  sampler.start_tick(monotonic_ns() - kWalkBudgetPerTickNs - 1);
  const SampleResult spent = sampler.sample(request(self, true));
  EXPECT_EQ(spent.outcome, SampleOutcome::kOk) << "the cheap sources stand";
  EXPECT_EQ(spent.sample.walk_decision, WalkDecision::kTickSpent)
      << walk_decision_name(*spent.sample.walk_decision);
  EXPECT_FALSE(spent.sample.smaps_rollup || spent.sample.pagemap);
  sampler.start_tick(monotonic_ns());
  const SampleResult walked = sampler.sample(request(self, true));
  EXPECT_EQ(walked.sample.walk_decision, WalkDecision::kWalk);
  EXPECT_TRUE(walked.sample.pagemap.has_value());
}

TEST(WalkPolicy, OnlyOptedInProcessesAreWalked) {
  WalkPolicy p;
  p.min_interval_ns = 0;
  EXPECT_EQ(decide_walk(p, 7, 1000, {}, 0), WalkDecision::kNotOptedIn);
  p.pids = {7};
  EXPECT_EQ(decide_walk(p, 7, 1000, {}, 0), WalkDecision::kWalk);
  EXPECT_EQ(decide_walk(p, 8, 1000, {}, 0), WalkDecision::kNotOptedIn);
  p.all = true;
  EXPECT_EQ(decide_walk(p, 8, 1000, {}, 0), WalkDecision::kWalk);
}

TEST(WalkPolicy, ProcessesBelowTheSizeGateAreNotWalked) {
  WalkPolicy p;
  p.all = true;
  p.min_rss_pages = 256;
  EXPECT_EQ(decide_walk(p, 1, 255, {}, 0), WalkDecision::kTooSmall);
  EXPECT_EQ(decide_walk(p, 1, 256, {}, 0), WalkDecision::kWalk);
}

TEST(WalkPolicy, AProcessIsWalkedAtMostOncePerInterval) {
  WalkPolicy p;
  p.all = true;
  p.min_interval_ns = 1000;
  EXPECT_EQ(decide_walk(p, 1, 0, std::nullopt, 5), WalkDecision::kWalk);
  EXPECT_EQ(decide_walk(p, 1, 0, 5000, 5999), WalkDecision::kTooSoon);
  EXPECT_EQ(decide_walk(p, 1, 0, 5000, 6000), WalkDecision::kWalk);
  // A clock reading before the last walk: no time has passed.
  EXPECT_EQ(decide_walk(p, 1, 0, 5000, 10), WalkDecision::kTooSoon);
}

TEST(WalkPolicy, OptInIsJudgedBeforeSizeAndSizeBeforeTime) {
  WalkPolicy p;
  p.min_rss_pages = 10;
  p.min_interval_ns = 1000;
  EXPECT_EQ(decide_walk(p, 1, 0, 0, 1), WalkDecision::kNotOptedIn);
  p.all = true;
  EXPECT_EQ(decide_walk(p, 1, 0, 0, 1), WalkDecision::kTooSmall);
  EXPECT_EQ(decide_walk(p, 1, 10, 0, 1), WalkDecision::kTooSoon);
}

// A procfs tree in a temp dir, to drive the reader and the sampler's error
// paths with files /proc never produces.
class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("rssaudit-sampler-" + std::to_string(std::random_device{}()));
    fs::create_directories(root_ / "42");
  }
  void TearDown() override { fs::remove_all(root_); }
  void add(const std::string& name, const std::string& text) {
    std::ofstream(root_ / "42" / name, std::ios::binary) << text;
  }
  fs::path root_;
};

TEST_F(FakeProc, FileLargerThanTheBufferIsReadWholeAndTheBufferReused) {
  std::string big;
  for (int i = 0; big.size() < 100'000; ++i) big += std::to_string(i) + '\n';
  add("maps", big);
  ProcReader reader;
  const ProcDir dir = ProcDir::open(root_.string(), 42);
  Result<std::string_view, ReadError> r = reader.read(dir, "maps");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, big);
  const size_t capacity = reader.capacity();
  EXPECT_GE(capacity, big.size());
  r = reader.read(dir, "maps");
  EXPECT_EQ(r.value_or(""), big);
  EXPECT_EQ(reader.capacity(), capacity);
}

TEST_F(FakeProc, MissingFileOrPidIsVanished) {
  ProcReader reader;
  EXPECT_EQ(
      reader.read(ProcDir::open(root_.string(), 42), "stat").error().status,
      ReadStatus::kVanished);
  EXPECT_EQ(ProcDir::open(root_.string(), 43).status(), ReadStatus::kVanished);
}

TEST_F(FakeProc, MalformedFileIsAFailureCountedForItsFile) {
  add("stat", "42 (cat) R 1 42 42 0 -1 4194304 96 0 0 0 0 0 0 0 20 0 1 0 ");
  ProcessSampler sampler(WalkPolicy{}, root_.string());
  const SampleResult r = sampler.sample(request(42));
  EXPECT_EQ(r.outcome, SampleOutcome::kFailed);
  EXPECT_NE(r.error.find("/proc/PID/stat"), std::string::npos) << r.error;
  EXPECT_EQ(sampler.stats().parse_failures_of(ProcFile::kStat), 1u);
  EXPECT_EQ(sampler.stats().vanished, 0u);
}

// stat is read before statm and status and again after: a count that moved
// in between (a fold of 32 pages) is told, and both reads are kept.
TEST_F(FakeProc, AStatThatMovedBetweenTheReadsOfASampleIsCaught) {
  testing::write_process(root_ / "42", testing::stat_with(3516));
  ProcessSampler sampler(WalkPolicy{}, root_.string());
  const SampleResult still = sampler.sample(request(42));
  ASSERT_EQ(still.outcome, SampleOutcome::kOk) << still.error;
  EXPECT_EQ(still.sample.rss_reads, RssReads::kStill);

  SampleResult moved;
  {
    testing::ChangingFile stat(
        root_ / "42" / "stat",
        {testing::stat_with(3516), testing::stat_with(3548)});
    moved = sampler.sample(request(42));
    EXPECT_EQ(stat.opened(), 2);
  }
  ASSERT_EQ(moved.outcome, SampleOutcome::kOk) << moved.error;
  EXPECT_EQ(moved.sample.stat.rss, 3516u);
  EXPECT_EQ(moved.sample.stat_after->rss, 3548u);
  EXPECT_EQ(moved.sample.rss_reads, RssReads::kMoving);
  EXPECT_EQ(sampler.stats().read_failures_of(ProcFile::kStat), 0u);

  // Unasked (the caller's drift is the capture's), stat is read once.
  {
    testing::ChangingFile stat(
        root_ / "42" / "stat",
        {testing::stat_with(3516), testing::stat_with(3548)});
    SampleRequest once = request(42);
    once.stat_again = false;
    const SampleResult r = sampler.sample(once);
    EXPECT_EQ(r.sample.stat.rss, 3516u);
    EXPECT_FALSE(r.sample.stat_after || r.sample.rss_reads);
    EXPECT_EQ(sampler.sample(once).sample.stat.rss, 3548u);  // the next
  }
}

// A process whose exit began between the two reads of stat (PF_EXITING in
// the second): its counters are being torn down, whatever field 24 says.
TEST_F(FakeProc, AnExitBegunDuringASampleIsTold) {
  testing::write_process(root_ / "42", testing::stat_with(3516));
  ProcessSampler sampler(WalkPolicy{}, root_.string());
  SampleResult r;
  {
    testing::ChangingFile stat(
        root_ / "42" / "stat",
        {testing::stat_with(3516), testing::stat_with(3516, 0x400004)});
    r = sampler.sample(request(42));
  }
  ASSERT_EQ(r.outcome, SampleOutcome::kOk) << r.error;
  EXPECT_EQ(r.sample.rss_reads, RssReads::kExiting);
}

// Who a pid is: a process whose exit has begun is no longer alive, though
// it is no zombie yet (its mm may be gone already).
TEST_F(FakeProc, IdentifyTellsAliveExitingZombieAndGone) {
  ProcessSampler sampler(WalkPolicy{}, root_.string());
  using State = IdentityResult::State;
  testing::write_process(root_ / "42", testing::stat_with(3516));
  EXPECT_EQ(sampler.identify(42).state, State::kAlive);
  EXPECT_EQ(sampler.identify(42).cgroup->v2_path, "/test.slice");
  testing::write_process(root_ / "42", testing::stat_with(3516, 0x400004));
  EXPECT_EQ(sampler.identify(42).state, State::kExiting);
  std::string zombie = testing::stat_with(0, 0x400004);
  zombie.replace(zombie.find(") R "), 4, ") Z ");
  testing::write_process(root_ / "42", zombie);
  EXPECT_EQ(sampler.identify(42).state, State::kZombie);
  EXPECT_EQ(sampler.identify(43).state, State::kGone);
}

TEST_F(FakeProc, ADirectoryWhereAFileShouldBeIsAReadFailure) {
  fs::create_directories(root_ / "42" / "stat");
  ProcessSampler sampler(WalkPolicy{}, root_.string());
  const SampleResult r = sampler.sample(request(42));
  EXPECT_EQ(r.outcome, SampleOutcome::kFailed);
  EXPECT_EQ(sampler.stats().read_failures_of(ProcFile::kStat), 1u) << r.error;
}

}  // namespace
}  // namespace rssaudit
