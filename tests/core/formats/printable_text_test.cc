#include "core/formats/printable_text.h"

#include <gtest/gtest.h>

#include <string>

namespace rssaudit {
namespace {

TEST(PrintableText, ValidUtf8IsKeptAsItIs) {
  EXPECT_EQ(printable("worker 7"), "worker 7");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7");  // é € 🐧
  EXPECT_EQ(printable("\xc2\xa0nbsp"), "\xc2\xa0nbsp");    // U+00A0: no C1
}

// A process names itself: ESC, CSI and the like would drive the terminal
// that shows `top`.
TEST(PrintableText, EveryControlC0DelAndC1BecomesOneQuestionMark) {
  EXPECT_EQ(printable("a\x1b[2Jb\tc\n\x7f"), "a?[2Jb?c??");
  EXPECT_EQ(printable("x\xc2\x9b"
                      "31mred"),
            "x?31mred");  // U+009B, CSI
  EXPECT_EQ(printable("\xc2\x80\xc2\x9f"), "??");
  EXPECT_EQ(printable("a\nb\tc\x01", "\n\t"), "a\nb\tc?");
}

// Bytes that are not UTF-8: raw 0x9B (8-bit CSI), 0xff, a stray
// continuation, a truncated, an overlong or a surrogate sequence.
TEST(PrintableText, BytesThatAreNotUtf8BecomeQuestionMarks) {
  EXPECT_EQ(printable("\x9b"
                      "31m"),
            "?31m");
  EXPECT_EQ(printable("\xff\xfe"), "??");
  EXPECT_EQ(printable("\x80x"), "?x");
  EXPECT_EQ(printable("ab\xe2\x82"), "ab??");
  EXPECT_EQ(printable("\xc0\xaf"), "??");            // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "???");       // U+D800
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "????");  // past U+10FFFF
}

}  // namespace
}  // namespace rssaudit
