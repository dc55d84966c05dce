// The `rssaudit check` command as a user runs it on this host.
#include <fcntl.h>
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "store/store_db.h"
#include "tests/support/run_command.h"

namespace rssaudit {
namespace {

using testing::lines_of;
using testing::run_command;

const std::string kCli = RSSAUDIT_CLI;

std::filesystem::path temp_path(const char* name) {
  return std::filesystem::temp_directory_path() /
         (std::string(name) + std::to_string(getpid()));
}

// Where nothing exists: the host's own database and socket stay out of it.
const std::string kNowhere =
    " --db /nonexistent/rssaudit.db --socket "
    "/nonexistent/control.sock";

TEST(CheckCli, JsonDescribesThisHost) {
  const auto r = run_command(kCli + " check --json" + kNowhere);
  const auto j = nlohmann::json::parse(r.out);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  EXPECT_EQ(j["online_cpus"], cpus);
  EXPECT_GE(j["possible_cpus"].get<int>(), cpus);
  EXPECT_EQ(j["page_size"], sysconf(_SC_PAGESIZE));
  for (const char* key :
       {"btf", "tp_btf_targets", "host_pid_namespace", "root", "can_capture"})
    EXPECT_TRUE(j[key].is_boolean()) << key;
  ASSERT_TRUE(j["capabilities"].is_object());
  for (const char* cap :
       {"CAP_BPF", "CAP_PERFMON", "CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"})
    EXPECT_TRUE(j["capabilities"].contains(cap)) << cap;
  EXPECT_EQ(j["database"]["exists"], false);
  EXPECT_EQ(j["socket"]["exists"], false);
  // Exit status and verdict agree, and a refusal says why.
  EXPECT_EQ(r.exit_code, j["can_capture"] ? 0 : 1) << r.err;
  EXPECT_EQ(j["reasons"].empty(), j["can_capture"].get<bool>());
  if (r.exit_code == 1) {
    EXPECT_NE(r.err.find("cannot capture"), std::string::npos) << r.err;
  }
}

// Told apart here as check should: two read faults of fresh anonymous
// memory map one PFN (the zero page) or two (a kernel that maps none).
TEST(CheckCli, SaysWhetherReadFaultsMapTheZeroPage) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (PFNs in pagemap)";
  const long page = sysconf(_SC_PAGESIZE);
  void* map =
      mmap(nullptr, 2 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  madvise(map, 2 * page, MADV_NOHUGEPAGE);
  const int pagemap = open("/proc/self/pagemap", O_RDONLY);
  ASSERT_GE(pagemap, 0);
  uint64_t pfn[2] = {};
  for (int i = 0; i < 2; ++i) {
    const auto* at = static_cast<const volatile char*>(map) + i * page;
    (void)*at;
    const off_t entry = reinterpret_cast<uintptr_t>(at) / page * 8;
    ASSERT_EQ(pread(pagemap, &pfn[i], 8, entry), 8);
    pfn[i] &= (uint64_t{1} << 55) - 1;
  }
  close(pagemap);
  munmap(map, 2 * page);
  ASSERT_NE(pfn[0], 0u) << "PFNs hidden";
  const auto r = run_command(kCli + " check --json" + kNowhere);
  EXPECT_EQ(nlohmann::json::parse(r.out)["zero_page"],
            pfn[0] == pfn[1] ? "shared" : "none");
  const auto human = run_command(kCli + " check" + kNowhere);
  EXPECT_NE(human.out.find(pfn[0] == pfn[1] ? "zero page    shared"
                                            : "zero page    none"),
            std::string::npos)
      << human.out;
}

// This project's machines (docs/kernel.md): Linux 6.18 with BTF, tests as root.
TEST(CheckCli, RootOnThisKernelCanCapture) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON)";
  if (!std::filesystem::exists("/sys/kernel/btf/vmlinux"))
    GTEST_SKIP() << "no kernel BTF";
  const auto r = run_command(kCli + " check --json" + kNowhere);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const int64_t cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const int64_t batch = std::max<int64_t>(32, 2 * cpus);
  EXPECT_EQ(j["counting_scheme"], "percpu_counter");
  EXPECT_EQ(j["counting_scheme_from"], "btf");
  EXPECT_EQ(j["batch"], batch);
  EXPECT_EQ(j["bound_per_counter_pages"], cpus * (batch - 1));
  EXPECT_EQ(j["bound_per_counter_bytes"],
            cpus * (batch - 1) * sysconf(_SC_PAGESIZE));
  EXPECT_EQ(j["rss_bound_pages"], 3 * cpus * (batch - 1));
  EXPECT_EQ(j["btf"], true);
  EXPECT_EQ(j["tp_btf_targets"], true);
  EXPECT_EQ(j["mmapable_arrays"], true);
  EXPECT_EQ(j["host_pid_namespace"], true);
  EXPECT_EQ(j["capabilities"]["CAP_BPF"], true);
  EXPECT_EQ(j["capabilities"]["CAP_PERFMON"], true);
}

// --threads: how far each RSS reader can be off for a process of T
// threads. On this 6.2+ kernel stat, VmHWM and ru_maxrss read each
// counter's count (three counters in RSS), whatever T; status is exact.
TEST(CheckCli, ThreadsSaysHowFarEachReaderCanBeOff) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CAP_BPF, CAP_PERFMON)";
  if (!std::filesystem::exists("/sys/kernel/btf/vmlinux"))
    GTEST_SKIP() << "no kernel BTF";
  const auto r = run_command(kCli + " check --threads 8 --json" + kNowhere);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["counting_scheme"], "percpu_counter") << "this host's kernel";
  const int64_t cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const int64_t batch = std::max<int64_t>(32, 2 * cpus);
  const auto& t = j["tolerance"];
  EXPECT_EQ(t["threads"], 8);
  ASSERT_EQ(t["readers"].size(), 4u);
  for (const auto& reader : t["readers"]) {
    const bool precise = reader["reader"] == "status";
    EXPECT_EQ(reader["rss_error_pages"], precise ? 0 : 3 * cpus * (batch - 1))
        << reader.dump();
    EXPECT_EQ(reader["anon_error_pages"], precise ? 0 : cpus * (batch - 1));
    EXPECT_EQ(reader["bounded_in_time"], true);
  }
  const auto human =
      run_command(kCli + " check --threads 8 --pages" + kNowhere);
  EXPECT_NE(human.out.find("a process of 8 threads"), std::string::npos)
      << human.out;
  EXPECT_NE(human.out.find(fmt::format("{} pg ({} pg)", 3 * cpus * (batch - 1),
                                       cpus * (batch - 1))),
            std::string::npos)
      << human.out;
  for (const std::string& line : lines_of(human.out))
    EXPECT_LE(line.size(), 80u) << line;
  EXPECT_EQ(run_command(kCli + " check --threads 0" + kNowhere).exit_code, 2);
}

// In a container without the host's PID namespace every pid the kernel
// reports is another process's or none: capture is refused, and says so.
TEST(CheckCli, ChildPidNamespaceCannotCapture) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (unshare --pid)";
  const auto r = run_command("unshare --pid --fork --mount-proc " + kCli +
                             " check --json" + kNowhere);
  if (r.out.empty()) GTEST_SKIP() << "unshare --pid failed: " << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["host_pid_namespace"], false);
  EXPECT_EQ(j["can_capture"], false);
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_FALSE(j["reasons"].empty());
  EXPECT_NE(j["reasons"][0].get<std::string>().find("hostPID"),
            std::string::npos)
      << j["reasons"];
}

TEST(CheckCli, HumanOutputFits80ColumnsInEveryUnit) {
  for (const char* unit : {"", " --pages", " --bytes"}) {
    const auto r = run_command(kCli + " check" + unit + kNowhere);
    ASSERT_LE(r.exit_code, 1) << r.err;
    for (const char* label :
         {"kernel", "BTF", "tp_btf", "streams", "counting", "privileges",
          "bpf_stats", "database", "socket", "capture"})
      EXPECT_NE(r.out.find(label), std::string::npos) << label;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
      EXPECT_LE(line.size(), 80u) << line;
  }
}

TEST(CheckCli, ReportsTheDatabaseSchemaVersion) {
  const auto db = temp_path("rssaudit-check-db-");
  ASSERT_TRUE(
      Database::create_at_version(db, latest_schema_version()).has_value());
  const auto r = run_command(kCli + " check --json --db " + db.string() +
                             " --socket /nonexistent/control.sock");
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["database"]["exists"], true);
  EXPECT_EQ(j["database"]["schema_version"], latest_schema_version());
  EXPECT_TRUE(j["database"]["error"].is_null());

  // An older schema is named, not upgraded: check opens read-only.
  const auto old_db = temp_path("rssaudit-check-old-");
  ASSERT_TRUE(Database::create_at_version(old_db, 1).has_value());
  const auto size = std::filesystem::file_size(old_db);
  const auto o = run_command(kCli + " check --json --db " + old_db.string() +
                             " --socket /nonexistent/control.sock");
  const auto oj = nlohmann::json::parse(o.out);
  if (latest_schema_version() > 1) {
    EXPECT_TRUE(oj["database"]["schema_version"].is_null());
    EXPECT_NE(oj["database"]["error"].get<std::string>().find("older"),
              std::string::npos);
  }
  // rssauditd upgrades it: no reason for check to fail.
  EXPECT_EQ(oj["database"]["usable"], true);
  EXPECT_EQ(o.exit_code, oj["can_capture"] ? 0 : 1) << o.err;
  EXPECT_EQ(std::filesystem::file_size(old_db), size);
  for (const auto& p : {db, old_db}) {
    std::filesystem::remove(p);
    std::filesystem::remove(p.string() + "-wal");
    std::filesystem::remove(p.string() + "-shm");
  }
}

// A --db rssauditd would refuse at its start (a FIFO, another program's
// file) fails the check, named, at once: the exit code said only whether
// the capture could run, and a FIFO passed as 0.
TEST(CheckCli, ADatabaseRssauditdWouldRefuseFailsTheCheckNamingIt) {
  const auto fifo = temp_path("rssaudit-check-fifo-");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto foreign = temp_path("rssaudit-check-foreign-");
  std::ofstream(foreign) << "not a database, not empty either\n";
  for (const auto& [path, says] :
       {std::pair{fifo, fifo.string() + ": cannot read: a FIFO"},
        std::pair{foreign, foreign.string()}}) {
    const auto r = run_command(kCli + " check --json --db " + path.string() +
                               " --socket /nonexistent/control.sock");
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["database"]["usable"], false) << path;
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("the history database cannot be used: " + says),
              std::string::npos)
        << r.err;
  }
  std::filesystem::remove(fifo);
  std::filesystem::remove(foreign);
}

TEST(CheckCli, SaysWhetherTheSocketAcceptsConnections) {
  const auto path = temp_path("rssaudit-check-sock-");
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  auto socket_json = [&] {
    // The environment variable is the default; --socket is not given.
    const auto r = run_command("RSSAUDIT_SOCKET=" + path.string() + " " + kCli +
                               " check --json --db /nonexistent/rssaudit.db");
    return nlohmann::json::parse(r.out)["socket"];
  };
  // Bound but not listening: a stale socket of a daemon that is gone.
  auto s = socket_json();
  EXPECT_EQ(s["path"], path.string());
  EXPECT_EQ(s["exists"], true);
  EXPECT_EQ(s["accepting"], false);
  ASSERT_EQ(listen(fd, 4), 0);
  s = socket_json();
  EXPECT_EQ(s["accepting"], true);
  close(fd);
  std::filesystem::remove(path);
}

TEST(CheckCli, BadArgumentsAreUsageErrors) {
  for (const char* args : {"--pages --bytes", "--frobnicate", "extra"}) {
    const auto r = run_command(kCli + " check " + args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_FALSE(r.err.empty()) << args;
  }
}

}  // namespace
}  // namespace rssaudit
