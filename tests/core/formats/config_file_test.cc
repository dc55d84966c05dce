#include "core/formats/config_file.h"

#include <gtest/gtest.h>

namespace rssaudit {
namespace {

std::vector<ConfigEntry> entries(std::string_view text) {
  auto r = parse_config(text);
  EXPECT_TRUE(r.has_value()) << r.error().message;
  return std::move(r).value();
}

ConfigSyntaxError error(std::string_view text) {
  auto r = parse_config(text);
  EXPECT_FALSE(r.has_value());
  return r.error();
}

TEST(ConfigFile, KeysValuesAndLinesInFileOrder) {
  const auto e = entries(
      "# rssauditd\n\n  sample-interval = 2 \r\n"
      "walk=all,123\n\t# indented comment\ncomm = my server\n");
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].line, 3u);
  EXPECT_EQ(e[0].key, "sample-interval");
  EXPECT_EQ(e[0].value, "2");
  EXPECT_EQ(e[1].line, 4u);
  EXPECT_EQ(e[1].value, "all,123");
  EXPECT_EQ(e[2].line, 6u);
  EXPECT_EQ(e[2].value, "my server") << "inner spaces are kept";
}

TEST(ConfigFile, EmptyAndCommentOnlyFilesHaveNoEntries) {
  EXPECT_TRUE(entries("").empty());
  EXPECT_TRUE(entries("# nothing\n\n   \n").empty());
}

TEST(ConfigFile, ValueMayHoldEqualsAndHash) {
  const auto e = entries("comm = a=b#c\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].value, "a=b#c");
}

TEST(ConfigFile, LineWithoutEqualsIsAnErrorAtItsLine) {
  const auto e = error("top = 3\n\nsample-interval 2\n");
  EXPECT_EQ(e.line, 3u);
  EXPECT_NE(e.message.find("key = value"), std::string::npos);
}

TEST(ConfigFile, BadKeysAreRejectedNamingThem) {
  EXPECT_NE(error("--top = 3\n").message.find("'--top'"), std::string::npos);
  EXPECT_NE(error("Top = 3\n").message.find("'Top'"), std::string::npos);
  EXPECT_EQ(error("top = 3\n = 4\n").line, 2u);
}

TEST(ConfigFile, EmptyValueIsAnError) {
  const auto e = error("db =\n");
  EXPECT_EQ(e.line, 1u);
  EXPECT_NE(e.message.find("'db' has no value"), std::string::npos);
}

TEST(ConfigFile, RepeatedKeyNamesBothLines) {
  const auto e = error("top = 3\n# x\ntop = 4\n");
  EXPECT_EQ(e.line, 3u);
  EXPECT_NE(e.message.find("already set on line 1"), std::string::npos);
}

TEST(ConfigFile, LastLineWithoutNewlineCounts) {
  const auto e = entries("top = 3\ndb = x.db");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].value, "x.db");
}

}  // namespace
}  // namespace rssaudit
