// ToValidUtf8 / EscapeForTerminal: invalid bytes become U+FFFD (files) or \\xNN (terminals), valid text is
// unchanged, controls are escaped for a terminal.
#include "base/utf8.h"

#include <gtest/gtest.h>

using namespace edgedecode;

TEST(Utf8, ValidTextUnchanged) {
  const std::string s = "Conv_0 \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80 tab\tnewline\n";
  EXPECT_EQ(ToValidUtf8(s), s);
  EXPECT_EQ(EscapeForTerminal("Conv_0 \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), "Conv_0 \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
}

TEST(Utf8, InvalidBytesReplaced) {
  EXPECT_EQ(ToValidUtf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");          // overlong '/'
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(ToValidUtf8("x\xE2\x82"), "x\xEF\xBF\xBD\xEF\xBF\xBD");        // truncated at the end
  EXPECT_EQ(ToValidUtf8("\xF4\x90\x80\x80").find("\xF4"), std::string::npos);  // past U+10FFFF
}

TEST(Utf8, TerminalEscapesControlsAndInvalidBytes) {
  EXPECT_EQ(EscapeForTerminal("a\x1b[2Jb\r\x7f"), "a\\x1B[2Jb\\x0D\\x7F");
  EXPECT_EQ(EscapeForTerminal("t\tn\n"), "t\\x09n\\x0A");
  EXPECT_EQ(EscapeForTerminal("\xC2\x9B" "1m"), "\\xC2\\x9B1m");  // C1 CSI
  EXPECT_EQ(EscapeForTerminal("a\xFF" "b"), "a\\xFFb");
  EXPECT_EQ(ToValidUtf8("a\x1b"), "a\x1b");  // files keep control characters (CSV quotes them)
}
