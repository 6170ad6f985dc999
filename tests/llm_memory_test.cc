// The memory plan is the runtime's own accounting: for several configurations (context, KV type, model)
// the peak resident memory that `run` measures (VmHWM) must be within 5% or 16 MiB of what it planned.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "cli_util.h"

namespace edgedecode::test {
namespace {

const std::string kLlm = std::string(EDGEDECODE_TESTDATA) + "/llm";

struct Config {
  std::string model, kv;
  int ctx;
};

TEST(MemoryPlan, PeakRssMatchesPlan) {
  const std::vector<Config> configs = {
      {"stories260K.f32.gguf", "f32", 131072},
      {"stories260K.f32.gguf", "f16", 131072},
      {"stories260K.q8_0-ffn_down_f16.gguf", "q8_0", 262144},
      {"stories260K.q4_0-ffn_down_f16.gguf", "q4_0", 262144},
      {"stories260K.f16.gguf", "f16", 2048},
  };
  for (const Config& c : configs) {
    CommandResult r = RunEdgedecode("run -m " + kLlm + "/gguf/" + c.model + " -p 'Once upon a time' -n 16 --temp 0 -t 2 --json -c " +
                                    std::to_string(c.ctx) + " --kv-type " + c.kv);
    ASSERT_EQ(r.exit_code, 0) << c.model << " " << c.kv << ": " << r.err;
    auto j = nlohmann::json::parse(r.out);
    const double plan = j["memory"]["plan_bytes"].get<double>();
    const double peak = j["memory"]["peak_rss_bytes"].get<double>();
    const double tol = std::max(0.05 * plan, 16.0 * (1 << 20));
    std::printf("%-36s kv %-5s ctx %7d: plan %8.1f MiB, peak RSS %8.1f MiB (%+.1f%%)\n", c.model.c_str(), c.kv.c_str(), c.ctx,
                plan / (1 << 20), peak / (1 << 20), 100 * (peak - plan) / plan);
    EXPECT_LE(std::fabs(peak - plan), tol) << c.model << " kv " << c.kv << " ctx " << c.ctx;
  }
}

TEST(MemoryPlan, PlanCommandPassFailAgainstTarget) {
  const std::string m = kLlm + "/gguf/stories260K.f32.gguf";
  const std::string small = TempPath("tiny-device.json"), big = TempPath("big-device.json");
  { std::ofstream(small) << R"({"name": "tiny", "memory_bytes": 4000000})"; }
  { std::ofstream(big) << R"({"name": "big", "memory_bytes": 8000000000})"; }
  CommandResult a = RunEdgedecode("plan -m " + m + " -c 4096 --target " + small + " --json");
  CommandResult b = RunEdgedecode("plan -m " + m + " -c 4096 --target " + big + " --json");
  std::remove(small.c_str());
  std::remove(big.c_str());
  EXPECT_EQ(a.exit_code, 1) << a.err;
  EXPECT_EQ(b.exit_code, 0) << b.err;
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_FALSE(ja["pass"].get<bool>());
  EXPECT_TRUE(jb["pass"].get<bool>());
  // The KV line is the formula: 2 x layers x kv_heads x head_dim x ctx x 2 bytes (f16).
  bool found = false;
  for (const auto& it : jb["items"]) {
    if (it["component"] == "KV cache") {
      EXPECT_EQ(it["bytes"].get<uint64_t>(), 2ull * 5 * 4 * 8 * 4096 * 2);
      found = true;
    }
  }
  EXPECT_TRUE(found);
  // Smaller KV types allow longer contexts.
  auto rec = jb["max_ctx_by_kv_type"];
  ASSERT_GE(rec.size(), 2u);
  EXPECT_GE(rec[1]["max_ctx"].get<int>(), rec[0]["max_ctx"].get<int>());
}

// gemma3's sliding-window layers keep a ring of window + batch - 1 rows: at 131072 positions gemma3-tiny (1
// global layer, 3 sliding with a window of 16, 1 KV head of 128) plans 1 x 131072 + 3 x 527 rows, about a
// quarter of a full cache, and `run` allocates what the plan says (peak RSS within 5% or 16 MiB; a full cache
// would be 192 MiB more).
TEST(MemoryPlan, SlidingWindowRingsArePlannedAndAllocated) {
  const std::string m = TempPath("plan-gemma3-tiny.gguf");
  ASSERT_EQ(RunEdgedecode("synth --preset gemma3-tiny --type f16 -o " + m).exit_code, 0);
  CommandResult p = RunEdgedecode("plan -m " + m + " -c 131072 --json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const uint64_t row = 128 * 2 * 2;  // K and V rows of one f16 head of 128
  const uint64_t full = 4ull * 131072 * row;
  uint64_t kv = 0;
  const nlohmann::json pj = nlohmann::json::parse(p.out);
  for (const auto& it : pj["items"])
    if (it["component"] == "KV cache") kv = it["bytes"].get<uint64_t>();
  EXPECT_EQ(kv, (131072ull + 3 * (16 + 512 - 1)) * row);
  EXPECT_LT(kv, full / 3);
  CommandResult r = RunEdgedecode("run -m " + m + " -p 'Once upon a time' -n 16 --temp 0 -t 2 --json -c 131072");
  std::remove(m.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const double plan = j["memory"]["plan_bytes"].get<double>();
  const double peak = j["memory"]["peak_rss_bytes"].get<double>();
  std::printf("gemma3-tiny ctx 131072: KV %.1f MiB (full cache %.1f MiB), plan %.1f MiB, peak RSS %.1f MiB\n", kv / 1048576.0,
              full / 1048576.0, plan / 1048576.0, peak / 1048576.0);
  EXPECT_LE(std::fabs(peak - plan), std::max(0.05 * plan, 16.0 * (1 << 20)));
}

TEST(MemoryPlan, RunRefusesWhatDoesNotFit) {
  // EDGEDECODE_AVAILABLE_MEMORY stands in for a small device: 32 MiB, and a KV cache of 80 MiB.
  CommandResult r = RunEdgedecode("run -m " + kLlm + "/gguf/stories260K.f32.gguf -p hi -n 4 -c 131072 --kv-type f16 2>&1 "
                                  "</dev/null; echo \"exit=$?\"", "EDGEDECODE_AVAILABLE_MEMORY=33554432");
  EXPECT_NE(r.out.find("exit=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("KV cache"), std::string::npos) << r.out;  // the plan table is shown
  EXPECT_NE(r.out.find("is available"), std::string::npos) << r.out;
  // The same run fits without the limit.
  CommandResult ok = RunEdgedecode("run -m " + kLlm + "/gguf/stories260K.f32.gguf -p hi -n 4 -c 131072 --kv-type f16");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

}  // namespace
}  // namespace edgedecode::test
