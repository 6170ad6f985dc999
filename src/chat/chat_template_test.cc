// chat_template_test: every rendering in testdata/chat-templates/expected (27 real templates x 11
// conversations x add_generation_prompt, made with @huggingface/jinja 0.5.13) must come out byte for
// byte, and every `.err` case must fail with the same message; plus unit tests of the language and of
// hostile templates.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/template.h"

namespace edgedecode::chat {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const fs::path kDir = fs::path(EDGEDECODE_TESTDATA) / "chat-templates";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The oracle's frozen clock: Sunday 2025-01-05 14:07:09 local time.
std::tm FrozenNow() {
  std::tm t{};
  t.tm_year = 125;
  t.tm_mon = 0;
  t.tm_mday = 5;
  t.tm_hour = 14;
  t.tm_min = 7;
  t.tm_sec = 9;
  t.tm_wday = 0;
  return t;
}

// Where two strings first differ, with some context, for a readable failure.
std::string FirstDifference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const size_t from = i > 40 ? i - 40 : 0;
  return "first difference at byte " + std::to_string(i) + "\n  want: " + Json(want.substr(from, 100)).dump() +
         "\n  got:  " + Json(got.substr(from, 100)).dump();
}

TEST(ChatTemplateOracle, AllExpectedRenderingsMatch) {
  ASSERT_TRUE(fs::exists(kDir / "manifest.json")) << kDir;
  const Json manifest = Json::parse(ReadFile(kDir / "manifest.json"));
  const Json conversations = Json::parse(ReadFile(kDir / "conversations.json"))["conversations"];
  int total = 0, passed = 0;
  for (const Json& t : manifest["templates"]) {
    const std::string file = t["file"];
    const std::string stem = fs::path(file).stem().string();
    const std::string text = ReadFile(kDir / file);
    const auto parsed = Template::Parse(text);
    for (const Json& conv : conversations) {
      for (const bool gen : {true, false}) {
        const std::string name = stem + "__" + conv["id"].get<std::string>() + (gen ? "__gen" : "__nogen");
        const fs::path txt = kDir / "expected" / (name + ".txt"), err = kDir / "expected" / (name + ".err");
        ++total;
        ChatRenderOptions opts;
        opts.add_generation_prompt = gen;
        if (t["bos_token"].is_string()) opts.bos_token = t["bos_token"].get<std::string>();
        if (t["eos_token"].is_string()) opts.eos_token = t["eos_token"].get<std::string>();
        if (conv.contains("extra_context")) opts.extra_context = conv["extra_context"];
        opts.now = FrozenNow();
        ASSERT_TRUE(parsed.ok()) << file << ": " << parsed.status().message();
        const auto got = RenderChat(*parsed, conv["messages"], opts);
        if (fs::exists(txt)) {
          const std::string want = ReadFile(txt);
          if (!got.ok()) {
            ADD_FAILURE() << name << ": expected a rendering, got error: " << got.status().message();
          } else if (*got != want) {
            ADD_FAILURE() << name << ": " << FirstDifference(want, *got);
          } else {
            ++passed;
          }
        } else {
          ASSERT_TRUE(fs::exists(err)) << "no expected output for " << name;
          const std::string want = ReadFile(err);
          if (got.ok()) {
            ADD_FAILURE() << name << ": expected error \"" << want << "\", got a rendering";
          } else if (got.status().message() != want) {
            ADD_FAILURE() << name << ": expected error \"" << want << "\", got \"" << got.status().message() << "\"";
          } else {
            ++passed;
          }
        }
      }
    }
  }
  std::printf("chat-templates oracle: %d of %d cases match\n", passed, total);
  EXPECT_EQ(total, 594);
  EXPECT_EQ(passed, total);
}

}  // namespace
}  // namespace edgedecode::chat
