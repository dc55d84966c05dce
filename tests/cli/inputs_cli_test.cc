// Inputs refused as a careless or hostile user gives them: each in one
// line naming the input, with a non-zero exit, and never a hang. Every
// command runs under `timeout 10`: a FIFO once blocked six of them.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bpf/rss_event.h"
#include "core/formats/record_format.h"
#include "store/store.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

namespace fs = std::filesystem;
using testing::lines_of;
using testing::run_command;

const std::string kCli = RSSAUDIT_CLI;

class InputsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = fs::temp_directory_path() / "rssaudit-inputs-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    db_ = file("h.db");
    auto store = Store::open(db_, {});
    ASSERT_TRUE(store.has_value()) << store.error().message;
    (*store)->begin_run(RunInfo{.host = "h", .started_ns = 1});
    ASSERT_TRUE((*store)->flush().has_value());
    fifo_ = file("fifo");
    ASSERT_EQ(mkfifo(fifo_.c_str(), 0666), 0);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const char* name) const { return dir_ / name; }

  // `args` fails within the timeout with one line on stderr, starting
  // "rssaudit: " and holding `says`.
  static void refused(const std::string& args, const std::string& says) {
    const testing::CommandResult r =
        run_command("timeout 10 " + kCli + " " + args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.exit_code, 124) << args << ": hung";
    const std::vector<std::string> lines = lines_of(r.err);
    ASSERT_EQ(lines.size(), 1u) << args << "\n" << r.err;
    EXPECT_EQ(lines[0].rfind("rssaudit: ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find(says), std::string::npos) << args << "\n"
                                                      << lines[0];
  }

  fs::path dir_;
  std::string db_, fifo_;
};

// CLI11 2.1 wrapped a negative count into a huge one and let NaN through
// its ranges: `top --live --watch nan` redrew 1 100 times a second, and
// `record --duration nan` recorded for "nan s".
TEST_F(InputsCli, NegativeAndNonFiniteNumbersAreRefusedNamingTheOption) {
  refused("top --db " + db_ + " -n -1",
          "-n: takes a whole number from 0 to 10000000 (processes), got "
          "'-1'");
  refused("top --db " + db_ + " --live --watch nan",
          "--watch: takes 0.1 to 86400 seconds, got 'nan'");
  refused("export --format csv --db " + db_ + " --top -1", "--top: ");
  refused("replay " + file("none.rec") + " --top -1", "--top: ");
  for (const char* duration : {"nan", "-1", "1e300", "0"})
    refused(
        std::string("record -o ") + file("x.rec") + " --duration " + duration,
        std::string("--duration: takes 0.001 to 3.1536e+07 seconds, got "
                    "'") +
            duration + "'");
  refused("whatif --pid 1 --duration inf", "--duration: ");
  refused("whatif --pid -1", "--pid: takes a whole number");
  refused("top --no-such-flag", "--no-such-flag");
  // CLI::Range read a number through strtoull, which takes a sign.
  refused("simulate --cpus 4 --updates -18446744073709551615",
          "--updates: takes a whole number from 1 to 10000000000 (updates), "
          "got '-18446744073709551615'");
  refused("simulate --cpus 4 --seed -1", "--seed: takes a whole number");
  refused("check --threads -4294967295", "--threads: takes a whole number");
  EXPECT_FALSE(fs::exists(file("x.rec")));
}

// An argument echoed in an error is shown, not obeyed: a newline in it
// made the error two lines, an escape moved the terminal's cursor.
TEST_F(InputsCli, AnArgumentEchoedInAnErrorIsOneLineWithoutControls) {
  refused("top --db " + db_ + " -n \"$(printf '1\\n\\033[2J')\"",
          "-n: takes a whole number from 0 to 10000000 (processes), got "
          "'1??[2J'");
  refused("top --no-such\"$(printf '\\302\\233')\"flag", "--no-such?flag");
}

// A FIFO or device as an input or an output: refused at once, named.
TEST_F(InputsCli, AFifoOrADeviceIsRefusedAtOnceAsAnInputOrAnOutput) {
  const std::string fifo_says = fifo_ + ": cannot read: a FIFO";
  refused("top --db " + fifo_, fifo_says);
  refused("history 1 --db " + fifo_, fifo_says);
  refused("replay " + fifo_, fifo_says);
  refused("whatif --recording " + fifo_, fifo_says);
  refused("export --format csv --db " + db_ + " -o " + fifo_,
          fifo_ + ": cannot write: a FIFO");
  refused("export --format csv --db " + db_ + " -o /dev/null",
          "/dev/null: cannot write: a device");
  refused("replay " + dir_.string(), dir_.string() +
                                         ": cannot read: a "
                                         "directory");
}

// A process may name itself with C1 controls (U+009B is CSI, raw byte
// 0x9B too) or bytes that are not UTF-8: top and the HTML show '?'.
TEST_F(InputsCli, ControlsInAProcessNameNeverReachTheTerminalOrTheHtml) {
  {
    fs::remove(db_);
    auto store = Store::open(db_, {});
    ASSERT_TRUE(store.has_value()) << store.error().message;
    Store& s = **store;
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    s.begin_run(RunInfo{.host = "h\xc2\x9bhost", .started_ns = now - 1000});
    int pid = 100;
    for (const char* comm : {"a\xc2\x9b"
                             "2J",
                             "b\x9b"
                             "2J",
                             "c\xff\x1b"}) {
      const int64_t id = s.upsert_process(
          {static_cast<uint32_t>(pid), static_cast<uint64_t>(pid)}, comm, "/",
          now);
      SampleRow row;
      row.process_id = id;
      row.time_ns = now - 10;
      row.stat_rss = 100;
      row.exact = {50, 50, 0, 0};
      s.add_sample(row);
      ++pid;
    }
    ASSERT_TRUE(s.flush().has_value());
  }
  const testing::CommandResult top =
      run_command("timeout 10 " + kCli + " top --db " + db_ + " --since 1h");
  ASSERT_EQ(top.exit_code, 0) << top.err;
  const testing::CommandResult html = run_command(
      "timeout 10 " + kCli + " export --format html --since 1h --db " + db_ +
      " -o " + file("r.html") + " && cat " + file("r.html"));
  ASSERT_EQ(html.exit_code, 0) << html.err;
  for (const std::string& out : {top.out, html.out}) {
    EXPECT_EQ(out.find('\x9b'), std::string::npos);
    EXPECT_EQ(out.find('\xff'), std::string::npos);
    EXPECT_EQ(out.find('\x1b'), std::string::npos);
  }
  EXPECT_NE(top.out.find("a?2J"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("b?2J"), std::string::npos) << top.out;
  EXPECT_NE(html.out.find("c??"), std::string::npos);
}

// A recording with records no capture writes (a CPU past the header's, a
// counter past the four): replayed without them, counted in the text and
// the JSON, and the exit says the file was not all good.
TEST_F(InputsCli, BadRecordsOfARecordingAreCountedShownAndNotASuccess) {
  RecordHeader h;
  h.nr_cpu_ids = 2;
  h.online_cpus = 2;
  h.percpu_batch = 32;
  h.page_size = 4096;
  h.kernel_release = "6.18.0-test";
  RecordWriter w(h, 16);
  for (int i = 0; i < 5; ++i) {
    rss_event e{};
    e.mm = 0xffff000000001000;
    e.tid = e.tgid = 77;
    e.kind = RSS_EV_UPDATE;
    e.member = i < 3 ? 1 : 9;  // two counters past the four
    e.cpu = i == 0 ? 7 : 0;    // and one CPU past the header's two
    e.aux = 100 + i;
    e.flags = RSS_EVF_OWNER;
    e.start_ns = 1'000'000 + 1000 * i;
    w.append(e);
  }
  w.flush();
  const std::string rec = file("bad.rec");
  {
    std::ofstream out(rec, std::ios::binary);
    const auto bytes = w.take();
    out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  const testing::CommandResult text =
      run_command("timeout 10 " + kCli + " replay " + rec);
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("3 bad records skipped"), std::string::npos)
      << text.out;
  EXPECT_EQ(text.err, "rssaudit: " + rec +
                          ": 3 bad records skipped (the rest was replayed)\n");
  const testing::CommandResult json =
      run_command("timeout 10 " + kCli + " replay --json " + rec);
  EXPECT_EQ(json.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(json.out).at("bad_records"), 3);
}

// An output path another user prepared: never written through.
TEST_F(InputsCli, AnOutputLinkAnotherUserPlantedIsRefusedAndItsTargetKept) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: the writer a link targets";
  if (std::system("command -v setpriv >/dev/null") != 0)
    GTEST_SKIP() << "needs setpriv (util-linux) to act as another user";
  ASSERT_EQ(chown(dir_.c_str(), 65534, 65534), 0);
  const std::string target = file("target.html"), link = file("out.html");
  ASSERT_EQ(std::system(("setpriv --reuid=65534 --regid=65534 --clear-groups "
                         "ln -s " +
                         target + " " + link)
                            .c_str()),
            0);
  refused("export --format html --db " + db_ + " -o " + link,
          link + ": cannot write: a symbolic link");
  EXPECT_FALSE(fs::exists(target));
}

}  // namespace
}  // namespace rssaudit
