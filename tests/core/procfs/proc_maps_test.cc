#include "core/procfs/proc_maps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/core/procfs/proc_samples.h"
#include "tests/core/procfs/proc_test_support.h"

namespace rssaudit {
namespace {

TEST(ProcMaps, ParsesARealProcess) {
  const auto r = parse_proc_maps(samples::kMaps);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const std::vector<Vma>& vmas = r.value();
  ASSERT_EQ(vmas.size(), 38u);
  const Vma& text = vmas[1];
  EXPECT_EQ(text.start, 0x55999c544000u);
  EXPECT_EQ(text.end, 0x55999c549000u);
  EXPECT_EQ(text.size(), 5u * 4096);
  EXPECT_TRUE(text.readable);
  EXPECT_FALSE(text.writable);
  EXPECT_TRUE(text.executable);
  EXPECT_FALSE(text.shared);
  EXPECT_EQ(text.offset, 0x2000u);
  EXPECT_EQ(text.dev_major, 0xfeu);
  EXPECT_EQ(text.dev_minor, 0u);
  EXPECT_EQ(text.inode, 247134u);
  EXPECT_EQ(text.pathname, "/usr/bin/cat");
  EXPECT_EQ(text.kind(), VmaKind::kFile);
  EXPECT_TRUE(vmas[25].shared);  // gconv-modules.cache, "r--s"
  EXPECT_EQ(vmas[37].start, 0xffffffffff600000u);
}

TEST(ProcMaps, ClassifiesTheSpecialMappingsOfThisKernel) {
  const std::vector<Vma> vmas = parse_proc_maps(samples::kMaps).value();
  auto kind_of = [&](std::string_view name) {
    const auto it = std::find_if(vmas.begin(), vmas.end(), [&](const Vma& v) {
      return v.pathname == name;
    });
    EXPECT_NE(it, vmas.end()) << name;
    return it == vmas.end() ? VmaKind::kOther : it->kind();
  };
  EXPECT_EQ(kind_of(""), VmaKind::kAnonymous);
  EXPECT_EQ(kind_of("[heap]"), VmaKind::kHeap);
  EXPECT_EQ(kind_of("[stack]"), VmaKind::kStack);
  EXPECT_EQ(kind_of("[vdso]"), VmaKind::kVdso);
  EXPECT_EQ(kind_of("[vvar]"), VmaKind::kVvar);
  EXPECT_EQ(kind_of("[vvar_vclock]"), VmaKind::kVvar);
  EXPECT_EQ(kind_of("[vsyscall]"), VmaKind::kVsyscall);
}

TEST(ProcMaps, KeepsPathsWithSpacesDeletedSuffixesAndNames) {
  const auto r = parse_proc_maps(
      "7f00-8000 rw-s 00000000 00:01 1234                       "
      "/memfd:my buf (deleted)\n"
      "8000-9000 rw-p 00000000 00:00 0      /tmp/a  b\\012c\n"
      "9000-a000 rw-p 00000000 00:00 0      [anon:js heap]\n"
      "a000-b000 rw-s 00000000 00:01 7      [anon_shmem:ring]\n"
      "b000-c000 r--p 00000000 00:0f 9      anon_inode:[io_uring]\n"
      "c000-d000 r-xp 00000000 00:00 0      [uprobes]\n"
      "d000-e000 rw-p 00000000 00:00 0      [stack:1234]\n"
      "e000-f000 rw-p 00000000 103:0a 0 \n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const std::vector<Vma>& v = r.value();
  ASSERT_EQ(v.size(), 8u);
  EXPECT_EQ(v[0].pathname, "/memfd:my buf (deleted)");
  EXPECT_TRUE(v[0].deleted());
  EXPECT_EQ(v[0].kind(), VmaKind::kFile);
  EXPECT_EQ(v[1].pathname, "/tmp/a  b\\012c");  // kept as printed
  EXPECT_FALSE(v[1].deleted());
  EXPECT_EQ(v[2].kind(), VmaKind::kAnonymous);
  EXPECT_EQ(v[3].kind(), VmaKind::kShmem);
  EXPECT_EQ(v[4].kind(), VmaKind::kFile);
  EXPECT_EQ(v[5].kind(), VmaKind::kOther);
  EXPECT_EQ(v[6].kind(), VmaKind::kStack);
  EXPECT_EQ(v[7].dev_major, 0x103u);
  EXPECT_EQ(v[7].dev_minor, 0xau);
  EXPECT_EQ(v[7].pathname, "");
}

TEST(ProcMaps, AProcessWithoutAnMmHasNoVmas) {
  const auto r = parse_proc_maps("");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(r.value().empty());
}

TEST(ProcMaps, CutReadsYieldAnErrorOrTheCompleteLinesOnly) {
  const std::string_view text = samples::kMaps;
  const std::vector<Vma> full = parse_proc_maps(text).value();
  for (size_t n = 0; n <= text.size(); ++n) {
    const std::string prefix(text.substr(0, n));
    const auto r = parse_proc_maps(prefix);
    const bool whole_lines = n == 0 || text[n - 1] == '\n';
    ASSERT_EQ(r.has_value(), whole_lines) << "prefix of " << n << " bytes";
    if (!r.has_value()) continue;
    const auto lines = std::count(prefix.begin(), prefix.end(), '\n');
    ASSERT_EQ(r.value().size(), static_cast<size_t>(lines));
    EXPECT_TRUE(std::equal(r.value().begin(), r.value().end(), full.begin()));
  }
}

TEST(ProcMaps, RejectsGarbageNamingTheFieldAndLine) {
  const struct {
    std::string_view line;
    std::string_view field;
  } cases[] = {
      {"1000 rw-p 00000000 00:00 0 \n", "start"},
      {"10g0-2000 rw-p 00000000 00:00 0 \n", "start"},
      {"2000-1000 rw-p 00000000 00:00 0 \n", "end"},
      {"1000-2000 rw-q 00000000 00:00 0 \n", "perms"},
      {"1000-2000 rwxps 00000000 00:00 0 \n", "perms"},
      {"1000-2000 rw-p 1000000000000000000 00:00 0 \n", "offset"},
      {"1000-2000 rw-p 00000000 0000 0 \n", "dev"},
      {"1000-2000 rw-p 00000000 00:zz 0 \n", "dev"},
      {"1000-2000 rw-p 00000000 00:00 0\n", "inode"},
      {"1000-2000 rw-p 00000000 00:00 12a /x\n", "inode"},
  };
  for (const auto& c : cases) {
    const std::string text =
        "0-1000 r--p 00000000 00:00 0 \n" + std::string(c.line);
    const auto r = parse_proc_maps(text);
    ASSERT_FALSE(r.has_value()) << c.line;
    EXPECT_EQ(r.error().file, ProcFile::kMaps);
    EXPECT_EQ(r.error().field, c.field) << r.error().message;
    EXPECT_EQ(r.error().line, 2u) << r.error().message;
    EXPECT_TRUE(contains(r.error().message, "/proc/PID/maps"));
  }
}

}  // namespace
}  // namespace rssaudit
