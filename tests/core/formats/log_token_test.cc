#include "core/formats/log_token.h"

#include <gtest/gtest.h>

namespace rssaudit {
namespace {

TEST(LogToken, APlainNameIsItself) {
  EXPECT_EQ(log_token("python3"), "python3");
  EXPECT_EQ(log_token("kworker/0:1H-kb"), "kworker/0:1H-kb");
}

TEST(LogToken, NothingAProcessCanBeCalledEndsOrSplitsTheToken) {
  EXPECT_EQ(log_token("x\nmm tgid=1"), "x\\x0amm\\x20tgid=1");
  EXPECT_EQ(log_token("Web Content"), "Web\\x20Content");
  EXPECT_EQ(log_token("a\\x0a\"\x7f\xff\r\t"),
            "a\\x5cx0a\\x22\\x7f\\xff\\x0d\\x09");
  EXPECT_EQ(log_token(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(log_token(""), "\"\"");
  // Every byte value: the token is printable ASCII without space.
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  for (const char c : log_token(all))
    EXPECT_TRUE(c > 0x20 && c < 0x7f) << int(c);
}

}  // namespace
}  // namespace rssaudit
