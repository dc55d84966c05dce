#include "core/procfs/proc_mountinfo.h"

#include <gtest/gtest.h>

namespace rssaudit {
namespace {

constexpr const char* kHost =
    "21 26 0:20 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc "
    "proc rw\n"
    "26 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n";

TEST(ProcMountinfo, AProcfsWithoutHidepidHidesNothing) {
  EXPECT_EQ(procfs_hidepid(kHost), std::nullopt);
  EXPECT_EQ(procfs_hidepid(""), std::nullopt);
}

// As `mount -t proc -o hidepid=invisible proc /proc` printed on 6.18, over
// the host's: the last mount at /proc is the one on top.
TEST(ProcMountinfo, TheProcfsOnTopAtProcSaysWhatItHides) {
  const std::string stacked =
      std::string(kHost) +
      "67 21 0:39 / /proc rw,relatime - proc proc rw,hidepid=invisible\n";
  EXPECT_EQ(procfs_hidepid(stacked), "invisible");
  EXPECT_EQ(procfs_hidepid("5 1 0:4 / /proc rw master:3 - proc proc "
                           "rw,hidepid=2,gid=27\n"),
            "2");
  // Mounted again on top without it: hidden no more.
  EXPECT_EQ(procfs_hidepid(stacked +
                           "70 67 0:41 / /proc rw - proc proc rw,hidepid=0\n"),
            std::nullopt);
}

TEST(ProcMountinfo, OtherMountsAndMalformedLinesAreNotTheProcfs) {
  EXPECT_EQ(procfs_hidepid("1 2 0:5 / /mnt/proc rw - proc proc "
                           "rw,hidepid=2\n"
                           "3 4 0:6 / /proc rw - tmpfs tmpfs rw,hidepid=2\n"
                           "/proc hidepid=2\n"
                           "7 8 0:9 / /proc rw - proc\n"),
            std::nullopt);
}

}  // namespace
}  // namespace rssaudit
