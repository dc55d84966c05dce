// The `rssaudit whatif` command as a user runs it: synthetic workloads, and
// recordings written here with the recording writer (no root needed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "core/formats/record_format.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

using testing::run_command;

const std::string kCli = RSSAUDIT_CLI;

// The kernel's percpu_counter for one member, to compute the records a
// kernel would have produced and what the upstream model must report.
struct KernelCounter {
  KernelCounter(uint32_t cpus, int32_t batch) : batch(batch), slots(cpus, 0) {}
  void add(uint32_t cpu, int32_t delta) {
    const int64_t v = slots[cpu] + delta;
    if (std::llabs(v) >= batch) {
      count += v;
      slots[cpu] = 0;
    } else {
      slots[cpu] = static_cast<int32_t>(v);
    }
    exact += delta;
    largest_error = std::max<int64_t>(largest_error, std::llabs(count - exact));
  }
  int32_t batch;
  std::vector<int32_t> slots;
  int64_t count = 0;
  int64_t exact = 0;
  int64_t largest_error = 0;
};

// One mm's life as the BPF programs report it: created by a fork, `steps`
// anonymous updates by its single thread hopping over the CPUs (faults of
// one page, now and then an munmap of several), then exit and exit_mmap.
class MmScript {
 public:
  MmScript(uint64_t mm, uint32_t tgid, uint32_t cpus)
      : mm_(mm), tgid_(tgid), cpus_(cpus) {}

  std::vector<int32_t> deltas(size_t steps) const {
    std::vector<int32_t> out;
    int64_t rss = 0;
    for (size_t i = 0; i < steps; ++i) {
      const int32_t d = (i % 50 == 49 && rss >= 20) ? -20 : 1;
      rss += d;
      out.push_back(d);
    }
    return out;
  }
  uint32_t cpu_of(size_t i) const { return (i / 7) % cpus_; }

  // Appends the records; `time` is the shared clock of the recording.
  void write(RecordWriter& w, size_t steps, int32_t batch, uint64_t& time) {
    KernelCounter k(cpus_, batch);
    w.append(event(RSS_EV_NEW_TASK, 0, time));  // clone flags 0: a fork
    const auto d = deltas(steps);
    for (size_t i = 0; i < d.size(); ++i) {
      k.add(cpu_of(i), d[i]);
      rss_event e = event(RSS_EV_UPDATE, k.count, time);
      e.cpu = static_cast<uint16_t>(cpu_of(i));
      e.slot = k.slots[cpu_of(i)];
      e.member = 1;  // MM_ANONPAGES
      e.flags = RSS_EVF_OWNER | RSS_EVF_IN_FAULT;
      e.faults = static_cast<uint16_t>(i + 1);
      w.append(e);
    }
    rss_event exit = event(RSS_EV_EXIT, 0, time);
    exit.flags = RSS_EVF_GROUP_DEAD;
    w.append(exit);
    w.append(event(RSS_EV_EXIT_MMAP, 0, time));
  }

  // What the upstream model must report for this mm on `cpus` CPUs with
  // batch `batch`, CPU ids folded into them as whatif does.
  KernelCounter model(size_t steps, uint32_t cpus, int32_t batch) const {
    KernelCounter k(cpus, batch);
    const auto d = deltas(steps);
    for (size_t i = 0; i < d.size(); ++i) k.add(cpu_of(i) % cpus, d[i]);
    return k;
  }

 private:
  rss_event event(uint8_t kind, int64_t aux, uint64_t& time) const {
    rss_event e{};
    e.mm = mm_;
    e.aux = aux;
    e.start_ns = time += 10'000;
    e.span_ns = 200;
    e.tid = e.tgid = tgid_;
    e.kind = kind;
    return e;
  }

  uint64_t mm_;
  uint32_t tgid_;
  uint32_t cpus_;
};

constexpr uint32_t kCpus = 4;
constexpr int32_t kBatch = 32;  // max(32, 2 * 4)
constexpr size_t kBigSteps = 3000;
constexpr size_t kSmallSteps = 400;

class WhatifRecording : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("rssaudit-whatif-" + std::to_string(getpid()) + ".rec");
    RecordHeader h;
    h.nr_cpu_ids = kCpus;
    h.online_cpus = kCpus;
    h.percpu_batch = kBatch;
    h.page_size = 4096;
    h.kernel_release = "6.18.0-test";
    h.host_name = "testhost";
    RecordWriter w(h, 256);
    uint64_t time = 1'000'000;
    big_.write(w, kBigSteps, kBatch, time);
    small_.write(w, kSmallSteps, kBatch, time);
    w.flush();
    std::ofstream out(path_, std::ios::binary);
    const auto bytes = w.take();
    out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  void TearDown() override { std::filesystem::remove(path_); }

  nlohmann::json whatif_json(const std::string& args) {
    const auto r = run_command(kCli + " whatif --recording " + path_.string() +
                               " --json " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }

  std::filesystem::path path_;
  MmScript big_{0xffff000000001000, 4242, kCpus};
  MmScript small_{0xffff000000002000, 4343, kCpus};
};

// replay and whatif read one recording alike: every mm counted in both
// (replay once kept only the newest 1024 ended ones, unsaid), replay's
// --json honours --top, and an exact RSS not known is null.
TEST(ReplayAndWhatif, AgreeOnEveryMmOfARecording) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("rssaudit-many-" + std::to_string(getpid()) + ".rec");
  RecordHeader h;
  h.nr_cpu_ids = kCpus;
  h.online_cpus = kCpus;
  h.percpu_batch = kBatch;
  h.page_size = 4096;
  h.kernel_release = "6.18.0-test";
  h.host_name = "testhost";
  RecordWriter w(h, 256);
  uint64_t time = 1'000'000;
  constexpr uint32_t kMms = 1100;
  for (uint32_t i = 0; i + 1 < kMms; ++i) {
    const uint64_t mm = 0xffff000000001000 + uint64_t{i} * 4096;
    MmScript(mm, 5000 + i, kCpus).write(w, 3, kBatch, time);
    w.append_name({mm, 5000 + i, "proc-" + std::to_string(i)});
  }
  w.append_name({0xffff0000ffff0000, 9999, "old-one"});
  // An mm from before the recording: two updates, no creation.
  for (int i = 0; i < 2; ++i) {
    rss_event e{};
    e.mm = 0xffff0000ffff0000;
    e.tid = e.tgid = 9999;
    e.kind = RSS_EV_UPDATE;
    e.member = 1;
    e.aux = 100 + i;
    e.flags = RSS_EVF_OWNER;
    e.start_ns = time += 10'000;
    e.span_ns = 200;
    w.append(e);
  }
  w.flush();
  {
    std::ofstream out(path, std::ios::binary);
    const auto bytes = w.take();
    out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  auto json_of = [&](const std::string& args) {
    const auto r = run_command(kCli + " " + args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    return nlohmann::json::parse(r.out);
  };
  const auto replayed = json_of("replay --json --top 3 " + path.string());
  EXPECT_EQ(replayed["mms_audited"], kMms);
  EXPECT_EQ(replayed["mms"].size(), 3u) << "--top";
  const auto whatif = json_of("whatif --json --recording " + path.string());
  EXPECT_EQ(whatif["mms_audited"], kMms);
  const auto kept =
      json_of("replay --json --top 5000 --mms-kept 10 " + path.string());
  EXPECT_EQ(kept["mms_audited"], kMms) << "counted, kept or not";
  EXPECT_EQ(kept["mms"].size(), 10u + 1u) << "the live one and 10 ended";
  bool seen = false;
  for (const auto& mm : kept["mms"])
    if (mm["tgid"] == 9999) {
      seen = true;
      EXPECT_TRUE(mm["exact_rss_pages"].is_null()) << "unknown, not a sum";
    }
  EXPECT_TRUE(seen);
  // Both name every mm alike, from the names the recording holds.
  const auto all_replayed =
      json_of("replay --json --top 5000 " + path.string());
  const auto all_whatif =
      json_of("whatif --json --top 5000 --recording " + path.string());
  std::map<uint32_t, std::string> replay_names, whatif_names;
  for (const auto& mm : all_replayed["mms"])
    replay_names[mm["tgid"]] = mm["comm"];
  for (const auto& mm : all_whatif["mms"])
    whatif_names[mm["tgid"]] = mm["comm"];
  EXPECT_EQ(replay_names.size(), kMms);
  EXPECT_EQ(replay_names, whatif_names);
  EXPECT_EQ(replay_names[5007], "proc-7");
  EXPECT_EQ(replay_names[9999], "old-one");
  const auto text =
      run_command(kCli + " replay --mms-kept 10 " + path.string());
  EXPECT_NE(text.out.find("1100 mms"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("10 newest ended mms (--mms-kept)"),
            std::string::npos)
      << text.out;
  std::filesystem::remove(path);
}

const nlohmann::json& scheme(const nlohmann::json& mm, const char* name) {
  for (const auto& s : mm["schemes"])
    if (s["name"] == name) return s;
  throw std::runtime_error(std::string("no scheme ") + name);
}

TEST_F(WhatifRecording, ReportsEachMmMostActiveFirst) {
  const auto j = whatif_json("");
  EXPECT_EQ(j["source"], "recording");
  EXPECT_EQ(j["models_as_recorded"], true);
  EXPECT_EQ(j["model_cpus"], kCpus);
  ASSERT_EQ(j["mms"].size(), 2u);
  const auto& mm = j["mms"][0];
  EXPECT_EQ(mm["tgid"], 4242);
  EXPECT_EQ(mm["updates"], kBigSteps);
  EXPECT_EQ(mm["flagged"], 0);
  EXPECT_EQ(mm["alive"], false);
  EXPECT_EQ(j["mms"][1]["tgid"], 4343);
  // The upstream model fed the exact stream is the kernel: every update
  // matched its count, and its errors are the kernel's own.
  EXPECT_EQ(mm["fidelity_matched"], mm["fidelity_checked"]);
  EXPECT_EQ(mm["fidelity_checked"], kBigSteps);
  const KernelCounter k = big_.model(kBigSteps, kCpus, kBatch);
  const auto& up = scheme(mm, "upstream");
  EXPECT_EQ(up["bound_per_counter_pages"], kCpus * (kBatch - 1));
  EXPECT_EQ(up["largest_error_pages"], k.largest_error);
  EXPECT_EQ(up["final_error_pages"], k.count - k.exact);
  EXPECT_GT(up["largest_error_pages"].get<int64_t>(), 0);
  EXPECT_GT(up["shared_updates"].get<uint64_t>(), 0u);
  for (const auto& s : mm["schemes"]) {
    if (s["bound_per_counter_pages"].is_null()) continue;
    EXPECT_LE(s["largest_error_pages"].get<int64_t>(),
              s["bound_per_counter_pages"].get<int64_t>())
        << s["name"];
  }
}

TEST_F(WhatifRecording, PidSelectsItsMmsAndTopLimits) {
  const auto one = whatif_json("--pid 4343");
  ASSERT_EQ(one["mms"].size(), 1u);
  EXPECT_EQ(one["mms"][0]["tgid"], 4343);
  EXPECT_EQ(one["mms"][0]["updates"], kSmallSteps);
  EXPECT_EQ(whatif_json("--top 1")["mms"].size(), 1u);

  const auto none =
      run_command(kCli + " whatif --recording " + path_.string() + " --pid 7");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("--pid 7"), std::string::npos) << none.err;
}

TEST_F(WhatifRecording, CpusReevaluatesTheModelsWithoutFidelity) {
  const auto j = whatif_json("--cpus 384");
  EXPECT_EQ(j["models_as_recorded"], false);
  EXPECT_TRUE(j["fidelity_checked"].is_null());
  EXPECT_EQ(j["model_cpus"], 384);
  EXPECT_EQ(j["model_upstream_batch"], 768);
  const auto& mm = j["mms"][0];
  EXPECT_FALSE(mm.contains("fidelity_checked"));
  const KernelCounter k = big_.model(kBigSteps, 384, 768);
  const auto& up = scheme(mm, "upstream");
  EXPECT_EQ(up["bound_per_counter_pages"], 384 * 767);
  EXPECT_EQ(up["largest_error_pages"], k.largest_error);
  // The same stream on 2 CPUs: ids 2 and 3 fold onto 0 and 1.
  const KernelCounter two = big_.model(kBigSteps, 2, 32);
  EXPECT_EQ(scheme(whatif_json("--cpus 2")["mms"][0],
                   "upstream")["largest_error_pages"],
            two.largest_error);

  const auto human = run_command(kCli + " whatif --recording " +
                                 path_.string() + " --cpus 384");
  EXPECT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("not checked"), std::string::npos) << human.out;
}

TEST_F(WhatifRecording, HumanOutputFits80ColumnsInEveryUnit) {
  for (const char* unit : {"", " --pages", " --bytes"}) {
    const auto r =
        run_command(kCli + " whatif --recording " + path_.string() + unit);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* name : {"upstream", "hpcc", "per_task", "per_cpu",
                             "lazy_percpu", "sync_query", "pid 4242"})
      EXPECT_NE(r.out.find(name), std::string::npos) << name;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
      EXPECT_LE(line.size(), 80u) << line;
  }
  EXPECT_NE(run_command(kCli + " whatif --pages --recording " + path_.string())
                .out.find(" pg"),
            std::string::npos);
}

TEST_F(WhatifRecording, CutFileAuditsWhatCameBeforeAndFails) {
  std::filesystem::resize_file(path_, std::filesystem::file_size(path_) - 10);
  const auto r =
      run_command(kCli + " whatif --recording " + path_.string() + " --json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("at byte"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["error"].is_null());
  EXPECT_GE(j["mms"].size(), 1u);  // the first mm's blocks were whole
}

TEST(WhatifCli, SyntheticMatchesSimulateForTheSameSeed) {
  const std::string args =
      " --cpus 64 --workload threads --updates 200000 --seed 7 --json";
  const auto sim = run_command(kCli + " simulate" + args);
  const auto what = run_command(kCli + " whatif" + args);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  ASSERT_EQ(what.exit_code, 0) << what.err;
  const auto s = nlohmann::json::parse(sim.out);
  const auto w = nlohmann::json::parse(what.out);
  EXPECT_EQ(w["source"], "workload");
  EXPECT_EQ(w["updates"], s["updates"]);
  EXPECT_EQ(w["schemes"], s["schemes"]);
  ASSERT_EQ(w["schemes"].size(), 6u);
  for (const auto& sc : w["schemes"]) {
    EXPECT_GT(sc["shared_updates"].get<uint64_t>(), 0u) << sc["name"];
    if (sc["bound_per_counter_pages"].is_null()) continue;
    EXPECT_LE(sc["largest_error_pages"].get<int64_t>(),
              sc["bound_per_counter_pages"].get<int64_t>())
        << sc["name"];
  }
}

TEST(WhatifCli, SyntheticHonoursShapeAndBatch) {
  const auto r = run_command(kCli +
                             " whatif --workload oscillate --cpus 256 "
                             "--shape 16,16 --batch 64 --updates 50000 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["hpcc_shape"], nlohmann::json({16, 16}));
  EXPECT_EQ(j["hpcc_batch"], 64);
}

TEST(WhatifCli, BadArgumentsAreUsageErrors) {
  const std::string rec = " --recording /nonexistent.rec";
  for (const std::string& args : std::vector<std::string>{
           "", "--workload hop", "--workload storm --cpus 4",
           "--workload hop --cpus 0", "--workload hop --cpus 4 --shape 2",
           "--workload hop --cpus 4" + rec, "--updates 5" + rec,
           "--duration 3" + rec, "--pid 1 --top 2" + rec,
           "--pid 2147483647 --duration 1", "--pid 1 --duration -1"}) {
    const auto r = run_command(kCli + " whatif " + args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1)
        << args << ": " << r.err;
  }
  // CLI11's own parse errors: one line, still usage errors.
  EXPECT_EQ(
      run_command(kCli + " whatif --workload hop --cpus 4 --pages --bytes")
          .exit_code,
      2);
  EXPECT_NE(run_command(kCli + " whatif").err.find("one source"),
            std::string::npos);
  EXPECT_NE(run_command(kCli + " whatif --workload hop").err.find("--cpus"),
            std::string::npos);
  // Past the kernel's largest pid (PID_MAX_LIMIT, 2^22) no process can
  // be: a usage error; below it, one that does not exist is named so.
  const testing::CommandResult beyond =
      run_command(kCli + " whatif --pid 2147483647");
  EXPECT_EQ(beyond.exit_code, 2);
  EXPECT_NE(beyond.err.find("--pid: takes a whole number from 1 to 4194304 "
                            "(a PID), got '2147483647'"),
            std::string::npos)
      << beyond.err;
  EXPECT_NE(
      run_command(kCli + " whatif --pid 4194304").err.find("no such process"),
      std::string::npos);
}

TEST(WhatifCli, MissingRecordingFailsNamingIt) {
  const auto r = run_command(kCli + " whatif --recording /nonexistent.rec");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent.rec"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace rssaudit
