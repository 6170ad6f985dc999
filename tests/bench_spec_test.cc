// `edgedecode bench --spec`: a drafter against plain decoding in one run, on stories260K. The table shows both
// arms and their ratio; --json gives one object with both arms' medians, the acceptance, tokens per pass and
// the time split, consistent with each other; a drafter that is the model itself has every draft accepted
// (the speculative arm really drafts and verifies); bad option combinations are usage errors (exit 2).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_util.h"

namespace edgedecode::test {
namespace {

const std::string kF32 = std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/stories260K.f32.gguf";
const std::string kBench = "bench -m " + kF32 + " -t 1 ";

std::vector<nlohmann::json> JsonLines(const std::string& out) {
  std::vector<nlohmann::json> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << line;
    v.push_back(j);
  }
  return v;
}

TEST(BenchSpec, TablePrintsBothArmsAndTheRatio) {
  const CommandResult r = RunEdgedecode(kBench + "--spec --lookup 4 -n 48 -r 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| tg48 plain |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| tg48 lookup 4 (n-gram 3..1, adaptive) |"), std::string::npos) << r.out;
  const size_t at = r.out.find("speculative / plain decode: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const double ratio = std::stod(r.out.substr(at + std::string("speculative / plain decode: ").size()));
  EXPECT_GT(ratio, 0.0) << r.out;
  EXPECT_NE(r.out.find("outputs equal"), std::string::npos) << r.out;
}

TEST(BenchSpec, JsonHasBothArmsAndConsistentFigures) {
  const CommandResult r = RunEdgedecode(kBench + "--spec --lookup 4 -n 48 -r 3 --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const nlohmann::json& j = lines[0];
  EXPECT_EQ(j["command"], "bench");
  EXPECT_EQ(j["test"], "spec tg48");
  EXPECT_EQ(j["method"], "lookup");
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["kv_type"], "f16");
  EXPECT_EQ(j["n_gen"], 48);
  EXPECT_EQ(j["runs"], 3);
  EXPECT_EQ(j["outputs_equal"], true);
  EXPECT_GT(j["prompt_tokens"].get<int>(), 100);  // the built-in story
  const nlohmann::json& a = j["plain"];
  const nlohmann::json& b = j["speculative"];
  for (const nlohmann::json* arm : {&a, &b}) {
    EXPECT_GT((*arm)["tps_median"].get<double>(), 0.0);
    EXPECT_LE((*arm)["tps_min"].get<double>(), (*arm)["tps_median"].get<double>());
    EXPECT_GE((*arm)["tps_max"].get<double>(), (*arm)["tps_median"].get<double>());
  }
  EXPECT_NEAR(j["speedup"].get<double>(), b["tps_median"].get<double>() / a["tps_median"].get<double>(), 1e-9);
  const double acceptance = b["acceptance_rate"].get<double>();
  EXPECT_GE(acceptance, 0.0);
  EXPECT_LE(acceptance, 1.0);
  EXPECT_LE(b["accepted"].get<int64_t>(), b["drafted"].get<int64_t>());
  // 47 timed tokens a run, 3 runs: every pass gives at least one.
  const int64_t passes = b["verify_passes"].get<int64_t>() + b["plain_passes"].get<int64_t>();
  ASSERT_GT(passes, 0);
  EXPECT_LE(passes, 47 * 3);
  EXPECT_NEAR(b["tokens_per_pass"].get<double>(), 47.0 * 3 / static_cast<double>(passes), 1e-9);
  double parts = 0;
  for (const char* k : {"draft_s", "verify_s", "plain_s", "other_s"}) {
    EXPECT_GE(b[k].get<double>(), 0.0) << k;
    parts += b[k].get<double>();
  }
  EXPECT_NEAR(parts, b["decode_s"].get<double>(), 1e-6 + 1e-3 * b["decode_s"].get<double>());
}

// The model drafting for itself, never paused: every drafted token is accepted, so the speculative arm's
// passes give several tokens each; a draft model's trees; and layer skip with a prompt from a file at two
// thread counts.
TEST(BenchSpec, DraftModelAndSelfSpecDraftAndVerify) {
  CommandResult r = RunEdgedecode(kBench + "--spec --draft " + kF32 + " --draft-max 4 --lookup-fixed -n 40 -r 1 --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const nlohmann::json& b = lines[0]["speculative"];
  EXPECT_EQ(lines[0]["method"], "draft");
  EXPECT_GT(b["drafted"].get<int64_t>(), 20);
  EXPECT_EQ(b["accepted"], b["drafted"]);
  EXPECT_GT(b["tokens_per_pass"].get<double>(), 3.0);
  EXPECT_GT(b["draft_s"].get<double>(), 0.0);

  // A draft model's token trees (a q8_0 re-encoding, trees of 4 nodes): the same tokens, some passes branching.
  r = RunEdgedecode(kBench + "--spec --draft-quant q8_0 --draft-max 3 --tree-nodes 4 --lookup-fixed -n 40 -r 1 --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_EQ(lines[0]["outputs_equal"], true);
  EXPECT_GT(lines[0]["speculative"]["tree_passes"].get<int64_t>(), 0) << r.out;

  const std::string prompt = TempPath("bench_spec_prompt.txt");
  std::ofstream(prompt) << "Lily saw a big dog. The dog was happy. Lily saw a big dog. The dog was happy. Lily";
  r = RunEdgedecode("bench -m " + kF32 + " -t 1,2 --spec --self-spec 3 --lookup-fixed -f " + prompt + " -n 24 -r 1 --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;  // one A/B per thread count
  for (const nlohmann::json& j : lines) {
    EXPECT_EQ(j["method"], "self-spec");
    EXPECT_GT(j["speculative"]["drafted"].get<int64_t>(), 0);
    EXPECT_LT(j["prompt_tokens"].get<int>(), 40);
  }
  std::remove(prompt.c_str());
}

TEST(BenchSpec, BadCombinationsAreUsageErrors) {
  const std::string q4 = "--draft-quant q4_0";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--spec -n 8", "--spec needs a drafter"},
      {"--lookup 4 -n 8", "need --spec"},
      {"--prompt hello -n 8", "--spec"},
      {"--spec --lookup 4 -p 16 -n 8", "--n-prompt"},
      {"--spec --lookup 4 -k 4 -n 8", "--verify"},
      {"--spec --lookup 4 -d 8 -n 8", "--depth"},
      {"--spec --lookup 4 -n 1", "-n must be >= 2"},
      {"--spec --draft " + kF32 + " " + q4 + " -n 8", "--draft"},
      {"--spec --tree-nodes 4 -n 8", "--tree-nodes needs --lookup"},
      {"--spec --draft-quant q9_9 -n 8", "--draft-quant"},
      {"--spec --lookup 4 --draft-max 4 -n 8", "--draft-max needs"},
      {"--spec --lookup 4 --prompt a -f b -n 8", "--prompt"},
      {"--spec --self-spec 0-4 -n 8", "--self-spec"},
  };
  for (const auto& [args, what] : cases) {
    const CommandResult r = RunEdgedecode(kBench + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(r.out.find("speculative / plain"), std::string::npos) << args;
  }
}

}  // namespace
}  // namespace edgedecode::test
