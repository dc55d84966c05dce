#include "core/procfs/proc_cgroup.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/core/procfs/proc_test_support.h"

namespace rssaudit {
namespace {

// A cgroup-v2-only host (systemd's unified layout).
constexpr std::string_view kUnified =
    "0::/user.slice/user-1000.slice/session-2.scope\n";
// A hybrid host, as on this machine: v1 controllers, then the v2 line.
constexpr std::string_view kHybrid =
    "9:name=systemd:/\n"
    "4:memory:/process_api/3f8da5148381e739459877b4feaffc22\n"
    "2:cpu,cpuacct:/\n"
    "0::/build job\n";

TEST(ProcCgroup, TheV2LineIsThePathAndV1HierarchiesAreIgnored) {
  const auto u = parse_proc_cgroup(kUnified);
  ASSERT_TRUE(u.has_value()) << u.error().message;
  EXPECT_EQ(u.value().v2_path, "/user.slice/user-1000.slice/session-2.scope");
  const auto h = parse_proc_cgroup(kHybrid);
  ASSERT_TRUE(h.has_value()) << h.error().message;
  EXPECT_EQ(h.value().v2_path, "/build job");
}

TEST(ProcCgroup, WithinIsTheSubtreeOnPathBoundaries) {
  const std::string_view service = "/system.slice/nginx.service";
  EXPECT_TRUE(cgroup_within(service, "/system.slice/nginx.service"));
  EXPECT_TRUE(cgroup_within(service, "/system.slice"));
  EXPECT_TRUE(cgroup_within(service, "/system.slice/"));
  EXPECT_TRUE(cgroup_within(service, "/"));
  EXPECT_FALSE(cgroup_within(service, "/system.slice/nginx"));
  EXPECT_FALSE(cgroup_within(service, "/system.slice/nginx.service/worker"));
  EXPECT_FALSE(cgroup_within(service, "/user.slice"));
  EXPECT_FALSE(cgroup_within("", "/system.slice"));  // unknown: outside
  EXPECT_TRUE(cgroup_within("/", "/"));
}

TEST(ProcCgroup, AV1OnlyHostHasNoPath) {
  const auto r = parse_proc_cgroup("3:cpuset:/\n1:name=systemd:/init.scope\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r.value().v2_path, std::nullopt);
}

TEST(ProcCgroup, HostilePathsAreKeptVerbatim) {
  // The kernel escapes nothing in this file: spaces, colons, tabs and
  // non-ASCII bytes come through as they are; only '\n' is refused in a
  // cgroup name, so a line is one entry.
  for (std::string_view path :
       {"/a b/c  d", "/x:y::z", "/tab\there", "/caf\xc3\xa9", "/",
        "/../../outside-the-namespace", "/gone (deleted)", "/\\n-not-a-nl"}) {
    const std::string text = "1:name=systemd:/\n0::" + std::string(path) + "\n";
    const auto r = parse_proc_cgroup(text);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_EQ(r.value().v2_path, path);
  }
}

TEST(ProcCgroup, CutReadsAreRejectedUntilTheNewline) {
  // Every prefix of a one-line file is an error, never a shorter path.
  EXPECT_EQ(shortest_parsing_prefix(parse_proc_cgroup, kUnified),
            kUnified.size());
  const auto r = parse_proc_cgroup("0::/user.sli");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().field, "line");
  EXPECT_EQ(r.error().offset, 0u);
  // Cut inside the v2 line of a hybrid file: an error too. (Cut exactly
  // after a v1 line it reads as a file without a v2 line: a read that ends
  // at a line boundary cannot be told from a whole file.)
  const std::string cut(kHybrid.substr(0, kHybrid.size() - 3));
  EXPECT_FALSE(parse_proc_cgroup(cut).has_value());
}

TEST(ProcCgroup, MalformedTextIsAClearErrorNamingTheField) {
  struct Case {
    std::string_view text;
    std::string_view field;
    std::string_view reason;
  } cases[] = {
      {"", "hierarchy-ID", "missing"},
      {"0\n", "hierarchy-ID", "no ':'"},
      {"x::/a\n", "hierarchy-ID", "not a number"},
      {"-1::/a\n", "hierarchy-ID", "not a number"},
      {"99999999999::/a\n", "hierarchy-ID", "out of range"},
      {"0:/a\n", "controllers", "no ':'"},
      {"0::relative\n", "path", "does not start with '/'"},
      {"0::\n", "path", "does not start with '/'"},
      {"0::/a\n0::/b\n", "hierarchy-ID", "second 0:: line"},
      {"\n", "hierarchy-ID", "no ':'"},
  };
  for (const Case& c : cases) {
    const auto r = parse_proc_cgroup(c.text);
    ASSERT_FALSE(r.has_value()) << c.text;
    EXPECT_EQ(r.error().file, ProcFile::kCgroup);
    EXPECT_EQ(r.error().field, c.field) << c.text;
    EXPECT_TRUE(contains(r.error().message, c.reason)) << r.error().message;
    EXPECT_TRUE(contains(r.error().message, "/proc/PID/cgroup"));
  }
}

}  // namespace
}  // namespace rssaudit
