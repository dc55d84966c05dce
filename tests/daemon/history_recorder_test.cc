// HistoryRecorder fed by AuditPipeline with synthetic update streams (no
// BPF): the processes are real children of the test, so /proc answers as it
// would for the daemon, but every update is made up here.
#include "daemon/history_recorder.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "core/procfs/proc_cgroup.h"
#include "core/procfs/proc_stat.h"
#include "core/schemes/topology.h"
#include "core/schemes/upstream_percpu.h"
#include "store/store_queries.h"
#include "tests/support/fake_proc.h"
#include "tests/support/sqlite_count.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSecond = 1'000'000'000;
constexpr uint64_t kMmAddr = 0xffff888012345000;
// The run's: 3 counters x 2 CPUs x (32 - 1).
constexpr int64_t kRssBound = 186;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A child that waits to be killed, or exits at once and stays a zombie
// until reaped.
class Child {
 public:
  enum Mode { kWaiting, kZombie };
  explicit Child(Mode mode) {
    pid_ = fork();
    if (pid_ < 0) std::abort();
    if (pid_ == 0) {
      if (mode == kWaiting) pause();
      _exit(0);
    }
    if (mode == kZombie) {
      // Exited once its stat says so; it stays until reaped.
      for (int i = 0; i < 2000 && state() != 'Z'; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~Child() { reap(); }
  void reap() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  uint32_t pid() const { return static_cast<uint32_t>(pid_); }
  // Once in pause(), after the faults that got it there.
  void wait_until_asleep() const {
    for (int i = 0; i < 2000 && state() != 'S'; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ProcStat stat() const {
    auto s = parse_proc_stat(read_file(fmt::format("/proc/{}/stat", pid_)));
    EXPECT_TRUE(s.has_value());
    return s.value_or(ProcStat{});
  }

 private:
  char state() const {
    auto s = parse_proc_stat(read_file(fmt::format("/proc/{}/stat", pid_)));
    return s.has_value() ? s->state : '?';
  }
  pid_t pid_ = -1;
};

// Options sampling quiet processes every `interval_s` (0: not at all),
// only `pid` if given.
RecorderOptions quiet(double interval_s, uint32_t pid = 0) {
  RecorderOptions o;
  o.quiet_interval_s = interval_s;
  o.pid = pid;
  return o;
}

class HistoryRecorderTest : public ::testing::Test {
 protected:
  HistoryRecorderTest()
      : topology_(Topology::for_cpus(2)),
        kernel_(topology_),
        pipeline_(topology_),
        sampler_(WalkPolicy{}) {}

  void SetUp() override {
    std::string templ = fs::temp_directory_path() / "rssaudit-rec-XXXXXX";
    dir_ = mkdtemp(templ.data());
    path_ = dir_ / "rssaudit.db";
    auto store = Store::open(path_, {});
    ASSERT_TRUE(store.has_value()) << store.error().message;
    store_ = std::move(store).value();
    store_->begin_run(RunInfo{.host = "h",
                              .kernel_release = "6.1",
                              .nr_cpus = 2,
                              .batch = 32,
                              .page_size = 4096,
                              .rssaudit_version = "test",
                              .started_ns = 0});
    // The host's quiet processes are left out but where a test asks.
    recorder_ = std::make_unique<HistoryRecorder>(*store_, sampler_, quiet(0),
                                                  4096, true, kRssBound);
    pipeline_.set_exit_hook(
        [this](AuditPipeline::LiveMm& mm) { recorder_->on_exit(mm, now_); });
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `tgid` faults in (or unmaps) `pages` one at a time, alternating CPUs;
  // the kernel's count is the upstream model's own, as on a real kernel.
  void updates(uint32_t tgid, int pages) { updates(key_, tgid, pages); }
  void updates(const MmKey& key, uint32_t tgid, int pages) {
    for (int i = 0; i < std::abs(pages); ++i) {
      Update u;
      u.time_ns = static_cast<uint64_t>(++clock_);
      u.task = tgid;
      u.cpu = static_cast<uint32_t>(i % 2);
      u.delta = pages > 0 ? 1 : -1;
      u.member = kAnonPages;
      kernel_.add(u);
      UpdateInfo info;
      info.end_ns = u.time_ns;
      info.kernel_count = kernel_.approximate(kAnonPages);
      info.tgid = tgid;
      pipeline_.on_update(key, u, info);
    }
  }
  // The last thread of process `tgid` exits, its exit record giving its
  // start time (0: none).
  void owner_exits(const MmKey& key, uint32_t tgid, uint64_t start_ticks) {
    LifeEvent last_thread{LifeKind::kTaskExit, tgid, 0};
    last_thread.process = tgid;
    last_thread.process_ended = true;
    last_thread.start_ticks = start_ticks;
    pipeline_.on_life(key, last_thread);
  }
  void mm_ends(const MmKey& key) {
    pipeline_.on_life(key, LifeEvent{LifeKind::kMmExit, 0, 0});
    pipeline_.on_mm_destroyed(key);
  }
  void mm_ends() { mm_ends(key_); }
  std::unique_ptr<StoreReader> flushed_reader() {
    const Result<void, StoreError> s = store_->flush();
    EXPECT_TRUE(s.has_value()) << s.error().message;
    auto reader = StoreReader::open_read_only(path_);
    EXPECT_TRUE(reader.has_value()) << reader.error().message;
    return std::move(reader).value();
  }
  int64_t count(const std::string& sql) {
    return testing::sqlite_count(path_, sql);
  }

  Topology topology_;
  UpstreamPercpu kernel_;
  AuditPipeline pipeline_;
  ProcessSampler sampler_;
  fs::path dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<HistoryRecorder> recorder_;
  const MmKey key_{kMmAddr, 1};
  int64_t clock_ = 0;
  int64_t now_ = 10 * kSecond;
};

TEST_F(HistoryRecorderTest, ProcessEndingBeforeAnyTickIsRecordedFromItsZombie) {
  Child child(Child::kZombie);
  const ProcStat zombie = child.stat();
  ASSERT_EQ(zombie.state, 'Z');
  const auto cgroup =
      parse_proc_cgroup(read_file(fmt::format("/proc/{}/cgroup", child.pid())));
  ASSERT_TRUE(cgroup.has_value());

  recorder_->sample(pipeline_, 9 * kSecond);  // a tick before it existed
  pipeline_.on_mm_created(key_, true);
  updates(child.pid(), 40);
  updates(child.pid(), -37);  // 3 pages left at exit_mmap: an anomaly
  mm_ends();

  EXPECT_EQ(recorder_->stats().unsampled_exits, 1u);
  EXPECT_EQ(recorder_->stats().unnamed_exits, 0u);
  EXPECT_EQ(recorder_->stats().residues, 1u);
  auto reader = flushed_reader();
  auto found = reader->processes_with_pid(child.pid());
  ASSERT_TRUE(found.has_value());
  ASSERT_EQ(found->size(), 1u);
  const ProcessSummary& p = found.value()[0];
  EXPECT_EQ(p.identity.start_ticks, zombie.start_time);
  EXPECT_EQ(p.comm, zombie.comm);
  EXPECT_EQ(p.cgroup, cgroup.value().v2_path.value_or(""));
  EXPECT_EQ(p.exit_ns, now_);
  EXPECT_EQ(p.exit_residue, 3);
  EXPECT_EQ(p.true_peak, 40);  // no sample row holds it: it never ticked
  EXPECT_EQ(count(fmt::format("SELECT count(*) FROM anomalies WHERE "
                              "process_id = {} AND kind = 'exit_residue'",
                              p.id)),
            1);
  // Its whole life's largest errors, per scheme, since the previous tick.
  auto errors = reader->latest_model_errors(p.id);
  ASSERT_TRUE(errors.has_value()) << errors.error().message;
  ASSERT_EQ(errors->size(), SchemeSet::kCount);
  EXPECT_EQ(errors.value()[0].start_ns, 9 * kSecond);
  EXPECT_EQ(errors.value()[0].end_ns, now_);
  // Upstream at batch 32 on 2 CPUs: up to 31 pages per CPU not yet folded.
  EXPECT_GT(errors.value()[0].largest_error, 0);
  EXPECT_LE(errors.value()[0].largest_error, 2 * 31);
  // And what a read costs its readers: stat one line, status the central
  // count and both CPUs' slots.
  EXPECT_EQ(errors.value()[0].read_cost, (ReadCost{1, 1 + 2}));
}

TEST_F(HistoryRecorderTest,
       ProcessReapedBeforeItsExitIsSeenHasUnknownIdentity) {
  Child child(Child::kWaiting);
  const uint32_t pid = child.pid();
  child.reap();  // gone from /proc before the exit event is handled
  pipeline_.on_mm_created(key_, true);
  updates(pid, 5);
  updates(pid, -5);
  mm_ends();

  EXPECT_EQ(recorder_->stats().unnamed_exits, 1u);
  EXPECT_EQ(recorder_->stats().residues, 0u);
  auto reader = flushed_reader();
  auto found = reader->processes_with_pid(pid);
  ASSERT_TRUE(found.has_value());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ(found.value()[0].identity.start_ticks, 0u);  // unknown
  EXPECT_EQ(found.value()[0].comm, "");                  // unknown
  EXPECT_EQ(found.value()[0].exit_residue, 0);
  EXPECT_EQ(count("SELECT count(*) FROM anomalies"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM model_errors"),
            static_cast<int64_t>(SchemeSet::kCount));
}

TEST_F(HistoryRecorderTest, ProcessReapedBeforeItsExitIsNamedByTheCapture) {
  Child child(Child::kWaiting);
  const uint32_t pid = child.pid();
  child.reap();
  std::vector<uint32_t> asked;
  recorder_->set_exited_lookup(
      [&](uint32_t tgid) -> std::optional<exited_process> {
        asked.push_back(tgid);
        exited_process who{};
        who.start_ticks = 4321;
        std::strncpy(who.comm, "short-lived-job", sizeof(who.comm));
        return who;
      });
  pipeline_.on_mm_created(key_, true);
  updates(pid, 7);
  updates(pid, -7);
  mm_ends();

  EXPECT_EQ(asked, std::vector<uint32_t>{pid});
  EXPECT_EQ(recorder_->stats().unnamed_exits, 0u);
  auto reader = flushed_reader();
  auto found = reader->processes_with_pid(pid);
  ASSERT_TRUE(found.has_value());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ(found.value()[0].identity.start_ticks, 4321u);
  EXPECT_EQ(found.value()[0].comm, "short-lived-job");
  EXPECT_EQ(found.value()[0].true_peak, 7);
}

// The process ended and its pid went to another before the mm's end was
// handled: the live pid is not this mm's process, whose exit row is kept
// (once, it was taken for an exec and lost, uncounted).
TEST_F(HistoryRecorderTest, APidReusedBeforeTheMmEndsKeepsTheEndedProcess) {
  const auto pid = static_cast<uint32_t>(getpid());  // alive: "the new one"
  recorder_->set_exited_lookup(
      [&](uint32_t tgid) -> std::optional<exited_process> {
        exited_process who{};
        who.tgid = tgid;
        who.start_ticks = 1234;
        std::strncpy(who.comm, "first-user", sizeof(who.comm));
        return who;
      });
  pipeline_.on_mm_created(key_, true);
  updates(pid, 9);
  owner_exits(key_, pid, 0);
  updates(pid, -9);
  mm_ends();

  EXPECT_EQ(recorder_->stats().exits, 1u);
  EXPECT_EQ(recorder_->stats().unsampled_exits, 1u);
  auto reader = flushed_reader();
  auto found = reader->processes_with_pid(pid);
  ASSERT_TRUE(found.has_value());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ(found.value()[0].identity.start_ticks, 1234u);
  EXPECT_EQ(found.value()[0].comm, "first-user");
  EXPECT_EQ(found.value()[0].exit_ns, now_);
}

// Short processes that reuse one pid and end before the first exit is
// handled: the exited slot (and /proc) name only the last of them. Each
// exit record's start time keeps them apart, each its own process row; a
// name that belongs to another start time is not taken.
TEST_F(HistoryRecorderTest, ExitsOfOnePidReusedQuicklyAreKeptApart) {
  Child reaped(Child::kWaiting);
  const uint32_t pid = reaped.pid();
  reaped.reap();  // gone from /proc: named by the exited slot alone
  recorder_->set_exited_lookup(
      [&](uint32_t tgid) -> std::optional<exited_process> {
        exited_process who{};
        who.tgid = tgid;
        who.start_ticks = 3003;  // the last to end with this pid
        std::strncpy(who.comm, "third", sizeof(who.comm));
        return who;
      });
  for (uint64_t start : {1001, 2002, 3003}) {
    const MmKey key{kMmAddr + start * 4096, 1};
    pipeline_.on_mm_created(key, true);
    updates(key, pid, 4);
    owner_exits(key, pid, start);
    updates(key, pid, -4);
    mm_ends(key);
  }
  EXPECT_EQ(recorder_->stats().exits, 3u);
  EXPECT_EQ(recorder_->stats().unnamed_exits, 2u);
  auto reader = flushed_reader();
  auto found = reader->processes_with_pid(pid);
  ASSERT_TRUE(found.has_value());
  ASSERT_EQ(found->size(), 3u);
  std::map<uint64_t, std::string> by_start;
  for (const ProcessSummary& p : found.value()) {
    by_start[p.identity.start_ticks] = p.comm;
    EXPECT_EQ(p.exit_ns, now_);
  }
  EXPECT_EQ(by_start, (std::map<uint64_t, std::string>{
                          {1001, ""}, {2002, ""}, {3003, "third"}}));
}

// An exit whose exit_mmap record was lost: the mm lives on in the audit
// while its process is gone. Two ticks find it so (the first may come
// before the record is drained); it is then handed back to be ended, and
// its end is an exit row with an `exit_unseen` anomaly, no residue.
TEST_F(HistoryRecorderTest, AProcessGoneAtTwoTicksWhileItsMmLivesEndsUnseen) {
  auto child = std::make_unique<Child>(Child::kWaiting);
  child->wait_until_asleep();
  const uint32_t pid = child->pid();
  pipeline_.on_mm_created(key_, true);
  updates(pid, 5);
  recorder_->sample(pipeline_, now_);
  EXPECT_TRUE(recorder_->take_ended_unseen().empty()) << "alive";
  child->reap();  // gone, and no record of its end comes
  recorder_->sample(pipeline_, now_ + kSecond);
  EXPECT_TRUE(recorder_->take_ended_unseen().empty()) << "one tick only";
  recorder_->sample(pipeline_, now_ + 2 * kSecond);
  const std::vector<MmKey> ended = recorder_->take_ended_unseen();
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0], key_);
  // What LiveAudit::end_unseen() makes of it.
  now_ += 3 * kSecond;
  mm_ends();
  EXPECT_EQ(recorder_->stats().exits, 1u);
  EXPECT_EQ(recorder_->stats().exits_unseen, 1u);
  flushed_reader();
  EXPECT_EQ(count("SELECT count(*) FROM processes WHERE exit_ns IS NOT NULL "
                  "AND exit_residue IS NULL"),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM anomalies WHERE kind = 'exit_unseen'"),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM anomalies WHERE kind = "
                  "'exit_residue'"),
            0);
}

// An exec whose old mm's exit_mmap record was lost: the process lives on
// with a newer mm, and the older one is ended unseen, with no exit row
// (the process did not end).
TEST_F(HistoryRecorderTest, AnOlderMmOfALiveProcessEndsUnseenWithoutAnExit) {
  Child child(Child::kWaiting);
  child.wait_until_asleep();
  const MmKey newer{kMmAddr + 4096, 2};
  pipeline_.on_mm_created(key_, true);
  updates(key_, child.pid(), 5);
  pipeline_.on_mm_created(newer, true);
  updates(newer, child.pid(), 3);
  recorder_->sample(pipeline_, now_);
  recorder_->sample(pipeline_, now_ + kSecond);
  const std::vector<MmKey> ended = recorder_->take_ended_unseen();
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0], key_);
  mm_ends(key_);
  EXPECT_EQ(recorder_->stats().exits, 0u);
  recorder_->sample(pipeline_, now_ + 2 * kSecond);
  EXPECT_TRUE(recorder_->take_ended_unseen().empty()) << "the newer one lives";
}

TEST_F(HistoryRecorderTest, MmWithoutUpdatesOrOfALiveProcessGetsNoExitRow) {
  // An exec replaced the mm of this (live) process: no exit.
  pipeline_.on_mm_created(key_, true);
  updates(static_cast<uint32_t>(getpid()), 2);
  mm_ends();
  // An mm that never changed a counter names no process.
  pipeline_.on_mm_created(MmKey{kMmAddr + 4096, 1}, true);
  pipeline_.on_mm_destroyed(MmKey{kMmAddr + 4096, 1});

  EXPECT_EQ(recorder_->stats().exits, 0u);
  flushed_reader();
  EXPECT_EQ(count("SELECT count(*) FROM processes"), 0);
}

// --cgroup: a process is recorded when its cgroup v2 path is the one given
// or below it, and only then; a reload changes it from the next tick.
TEST_F(HistoryRecorderTest, CgroupFilterRecordsOnlyThatSubtree) {
  Child child(Child::kWaiting);
  const auto cgroup =
      parse_proc_cgroup(read_file(fmt::format("/proc/{}/cgroup", child.pid())));
  ASSERT_TRUE(cgroup.has_value());
  if (!cgroup.value().v2_path) GTEST_SKIP() << "no cgroup v2 on this host";
  const std::string own = *cgroup.value().v2_path;
  pipeline_.on_mm_created(key_, true);
  updates(child.pid(), 20);

  RecorderOptions options = quiet(0);
  options.cgroup = own + "-elsewhere";
  recorder_->set_options(options);
  recorder_->sample(pipeline_, 11 * kSecond);
  EXPECT_EQ(recorder_->identity(kMmAddr), nullptr) << "outside " << own;
  EXPECT_EQ(count("SELECT COUNT(*) FROM processes"), 0);

  options.cgroup = own;
  recorder_->set_options(options);
  recorder_->sample(pipeline_, 12 * kSecond);
  const RecordedIdentity* who = recorder_->identity(kMmAddr);
  ASSERT_NE(who, nullptr);
  EXPECT_EQ(who->cgroup, own);
  static_cast<void>(store_->flush());  // checked by the count below
  EXPECT_EQ(count("SELECT COUNT(*) FROM samples"), 1);
}

// --min-updates: a process is recorded once its mm made that many updates,
// from the tick that sees them on.
TEST_F(HistoryRecorderTest, MinUpdatesRecordsOnlyBusyProcesses) {
  Child child(Child::kWaiting);
  RecorderOptions options = quiet(0);
  options.min_updates = 30;
  recorder_->set_options(options);
  pipeline_.on_mm_created(key_, true);
  updates(child.pid(), 20);
  recorder_->sample(pipeline_, 11 * kSecond);
  EXPECT_EQ(recorder_->identity(kMmAddr), nullptr) << "20 of 30 updates";
  updates(child.pid(), 10);
  recorder_->sample(pipeline_, 12 * kSecond);
  ASSERT_NE(recorder_->identity(kMmAddr), nullptr) << "30 of 30";
  static_cast<void>(store_->flush());  // checked by the count below
  EXPECT_EQ(count("SELECT COUNT(*) FROM samples"), 1);
}

// --min-rss: a small process gets no rows, neither at ticks nor at its exit
// (there by its true peak); one whose peak reached the threshold does.
TEST_F(HistoryRecorderTest, MinRssLeavesOutSmallProcessesAlsoAtExit) {
  Child child(Child::kZombie);
  RecorderOptions options = quiet(0);
  options.min_rss_pages = 30;
  recorder_->set_options(options);
  pipeline_.on_mm_created(key_, true);
  updates(child.pid(), 29);
  updates(child.pid(), -29);
  mm_ends();
  EXPECT_EQ(recorder_->stats().below_min_rss, 1u);
  static_cast<void>(store_->flush());  // checked by the count below
  EXPECT_EQ(count("SELECT COUNT(*) FROM processes"), 0) << "peak 29 of 30";

  const MmKey next{kMmAddr, 2};
  pipeline_.on_mm_created(next, true);
  updates(next, child.pid(), 30);
  updates(next, child.pid(), -30);
  mm_ends(next);
  EXPECT_EQ(recorder_->stats().below_min_rss, 1u);
  EXPECT_EQ(recorder_->stats().exits, 1u);
  static_cast<void>(store_->flush());  // checked by the count below
  EXPECT_EQ(count("SELECT COUNT(*) FROM processes WHERE true_peak = 30"), 1);
}

TEST_F(HistoryRecorderTest, TicksRecordFidelityAndTheIdentityIsLookedUpByMm) {
  Child child(Child::kWaiting);
  pipeline_.on_mm_created(key_, true);
  EXPECT_EQ(recorder_->identity(kMmAddr), nullptr);  // not sampled yet
  updates(child.pid(), 50);
  recorder_->sample(pipeline_, 11 * kSecond);
  updates(child.pid(), 7);
  recorder_->sample(pipeline_, 12 * kSecond);

  const RecordedIdentity* who = recorder_->identity(kMmAddr);
  ASSERT_NE(who, nullptr);
  const ProcStat stat = child.stat();
  EXPECT_EQ(who->pid, child.pid());
  EXPECT_EQ(who->start_ticks, stat.start_time);
  EXPECT_EQ(who->comm, stat.comm);
  const auto cgroup =
      parse_proc_cgroup(read_file(fmt::format("/proc/{}/cgroup", child.pid())));
  ASSERT_TRUE(cgroup.has_value());
  EXPECT_EQ(who->cgroup, cgroup.value().v2_path.value_or(""));
  EXPECT_EQ(recorder_->identity(kMmAddr + 4096), nullptr);

  auto reader = flushed_reader();
  auto rows = reader->process_history(who->process_id, 0, 100 * kSecond);
  ASSERT_TRUE(rows.has_value()) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  // Per interval: every event was compared, and the model is the kernel.
  EXPECT_EQ(rows.value()[0].row.fidelity_checked, 50);
  EXPECT_EQ(rows.value()[0].row.fidelity_matched, 50);
  EXPECT_EQ(rows.value()[1].row.fidelity_checked, 7);
  EXPECT_EQ(rows.value()[1].row.fidelity_matched, 7);

  // The mm ends while its process lives on (as after an exec): no exit
  // row, and the mm is no longer labelled.
  mm_ends();
  EXPECT_EQ(recorder_->identity(kMmAddr), nullptr);
  EXPECT_EQ(recorder_->stats().exits, 0u);
}

// A tick in slices, as the daemon runs it so its loop answers between
// them: a slice whose time is up samples one process and stops; an mm
// that ends between slices is recorded by its exit, not sampled.
TEST_F(HistoryRecorderTest,
       ATickInSlicesSamplesEachLiveMmOnceAndSkipsTheEnded) {
  Child first(Child::kWaiting), second(Child::kWaiting), third(Child::kWaiting);
  const MmKey keys[] = {{kMmAddr, 1}, {kMmAddr + 4096, 1}, {kMmAddr + 8192, 1}};
  const uint32_t pids[] = {first.pid(), second.pid(), third.pid()};
  for (int i = 0; i < 3; ++i) {
    pipeline_.on_mm_created(keys[i], true);
    updates(keys[i], pids[i], 10 + i);
  }
  recorder_->begin_tick(pipeline_, 11 * kSecond);
  EXPECT_TRUE(recorder_->tick_open());
  EXPECT_FALSE(recorder_->continue_tick(pipeline_, 11 * kSecond, 0));
  EXPECT_EQ(recorder_->stats().samples_written, 1u);
  // One not sampled yet ends between the slices: of the two left, one
  // sample, in two slices (the ended one is passed over).
  uint64_t ended = 0;
  for (int i = 0; i < 3; ++i)
    if (recorder_->identity(keys[i].addr) == nullptr && ended == 0) {
      mm_ends(keys[i]);
      ended = keys[i].addr;
    }
  ASSERT_NE(ended, 0u);
  EXPECT_FALSE(recorder_->continue_tick(pipeline_, 12 * kSecond, 0));
  EXPECT_TRUE(recorder_->continue_tick(pipeline_, 12 * kSecond, 0));
  EXPECT_FALSE(recorder_->tick_open());
  EXPECT_EQ(recorder_->stats().samples_written, 2u);
  // A tick unsliced samples the two left, each once.
  recorder_->sample(pipeline_, 13 * kSecond);
  EXPECT_EQ(recorder_->stats().samples_written, 4u);
  ASSERT_TRUE(store_->flush().has_value());
  EXPECT_EQ(count("SELECT count(*) FROM samples WHERE time_ns = " +
                  std::to_string(12 * kSecond)),
            1);
}

// Model errors over intervals of ticks: each scheme's largest error over a
// minute, one row set when it ends or the mm does, where every tick wrote
// one. The intervals follow each other without a hole.
TEST_F(HistoryRecorderTest, ModelErrorsAreWrittenOncePerIntervalAndAtTheEnd) {
  Child child(Child::kWaiting);
  pipeline_.on_mm_created(key_, true);
  const auto rows = [&] {
    flushed_reader();
    return count("SELECT count(*) FROM model_errors");
  };
  // start-end:largest of upstream's rows, oldest first.
  const auto upstream = [&] {
    sqlite3* db = nullptr;
    sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* q = nullptr;
    sqlite3_prepare_v2(db,
                       "SELECT group_concat(s || '-' || e || ':' || err, ' ') "
                       "FROM (SELECT start_ns / 1000000000 AS s, end_ns / "
                       "1000000000 AS e, largest_error AS err FROM "
                       "model_errors WHERE scheme = 'upstream' ORDER BY e)",
                       -1, &q, nullptr);
    std::string out;
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
      out = reinterpret_cast<const char*>(sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(db);
    return out;
  };
  updates(child.pid(), 50);  // upstream: 25 pages unfolded on each CPU
  recorder_->sample(pipeline_, 11 * kSecond);
  recorder_->sample(pipeline_, 12 * kSecond);
  updates(child.pid(), 7);  // 57 unfolded
  recorder_->sample(pipeline_, 13 * kSecond);
  updates(child.pid(), -20);
  recorder_->sample(pipeline_, 14 * kSecond);
  EXPECT_EQ(rows(), 0);
  recorder_->sample(pipeline_, 71 * kSecond);  // a minute since the first
  EXPECT_EQ(rows(), int64_t{SchemeSet::kCount});
  EXPECT_EQ(upstream(), "11-71:57");
  // The mm ends while its process lives on (an exec): its last interval is
  // the process's.
  const RecordedIdentity* who = recorder_->identity(kMmAddr);
  ASSERT_NE(who, nullptr);
  const int64_t process_id = who->process_id;
  updates(child.pid(), -1);
  now_ = 72 * kSecond;
  mm_ends();
  EXPECT_EQ(rows(), int64_t{2 * SchemeSet::kCount});
  EXPECT_EQ(upstream(), "11-71:57 71-72:36");
  EXPECT_EQ(count(fmt::format("SELECT count(*) FROM model_errors WHERE "
                              "process_id = {}",
                              process_id)),
            int64_t{2 * SchemeSet::kCount});
}

TEST_F(HistoryRecorderTest,
       IntervalZeroWritesEveryTickAndTheStopWritesOpenRows) {
  Child child(Child::kWaiting);
  pipeline_.on_mm_created(key_, true);
  RecorderOptions every_tick = quiet(0);
  every_tick.model_error_interval_s = 0;
  recorder_->set_options(every_tick);
  for (int64_t t = 11; t <= 13; ++t) {
    updates(child.pid(), 1);
    recorder_->sample(pipeline_, t * kSecond);
  }
  flushed_reader();
  EXPECT_EQ(count("SELECT count(*) FROM model_errors"),
            int64_t{3 * SchemeSet::kCount});
  recorder_->set_options(quiet(0));
  recorder_->sample(pipeline_, 14 * kSecond);
  recorder_->sample(pipeline_, 15 * kSecond);
  flushed_reader();
  EXPECT_EQ(count("SELECT count(*) FROM model_errors"),
            int64_t{3 * SchemeSet::kCount});
  recorder_->write_open_model_errors();  // as at a stop
  flushed_reader();
  EXPECT_EQ(count("SELECT count(*) FROM model_errors WHERE start_ns = "
                  "13000000000 AND end_ns = 15000000000"),
            int64_t{SchemeSet::kCount});
}

// Before 6.2 /proc/PID/status reads the atomics as every reader does: a
// sample stores no precise value, and its drift is the atomics' against the
// stream's exact value (the pages a thread's cache hides).
TEST_F(HistoryRecorderTest, AKernelWithPerTaskCachesStoresNoPreciseValue) {
  Child child(Child::kWaiting);
  pipeline_.on_mm_created(key_, true);
  for (int i = 0; i < 5; ++i) {
    Update u;
    u.time_ns = static_cast<uint64_t>(++clock_);
    u.task = child.pid();
    u.delta = 1;
    u.member = kAnonPages;
    u.flags = kUpdateByOwner | kUpdateInFault;  // cached by the task
    UpdateInfo info;
    info.end_ns = u.time_ns;
    info.kernel_count = 0;  // the atomic: no reader sees a cached page
    info.tgid = child.pid();
    info.task_cache = true;
    pipeline_.on_update(key_, u, info);
  }
  recorder_->sample(pipeline_, 11 * kSecond);
  const RecordedIdentity* who = recorder_->identity(kMmAddr);
  ASSERT_NE(who, nullptr);
  auto reader = flushed_reader();
  auto rows = reader->process_history(who->process_id, 0, 100 * kSecond);
  ASSERT_TRUE(rows.has_value()) << rows.error().message;
  ASSERT_EQ(rows->size(), 1u);
  const StoredSample& s = rows.value()[0];
  for (int m = 0; m < kMembers; ++m) EXPECT_FALSE(s.row.precise[m]) << m;
  EXPECT_TRUE(s.row.stat_rss);  // what the kernel's readers show is kept
  EXPECT_EQ(s.row.exact[kAnonPages], 5);
  EXPECT_EQ(s.row.approximate[kAnonPages], 0);
  EXPECT_EQ(s.drift, -5);
}

// A quiet process (no update since the capture started: no mm in the
// audit) is found in /proc and sampled from it alone: stat's RSS against
// status's, read back to back, every --quiet-interval; it shows in live
// views as quiet, and once it updates it goes on under the same process
// with its mm.
TEST_F(HistoryRecorderTest, AQuietProcessIsSampledFromProcUntilItUpdates) {
  Child child(Child::kWaiting);
  child.wait_until_asleep();  // its RSS holds still from then on
  recorder_->set_options(quiet(60, child.pid()));
  recorder_->sample(pipeline_, 11 * kSecond);
  recorder_->sample(pipeline_, 12 * kSecond);  // within the interval
  EXPECT_EQ(recorder_->stats().quiet_samples, 1u);
  const std::vector<LiveProcess> quiet = recorder_->quiet_processes(186);
  ASSERT_EQ(quiet.size(), 1u);
  const LiveProcess& p = quiet[0];
  EXPECT_EQ(p.pid, child.pid());
  EXPECT_EQ(p.start_ticks, child.stat().start_time);
  EXPECT_TRUE(p.quiet);
  EXPECT_EQ(p.updates, 0u);
  EXPECT_EQ(p.rss_bound, 186);
  ASSERT_TRUE(p.drift_known()) << "status is precise since 6.2";
  EXPECT_EQ(p.kernel_rss, static_cast<int64_t>(child.stat().rss));

  recorder_->sample(pipeline_, 71 * kSecond);  // the interval has passed
  EXPECT_EQ(recorder_->stats().quiet_samples, 2u);
  {
    auto reader = flushed_reader();
    auto procs = reader->processes_with_pid(child.pid());
    ASSERT_TRUE(procs.has_value() && procs->size() == 1u);
    auto rows = reader->process_history(procs.value()[0].id, 0, 100 * kSecond);
    ASSERT_TRUE(rows.has_value()) << rows.error().message;
    ASSERT_EQ(rows->size(), 2u);
    for (const StoredSample& s : rows.value()) {
      EXPECT_FALSE(s.row.exact[kAnonPages]) << "no stream: not exact";
      ASSERT_TRUE(s.row.stat_rss && s.row.precise[kAnonPages]);
      const int64_t precise = *s.row.precise[kFilePages] +
                              *s.row.precise[kAnonPages] +
                              *s.row.precise[kShmemPages];
      EXPECT_EQ(s.drift, *s.row.stat_rss - precise);
      EXPECT_EQ(p.exact_rss, precise) << "the child holds still";
    }
  }

  // It updates: sampled with its mm from then on, as the same process.
  pipeline_.on_mm_created(key_, false);
  updates(child.pid(), 3);
  recorder_->sample(pipeline_, 72 * kSecond);
  EXPECT_TRUE(recorder_->quiet_processes(186).empty());
  EXPECT_EQ(recorder_->stats().quiet_samples, 2u);
  static_cast<void>(store_->flush());  // checked by the counts below
  EXPECT_EQ(count("SELECT COUNT(*) FROM processes"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM samples"), 3);
}

// Where status reads what stat reads (before 6.2, or 6.2-6.15 without the
// change that made it sum the slots: measured at start), a quiet process's
// samples hold no precise value and its drift is unknown, never 0.
// A quiet process has no mm in the audit, so its exit ends nothing there:
// the capture's exit record (its pid's exited slot, with its start time)
// takes it out of the live view at once, not at the next tick.
TEST_F(HistoryRecorderTest, AQuietProcessThatExitedLeavesTheLiveViewAtOnce) {
  Child child(Child::kWaiting);
  child.wait_until_asleep();
  recorder_->set_options(quiet(60, child.pid()));
  recorder_->sample(pipeline_, 11 * kSecond);
  ASSERT_EQ(recorder_->quiet_processes(186).size(), 1u);
  const uint64_t start = child.stat().start_time;
  exited_process ended{};
  ended.tgid = child.pid();
  ended.start_ticks = start + 1;  // another process of that pid ended
  recorder_->set_exited_lookup(
      [&](uint32_t tgid) -> std::optional<exited_process> {
        if (tgid != ended.tgid) return std::nullopt;
        return ended;
      });
  EXPECT_EQ(recorder_->quiet_processes(186).size(), 1u);
  ended.start_ticks = start;  // this one ended
  EXPECT_TRUE(recorder_->quiet_processes(186).empty());
}

TEST_F(HistoryRecorderTest, WhereStatusIsNotPreciseAQuietDriftIsUnknown) {
  Child child(Child::kWaiting);
  child.wait_until_asleep();
  HistoryRecorder recorder(*store_, sampler_, quiet(60, child.pid()), 4096,
                           false, kRssBound);
  recorder.sample(pipeline_, 11 * kSecond);
  const std::vector<LiveProcess> quiet = recorder.quiet_processes(186);
  ASSERT_EQ(quiet.size(), 1u);
  EXPECT_FALSE(quiet[0].drift_known());
  EXPECT_EQ(quiet[0].kernel_rss, static_cast<int64_t>(child.stat().rss));
  auto reader = flushed_reader();
  auto procs = reader->processes_with_pid(child.pid());
  ASSERT_TRUE(procs.has_value() && procs->size() == 1u);
  auto rows = reader->process_history(procs.value()[0].id, 0, 100 * kSecond);
  ASSERT_TRUE(rows.has_value() && rows->size() == 1u);
  EXPECT_TRUE(rows.value()[0].row.stat_rss.has_value());
  EXPECT_FALSE(rows.value()[0].row.precise[kAnonPages].has_value());
  EXPECT_FALSE(rows.value()[0].drift.has_value());
}

// Quiet processes pass the same filters as the others (a quiet one made no
// update, so --min-updates leaves it out), and --quiet-interval 0 turns
// their audit off.
TEST_F(HistoryRecorderTest, QuietProcessesPassTheFiltersOrAreOff) {
  Child child(Child::kWaiting);
  const RecorderOptions base = quiet(1, child.pid());
  RecorderOptions other_comm = base, busy = base, off = base;
  other_comm.comm = "no-such-comm";
  busy.min_updates = 1;
  off.quiet_interval_s = 0;
  int64_t t = 11 * kSecond;
  for (const RecorderOptions& o : {other_comm, busy, off}) {
    recorder_->set_options(o);
    recorder_->sample(pipeline_, t += 2 * kSecond);
    EXPECT_TRUE(recorder_->quiet_processes(0).empty());
  }
  static_cast<void>(store_->flush());  // checked by the count below
  EXPECT_EQ(count("SELECT COUNT(*) FROM processes"), 0);
  EXPECT_EQ(recorder_->stats().quiet_samples, 0u);
  recorder_->set_options(base);
  recorder_->sample(pipeline_, t += 2 * kSecond);
  EXPECT_EQ(recorder_->stats().quiet_samples, 1u);
  ASSERT_EQ(recorder_->quiet_processes(0).size(), 1u);
  recorder_->set_options(off);  // a reload turns them off: none left live
  recorder_->sample(pipeline_, t += 2 * kSecond);
  EXPECT_TRUE(recorder_->quiet_processes(0).empty());
}

// A tick samples at most kQuietSamplesPerTick quiet processes: a host of
// many idle ones is covered over several ticks (here a /proc of copies of
// one process, under made-up pids).
TEST_F(HistoryRecorderTest, QuietProcessesAreSampledABoundedNumberPerTick) {
  const fs::path proc = dir_ / "proc";
  const size_t n = kQuietSamplesPerTick + 44;
  for (size_t pid = 1; pid <= n; ++pid) {
    const fs::path d = proc / std::to_string(pid);
    fs::create_directories(d);
    for (const char* f : {"stat", "statm", "status", "cgroup"})
      std::ofstream(d / f) << read_file(std::string("/proc/self/") + f);
  }
  ProcessSampler sampler(WalkPolicy{}, proc.string());
  HistoryRecorder recorder(*store_, sampler, quiet(60), 4096, true, kRssBound);
  recorder.sample(pipeline_, 11 * kSecond);
  EXPECT_EQ(recorder.stats().quiet_samples, kQuietSamplesPerTick);
  recorder.sample(pipeline_, 12 * kSecond);
  EXPECT_EQ(recorder.stats().quiet_samples, n);
  recorder.sample(pipeline_, 13 * kSecond);
  EXPECT_EQ(recorder.stats().quiet_samples, n) << "all within the interval";
  EXPECT_EQ(recorder.quiet_processes(0).size(), n);
  fs::remove_all(proc / "1");  // gone: forgotten at the next tick
  recorder.sample(pipeline_, 14 * kSecond);
  EXPECT_EQ(recorder.quiet_processes(0).size(), n - 1);
}

}  // namespace
}  // namespace rssaudit

namespace rssaudit {
namespace {

// The python3 sample as pid 42 (an mm joined mid-life, so its drift is
// /proc's) and pid 43 (quiet), read by a recorder of their own: stat shows
// 3516 pages, status 3546 precise.
class DriftOfOneMomentTest : public HistoryRecorderTest {
 protected:
  void SetUp() override {
    HistoryRecorderTest::SetUp();
    proc_ = dir_ / "proc";
    testing::write_process(proc_ / "42", testing::stat_with(3516));
    testing::write_process(proc_ / "43", testing::stat_with(3516));
  }
  // Its samples' drift and why it is unknown, oldest first, as
  // "drift reason" ("NULL moving", "-30 -").
  std::string stored(uint32_t pid) {
    static_cast<void>(store_->flush());  // checked by the rows read
    auto reader = StoreReader::open_read_only(path_);
    EXPECT_TRUE(reader.has_value());
    auto procs = reader.value()->processes_with_pid(pid);
    EXPECT_TRUE(procs.has_value() && procs->size() == 1u);
    if (!procs.has_value() || procs->size() != 1u) return "?";
    auto rows =
        reader.value()->process_history(procs.value()[0].id, 0, 1000 * kSecond);
    EXPECT_TRUE(rows.has_value());
    std::string out;
    for (const StoredSample& s : rows.value_or(std::vector<StoredSample>{}))
      out += fmt::format(
          "{}{} {}", out.empty() ? "" : ",",
          s.drift ? std::to_string(*s.drift) : "NULL",
          s.row.drift_unknown ? drift_unknown_name(*s.row.drift_unknown) : "-");
    return out;
  }
  fs::path stat_of(uint32_t pid) const {
    return proc_ / std::to_string(pid) / "stat";
  }

  fs::path proc_;
};

// stat read before and after status: a count that moved in between, or an
// exit under way, makes the pair no drift of one moment. Its row keeps
// what was read, the drift is NULL with the reason, and the reasons are
// counted; a quiet process's live view then shows no drift either.
TEST_F(DriftOfOneMomentTest, ProcReadsWhileMovingOrExitingStoreWhyNotADrift) {
  ProcessSampler sampler(WalkPolicy{}, proc_.string());
  HistoryRecorder recorder(*store_, sampler, quiet(60, 43), 4096, true,
                           kRssBound);
  pipeline_.on_mm_created(key_, false);  // joined mid-life: no exact value
  updates(42, 3);
  recorder.sample(pipeline_, 11 * kSecond);
  ASSERT_EQ(recorder.quiet_processes(kRssBound).size(), 1u);
  EXPECT_TRUE(recorder.quiet_processes(kRssBound)[0].drift_known());
  {
    testing::ChangingFile moving(
        stat_of(42), {testing::stat_with(3516), testing::stat_with(3548)});
    recorder.sample(pipeline_, 12 * kSecond);
  }
  {
    testing::ChangingFile exiting(
        stat_of(42),
        {testing::stat_with(3516), testing::stat_with(3516, 0x400004)});
    testing::ChangingFile quiet_moving(
        stat_of(43), {testing::stat_with(3516), testing::stat_with(3484)});
    recorder.sample(pipeline_, 73 * kSecond);  // the quiet one is due again
  }
  EXPECT_EQ(stored(42), "-30 -,NULL moving,NULL exiting");
  EXPECT_EQ(stored(43), "-30 -,NULL moving");
  const auto& unknown = recorder.stats().drift_unknown;
  EXPECT_EQ(unknown[static_cast<size_t>(DriftUnknown::kMoving)], 2u);
  EXPECT_EQ(unknown[static_cast<size_t>(DriftUnknown::kExiting)], 1u);
  EXPECT_EQ(unknown[static_cast<size_t>(DriftUnknown::kBeyondBound)], 0u);
  const std::vector<LiveProcess> quiet = recorder.quiet_processes(kRssBound);
  ASSERT_EQ(quiet.size(), 1u);
  EXPECT_FALSE(quiet[0].drift_known());
  EXPECT_EQ(quiet[0].kernel_rss, 3516);
  EXPECT_EQ(count("SELECT count(*) FROM anomalies"), 0);
}

// A drift of one moment beyond the kernel's bound cannot be, unless the
// kernel is broken: never stored as drift, an anomaly row with the figures
// and a line on stderr, at most one a minute (saying how many were not).
// The capture's own pair gets the same check.
TEST_F(DriftOfOneMomentTest, ADriftBeyondTheBoundIsALoudAnomalyNotADrift) {
  ProcessSampler sampler(WalkPolicy{}, proc_.string());
  HistoryRecorder recorder(*store_, sampler, quiet(0), 4096, true, kRssBound);
  pipeline_.on_mm_created(key_, false);
  updates(42, 3);
  testing::write_process(proc_ / "42", testing::stat_with(3546 + kRssBound));
  ::testing::internal::CaptureStderr();
  recorder.sample(pipeline_, 11 * kSecond);  // at the bound: a drift
  testing::write_process(proc_ / "42",
                         testing::stat_with(3546 + kRssBound + 1));
  recorder.sample(pipeline_, 12 * kSecond);
  const std::string first = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(first.find("rssauditd: ANOMALY: pid 42 (python3): drift +187 "
                       "pages, beyond the kernel's RSS bound of 186 pages: "
                       "stat's rss 3733 pages - status's precise 3546 pages, "
                       "read while stat's count held still"),
            std::string::npos)
      << first;
  ::testing::internal::CaptureStderr();
  recorder.sample(pipeline_, 13 * kSecond);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "")
      << "within a minute of the last";

  // A broken count the capture read: 700 pages where one was faulted in.
  const MmKey born{kMmAddr + 4096, 1};
  pipeline_.on_mm_created(born, true);
  Update u;
  u.time_ns = static_cast<uint64_t>(++clock_);
  u.task = 43;
  u.delta = 1;
  u.member = kAnonPages;
  UpdateInfo info;
  info.end_ns = u.time_ns;
  info.kernel_count = 700;
  info.tgid = 43;
  pipeline_.on_update(born, u, info);
  testing::write_process(proc_ / "42", testing::stat_with(3516));
  ::testing::internal::CaptureStderr();
  recorder.sample(pipeline_, 80 * kSecond);
  const std::string later = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(later.find("drift +699 pages, beyond the kernel's RSS bound of "
                       "186 pages: the capture's count 700 pages - the exact "
                       "sum of the same record 1 pages"),
            std::string::npos)
      << later;
  EXPECT_NE(later.find("(1 more in the last minute, unsaid)"),
            std::string::npos)
      << later;

  EXPECT_EQ(stored(42), "186 -,NULL beyond_bound,NULL beyond_bound,-30 -");
  EXPECT_EQ(stored(43), "NULL beyond_bound");
  EXPECT_EQ(recorder.stats()
                .drift_unknown[static_cast<size_t>(DriftUnknown::kBeyondBound)],
            3u);
  EXPECT_EQ(count("SELECT count(*) FROM anomalies WHERE kind = "
                  "'drift_beyond_bound' AND detail LIKE 'drift +187 pages%'"),
            2);
  EXPECT_EQ(count("SELECT count(*) FROM anomalies WHERE kind = "
                  "'drift_beyond_bound'"),
            3);
}

// Under load an exiting process's mm ends (exit_mmap) while it is still no
// zombie: running, PF_EXITING set, its stat still readable. It is gone, not
// exec'ed, and its exit is recorded (the soak test lost one of 13 871 so).
TEST_F(DriftOfOneMomentTest, AnMmEndingWhileItsProcessExitsRecordsTheExit) {
  ProcessSampler sampler(WalkPolicy{}, proc_.string());
  HistoryRecorder recorder(*store_, sampler, quiet(0), 4096, true, kRssBound);
  pipeline_.set_exit_hook(
      [&](AuditPipeline::LiveMm& mm) { recorder.on_exit(mm, now_); });
  pipeline_.on_mm_created(key_, true);
  updates(42, 3);
  recorder.sample(pipeline_, 11 * kSecond);  // sampled: its identity known
  testing::write_process(proc_ / "42", testing::stat_with(3516, 0x400004));
  ASSERT_EQ(parse_proc_stat(testing::stat_with(3516, 0x400004))->state, 'R');
  updates(42, -3);
  mm_ends();

  EXPECT_EQ(recorder.stats().exits, 1u);
  auto reader = flushed_reader();
  auto found = reader->processes_with_pid(42);
  ASSERT_TRUE(found.has_value());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ(found.value()[0].exit_ns, now_);
  EXPECT_EQ(found.value()[0].exit_residue, 0);

  // Not exiting: an exec replaced the mm, and the process goes on.
  const MmKey next{kMmAddr + 4096, 2};
  testing::write_process(proc_ / "43", testing::stat_with(3516));
  pipeline_.on_mm_created(next, true);
  updates(next, 43, 2);
  recorder.sample(pipeline_, 12 * kSecond);
  updates(next, 43, -2);
  mm_ends(next);
  EXPECT_EQ(recorder.stats().exits, 1u);
}

}  // namespace
}  // namespace rssaudit
