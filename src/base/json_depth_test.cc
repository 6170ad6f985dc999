// CheckJsonDepth: deep nesting refused with the line and column, strings ignored, linear on a million levels.
#include "base/json_depth.h"

#include <gtest/gtest.h>

using namespace edgedecode;

TEST(JsonDepth, AcceptsNormalDocuments) {
  EXPECT_TRUE(CheckJsonDepth(R"({"a": [1, {"b": [[]]}], "s": "[[[[{{{{"})", "x.json", 5).ok());
  EXPECT_TRUE(CheckJsonDepth("", "x.json").ok());
  EXPECT_TRUE(CheckJsonDepth(std::string(256, '[') + std::string(256, ']'), "x.json").ok());
}

TEST(JsonDepth, RefusesDeepNestingNamingWhere) {
  Status s = CheckJsonDepth("{\"a\":\n [[[1]]]}", "p.json", 3);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_NE(s.message().find("p.json:2:4"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("deeper than 3"), std::string::npos) << s.message();
}

TEST(JsonDepth, MillionLevelsIsAnErrorNotACrash) {
  std::string deep(1000000, '[');
  Status s = CheckJsonDepth(deep, "deep.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("deeper than 256"), std::string::npos);
  // Escaped quotes inside strings do not end them: the brackets after are still inside the string.
  EXPECT_TRUE(CheckJsonDepth(R"(["\"[[[[[["])", "e.json", 1).ok());
}
