#include "capture/preemption_model.h"

#include <gtest/gtest.h>

namespace rssaudit {
namespace {

TEST(PreemptionModel, DebugfsNamesTheModeInParentheses) {
  EXPECT_EQ(mode_from_debugfs("none voluntary (full) lazy\n"), "full");
  EXPECT_EQ(mode_from_debugfs("(none) voluntary full\n"), "none");
  EXPECT_EQ(mode_from_debugfs("none voluntary full lazy\n"), "");
  EXPECT_EQ(mode_from_debugfs("(preempt_rt)\n"), "");
  EXPECT_EQ(mode_from_debugfs(""), "");
}

// This host's 6.18 and Debian's 6.12 cloud kernel: PREEMPT_DYNAMIC with a
// configured default that preempt= overrides.
TEST(PreemptionModel, ConfigGivesTheDefaultAndPreemptOverridesIfDynamic) {
  const std::string host =
      "CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_NONE=y\n"
      "# CONFIG_PREEMPT_VOLUNTARY is not set\n# CONFIG_PREEMPT is not set\n"
      "CONFIG_PREEMPT_COUNT=y\nCONFIG_PREEMPTION=y\nCONFIG_PREEMPT_DYNAMIC=y\n";
  EXPECT_EQ(mode_from_config(host, "console=ttyS0 quiet"), "none");
  EXPECT_EQ(mode_from_config(host, "quiet preempt=full ro"), "full");
  EXPECT_EQ(mode_from_config(host, "preempt=bogus"), "none");
  const std::string debian =
      "CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_DYNAMIC=y\n";
  EXPECT_EQ(mode_from_config(debian, ""), "voluntary");
  EXPECT_EQ(mode_from_config(debian, "preempt=lazy"), "lazy");
  // Without PREEMPT_DYNAMIC the option does nothing.
  EXPECT_EQ(mode_from_config("CONFIG_PREEMPT_VOLUNTARY=y\n", "preempt=full"),
            "voluntary");
  EXPECT_EQ(mode_from_config("CONFIG_PREEMPT=y\n", ""), "full");
  EXPECT_EQ(mode_from_config("CONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT_DYNAMIC=y\n",
                             "preempt=none"),
            "full");
  // CONFIG_PREEMPT_NONE_BUILD is not CONFIG_PREEMPT_NONE.
  EXPECT_EQ(mode_from_config("CONFIG_PREEMPT_NONE_BUILD=y\n", ""), "");
  EXPECT_EQ(mode_from_config("", ""), "");
}

}  // namespace
}  // namespace rssaudit
