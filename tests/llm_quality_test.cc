// `perplexity` end to end: the quality a KV type costs, measured as the issue asks (delta-PPL and mean
// KL divergence against f16 KV on stories260K, over a text the model writes itself), and the
// --save-logits / --kld-base file checks.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace edgedecode::test {
namespace {

const std::string kModel = std::string(EDGEDECODE_TESTDATA) + "/llm/gguf/stories260K.f16.gguf";

// ~6 KB of stories sampled from the model (20 seeds), so the text is in its domain.
const std::string& StoryText() {
  static const std::string path = [] {
    std::string p = TempPath("stories.txt"), text;
    for (int seed = 1; seed <= 20; ++seed) {
      CommandResult r = RunEdgedecode("run -m " + kModel + " -p 'Once upon a time' -n 400 --temp 0.8 --seed " +
                                      std::to_string(seed));
      EXPECT_EQ(r.exit_code, 0) << r.err;
      text += r.out + "\n";
    }
    std::ofstream(p) << text;
    return p;
  }();
  return path;
}

nlohmann::json Perplexity(const std::string& args) {
  CommandResult r = RunEdgedecode("perplexity -m " + kModel + " -f " + StoryText() + " -c 256 -t 2 --json " + args);
  EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
  EXPECT_NE(r.err.find("ppl"), std::string::npos) << "progress is shown while it runs";
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

class KvQuality : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    base_path_ = TempPath("f16kv.base");
    base_ = Perplexity("--save-logits " + base_path_);
  }
  static void TearDownTestSuite() { std::remove(base_path_.c_str()); }
  static nlohmann::json Against(const std::string& kv) { return Perplexity("--kld-base " + base_path_ + " " + kv); }
  static inline std::string base_path_;
  static inline nlohmann::json base_;
};

TEST_F(KvQuality, SameConfigurationIsZeroDivergence) {
  ASSERT_TRUE(base_.contains("ppl"));
  EXPECT_GT(base_["tokens_scored"].get<int>(), 1000);
  const double ppl = base_["ppl"].get<double>();
  EXPECT_GT(ppl, 1.5);  // a 260K-parameter model does not know its own samples by heart
  EXPECT_LT(ppl, 10.0);
  nlohmann::json same = Against("--kv-type f16");
  EXPECT_EQ(same["kld_mean"].get<double>(), 0.0);
  EXPECT_EQ(same["top1_agreement"].get<double>(), 1.0);
  EXPECT_EQ(same["ppl"].get<double>(), ppl);
}

// Issue 4 targets: q8_0 KV mean KLD <= 0.002 nats; q4_0 KV with rotated keys markedly better than
// without. Measured: q8_0 1.0e-3 rotated (auto) / 2.1e-3 not; q4_0 0.46 rotated / 1.12 not.
TEST_F(KvQuality, Q8_0KvWithinTarget) {
  nlohmann::json q8 = Against("--kv-type q8_0");
  EXPECT_LE(q8["kld_mean"].get<double>(), 0.002);
  EXPECT_GT(q8["kld_mean"].get<double>(), 0.0);  // it is a different computation
  EXPECT_LT(std::abs(q8["ppl"].get<double>() - base_["ppl"].get<double>()), 0.05);
  // The auto default rotates q8_0 keys; without rotation the divergence is higher.
  nlohmann::json plain = Against("--kv-type q8_0 --rotate-k 0");
  EXPECT_GT(plain["kld_mean"].get<double>(), q8["kld_mean"].get<double>());
}

// bf16 KV (8 significant bits, the queries and softmax weights rounded to bf16 too): far closer to f16
// than q8_0. Measured: 7.5e-5 nats against q8_0's 1.0e-3.
TEST_F(KvQuality, Bf16KvCloserThanQ8_0) {
  nlohmann::json bf16 = Against("--kv-type bf16");
  EXPECT_LE(bf16["kld_mean"].get<double>(), 3e-4);
  EXPECT_GT(bf16["kld_mean"].get<double>(), 0.0);  // it is a different computation
  EXPECT_LT(std::abs(bf16["ppl"].get<double>() - base_["ppl"].get<double>()), 0.02);
}

TEST_F(KvQuality, RotationHelpsQ4_0Keys) {
  nlohmann::json rotated = Against("--kv-type q4_0");
  nlohmann::json plain = Against("--kv-type q4_0 --rotate-k 0");
  EXPECT_LT(rotated["kld_mean"].get<double>() * 1.5, plain["kld_mean"].get<double>());
  EXPECT_LT(rotated["ppl"].get<double>(), plain["ppl"].get<double>());
}

TEST(PerplexityErrors, BaseFileChecks) {
  const std::string text = StoryText();
  CommandResult r = RunEdgedecode("perplexity -m " + kModel + " -f /nonexistent.txt");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("/nonexistent.txt"), std::string::npos) << r.err;
  const std::string junk = TempPath("junk.base");
  { std::ofstream(junk) << "not a base file at all"; }
  r = RunEdgedecode("perplexity -m " + kModel + " -f " + text + " -c 256 --kld-base " + junk);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("not a --save-logits file"), std::string::npos) << r.err;
  // A base saved at another context size does not line up with this run: refused, not compared.
  const std::string base = TempPath("c128.base");
  r = RunEdgedecode("perplexity -m " + kModel + " -f " + text + " -c 128 --save-logits " + base);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunEdgedecode("perplexity -m " + kModel + " -f " + text + " -c 256 --kld-base " + base);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("context size"), std::string::npos) << r.err;
  std::remove(junk.c_str());
  std::remove(base.c_str());
}

}  // namespace
}  // namespace edgedecode::test
