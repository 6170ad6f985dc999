// The profiler (`--profile`, `--trace`) and the fusion switches (`--no-fuse`, EDGEDECODE_NO_FUSE), end to
// end through the CLI: the profile lists every op of the path that ran with sane numbers, profiling does
// not change the output, the trace is valid Chrome-trace JSON with events on every thread, and each
// unfused path gives the fused output (bit for bit, or within a tolerance where the sums are reordered).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "cli_util.h"

namespace edgedecode::test {
namespace {

const std::string kLlm = std::string(EDGEDECODE_TESTDATA) + "/llm";

// Synthetic llama-tiny (dim 256, 4 layers, GQA 8/4, ffn 768): big enough that every matmul runs on both
// threads and q4_0 takes the repacked kernels. qwen2-tiny adds QKV biases and NEOX RoPE.
class Profile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tiny_ = new std::string(TempPath("llama-tiny.q4_0.gguf"));
    qwen_ = new std::string(TempPath("qwen2-tiny.q8_0.gguf"));
    CommandResult a = RunEdgedecode("synth --preset llama-tiny --type q4_0 --seed 7 -o " + *tiny_);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    CommandResult b = RunEdgedecode("synth --preset qwen2-tiny --type q8_0 --seed 7 -o " + *qwen_);
    ASSERT_EQ(b.exit_code, 0) << b.err;
  }
  static void TearDownTestSuite() {
    std::remove(tiny_->c_str());
    std::remove(qwen_->c_str());
    delete tiny_;
    delete qwen_;
  }
  static std::string* tiny_;
  static std::string* qwen_;
};
std::string* Profile::tiny_ = nullptr;
std::string* Profile::qwen_ = nullptr;

nlohmann::json RunJson(const std::string& args, const std::string& env = "") {
  CommandResult r = RunEdgedecode(args, env);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  if (r.exit_code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

std::set<std::string> OpNames(const nlohmann::json& phase) {
  std::set<std::string> s;
  for (const auto& o : phase["ops"]) s.insert(o["op"].get<std::string>());
  return s;
}

// Every op has calls, non-negative times and rates, bytes and a kernel; the op times add up to at most
// the forward-pass time and to most of it (the rest is loop overhead between ops).
void CheckPhase(const nlohmann::json& p, const std::set<std::string>& expected, int layers, const std::string& what) {
  ASSERT_TRUE(p.is_object()) << what;
  EXPECT_EQ(OpNames(p), expected) << what;
  const uint64_t passes = p["passes"].get<uint64_t>();
  ASSERT_GT(passes, 0u) << what;
  double sum = 0;
  for (const auto& o : p["ops"]) {
    const std::string name = o["op"];
    const uint64_t calls = o["calls"].get<uint64_t>();
    if (name == "embed" || name.rfind("output", 0) == 0) {
      EXPECT_EQ(calls, passes) << what << " " << name;
    }
    if (name == "wqkv" || name == "attention" || name == "down" || name == "rope+kv_write") {
      EXPECT_EQ(calls, passes * static_cast<uint64_t>(layers)) << what << " " << name;
    }
    EXPECT_GT(calls, 0u) << what << " " << name;
    EXPECT_GE(o["ms"].get<double>(), 0.0) << what << " " << name;
    EXPECT_GE(o["barrier_ms"].get<double>(), 0.0) << what << " " << name;
    EXPECT_GE(o["wake_ms"].get<double>(), 0.0) << what << " " << name;
    EXPECT_GE(o["gb_s"].get<double>(), 0.0) << what << " " << name;
    EXPECT_GT(o["bytes"].get<uint64_t>(), 0u) << what << " " << name;
    EXPECT_FALSE(o["kernel"].get<std::string>().empty()) << what << " " << name;
    sum += o["ms"].get<double>();
  }
  const double total = p["forward_ms"].get<double>();
  EXPECT_NEAR(p["ops_ms"].get<double>(), sum, 1e-6 * total + 1e-9) << what;
  EXPECT_LE(sum, total * 1.0001) << what;
  EXPECT_GE(sum, total * 0.6) << what;
  ASSERT_EQ(p["threads"].size(), 2u) << what;
  for (const auto& t : p["threads"]) {
    EXPECT_GE(t["busy_ms"].get<double>(), 0.0) << what;
    EXPECT_GE(t["barrier_ms"].get<double>(), 0.0) << what;
    EXPECT_LE(t["busy_ms"].get<double>(), total * 1.05) << what;
  }
  // Some parallel region ran on the worker.
  EXPECT_GT(p["threads"][1]["busy_ms"].get<double>(), 0.0) << what;
}

// Fused, wo and down do the residual add (no "residual" op).
const std::set<std::string> kFusedOps = {"embed", "attn_norm+quantize", "wqkv", "rope+kv_write", "attention",
                                         "quantize", "wo", "ffn_norm+quantize", "gate_up+silu*mul",
                                         "down", "output_norm+quantize", "output"};
const std::set<std::string> kUnfusedOps = {"embed", "attn_norm", "quantize", "wq", "wk", "wv", "rope", "kv_write",
                                           "attention", "wo", "residual", "ffn_norm", "gate", "up", "silu*mul",
                                           "down", "output_norm", "output"};

TEST_F(Profile, RunProfileListsEveryOpAndKeepsTheTokens) {
  const std::string base = "run -m " + *tiny_ + " -p 'Once upon a time there was' -n 12 --temp 0 --ignore-eos -t 2 --json";
  nlohmann::json plain = RunJson(base);
  CommandResult r = RunEdgedecode(base + " --profile");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json prof = nlohmann::json::parse(r.out);
  EXPECT_EQ(prof["tokens"], plain["tokens"]);
  EXPECT_FALSE(plain.contains("profile"));
  CheckPhase(prof["profile"]["prefill"], kFusedOps, 4, "prefill");
  CheckPhase(prof["profile"]["decode"], kFusedOps, 4, "decode");
  EXPECT_EQ(prof["profile"]["prefill"]["passes"], 1);
  EXPECT_EQ(prof["profile"]["decode"]["passes"], 11);  // 12 tokens sampled: 11 decode passes
  // The table on stderr.
  EXPECT_NE(r.err.find("profile: prefill, 1 passes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("profile: decode, 11 passes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("| gate_up+silu*mul"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("q4_0 x q8_0, 16-row repacked"), std::string::npos) << r.err;

  nlohmann::json unfused = RunJson(base + " --profile --no-fuse all");
  EXPECT_EQ(unfused["tokens"], plain["tokens"]);
  EXPECT_EQ(unfused["fusions_off"], "norm_quant,qkv,gate_up_silu,rope_kv,attn_online,residual,attn_tiles");
  CheckPhase(unfused["profile"]["prefill"], kUnfusedOps, 4, "prefill unfused");
  CheckPhase(unfused["profile"]["decode"], kUnfusedOps, 4, "decode unfused");
}

TEST_F(Profile, TraceIsChromeJsonWithEventsOnEveryThread) {
  const std::string trace = TempPath("trace.json");
  CommandResult r = RunEdgedecode("run -m " + *tiny_ + " -p 'Hello' -n 4 --temp 0 --ignore-eos -t 2 --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("profile: decode"), std::string::npos) << "--trace alone prints no table";
  const std::string text = ReadFile(trace);
  std::remove(trace.c_str());
  nlohmann::json j = nlohmann::json::parse(text);  // throws (and fails the test) unless valid JSON
  ASSERT_TRUE(j["traceEvents"].is_array());
  std::map<int, std::set<std::string>> by_thread;
  std::set<std::string> thread_names;
  int passes = 0;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid") && e.contains("name")) << e.dump();
    if (e["ph"] == "M") {
      if (e["name"] == "thread_name") thread_names.insert(e["args"]["name"].get<std::string>());
      continue;
    }
    ASSERT_EQ(e["ph"], "X") << e.dump();
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    by_thread[e["tid"].get<int>()].insert(e["name"].get<std::string>());
    if (e["name"] == "decode pass" || e["name"] == "prefill pass") ++passes;
  }
  EXPECT_EQ(thread_names, (std::set<std::string>{"main thread 0", "worker 1"}));
  EXPECT_EQ(passes, 4);  // the prompt, then 3 decode passes
  ASSERT_EQ(by_thread.size(), 2u);
  for (const char* op : {"wqkv", "attention", "gate_up+silu*mul", "down", "output", "barrier"})
    EXPECT_TRUE(by_thread[1].count(op)) << "worker has no '" << op << "' event";
  for (const std::string& op : kFusedOps) EXPECT_TRUE(by_thread[0].count(op)) << "main thread has no '" << op << "' event";
}

// logits --json of a teacher-forced pass: the top-5 probabilities at every position.
nlohmann::json Logits(const std::string& model, const std::string& extra) {
  return RunJson("logits -m " + model + " --ids 1,17,230,45,9,421,300,77,5,140,12,99,500,3,8,250,31 --top 5 --json -t 2 " + extra);
}

// Largest difference of the top-5 probabilities, or infinity when the top ids differ.
double MaxProbDiff(const nlohmann::json& a, const nlohmann::json& b) {
  double d = 0;
  if (a["positions"].size() != b["positions"].size()) return INFINITY;
  for (size_t i = 0; i < a["positions"].size(); ++i) {
    const auto& ta = a["positions"][i]["top"];
    const auto& tb = b["positions"][i]["top"];
    for (size_t k = 0; k < ta.size(); ++k) {
      if (ta[k][0] != tb[k][0]) return INFINITY;
      d = std::max(d, std::fabs(ta[k][1].get<double>() - tb[k][1].get<double>()));
    }
  }
  return d;
}

// Each fusion off, alone, over the batched path (one pass of 17 tokens) and the decode path (-b 1: one
// token per pass), on q4_0 (repacked kernels), q8_0 with biases / NEOX RoPE / rotated q8_0 keys, and an
// f32 model (float activations). The bit-identical fusions must give the same probabilities exactly;
// attn_online (the unfused softmax over a full score row) within 1e-5 absolute.
TEST_F(Profile, EachFusionOffGivesTheFusedOutput) {
  const std::vector<std::pair<std::string, std::string>> models = {
      {*tiny_, ""}, {*qwen_, "--kv-type q8_0"}, {kLlm + "/gguf/stories260K.f32.gguf", ""}};
  const std::vector<std::pair<std::string, bool>> fusions = {
      {"norm_quant", true}, {"qkv", true}, {"gate_up_silu", true}, {"rope_kv", true}, {"attn_online", false},
      {"residual", true}};
  for (const auto& [model, kv] : models) {
    for (const char* batch : {"", "-b 1"}) {
      const std::string extra = kv + " " + batch;
      nlohmann::json fused = Logits(model, extra);
      ASSERT_FALSE(fused.empty());
      for (const auto& [name, exact] : fusions) {
        nlohmann::json off = Logits(model, extra + " --no-fuse " + name);
        const double d = MaxProbDiff(fused, off);
        if (exact) {
          EXPECT_EQ(fused["positions"], off["positions"]) << model << " " << extra << " --no-fuse " << name << " (max diff " << d << ")";
        } else {
          EXPECT_LE(d, 1e-5) << model << " " << extra << " --no-fuse " << name;
        }
      }
    }
  }
}

// The fused paths split rows over the threads; every row is computed the same way whatever the split.
TEST_F(Profile, FusedPathsDoNotDependOnTheThreadCount) {
  for (const char* fuse : {"", "--no-fuse all"}) {
    nlohmann::json t1 = RunJson("logits -m " + *tiny_ + " --ids 1,17,230,45,9,1021,300,77 --top 5 --json -t 1 " + fuse);
    nlohmann::json t3 = RunJson("logits -m " + *tiny_ + " --ids 1,17,230,45,9,1021,300,77 --top 5 --json -t 3 " + fuse);
    EXPECT_EQ(t1["positions"], t3["positions"]) << fuse;
  }
}

TEST_F(Profile, EnvironmentVariableTurnsFusionsOff) {
  nlohmann::json j = RunJson("run -m " + *tiny_ + " -p 'Hi' -n 3 --temp 0 -t 2 --json --profile", "EDGEDECODE_NO_FUSE=qkv,gate_up_silu");
  EXPECT_EQ(j["fusions_off"], "qkv,gate_up_silu");
  std::set<std::string> ops = OpNames(j["profile"]["decode"]);
  EXPECT_TRUE(ops.count("wq") && ops.count("wk") && ops.count("wv") && ops.count("gate") && ops.count("silu*mul"));
  EXPECT_FALSE(ops.count("wqkv") || ops.count("gate_up+silu*mul"));
  EXPECT_TRUE(ops.count("attn_norm+quantize"));  // the others stay on
}

TEST_F(Profile, UnknownFusionIsAUsageError) {
  for (const std::string& cmd : {"run -m " + *tiny_ + " -p x -n 1 --no-fuse qkv,bogus",
                                 "bench -m " + *tiny_ + " -p 0 -n 1 -r 1 --no-fuse bogus"}) {
    CommandResult r = RunEdgedecode(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("unknown fusion 'bogus'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("valid: norm_quant, qkv, gate_up_silu, rope_kv, attn_online, residual, attn_tiles, all"), std::string::npos) << r.err;
  }
  CommandResult r = RunEdgedecode("run -m " + *tiny_ + " -p x -n 1", "EDGEDECODE_NO_FUSE=nope");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("EDGEDECODE_NO_FUSE: unknown fusion 'nope'"), std::string::npos) << r.err;
}

TEST_F(Profile, BenchProfileInJsonAndTrace) {
  const std::string trace = TempPath("bench_trace.json");
  CommandResult r = RunEdgedecode("bench -m " + *tiny_ + " -p 16 -n 4 -t 2 -r 2 --profile --json --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    const std::string test = j["test"];
    if (test == "pp16") CheckPhase(j["profile"]["prefill"], kFusedOps, 4, "bench pp16");
    if (test == "tg4") CheckPhase(j["profile"]["decode"], kFusedOps, 4, "bench tg4");
    // Only the measured runs: 2 passes of the prompt; 2 x 4 decode passes.
    if (test == "pp16") {
      EXPECT_EQ(j["profile"]["prefill"]["passes"], 2);
    }
    if (test == "tg4") {
      EXPECT_EQ(j["profile"]["decode"]["passes"], 8);
    }
    EXPECT_EQ(j["profile"].size(), 1u) << test;
    ++n;
  }
  EXPECT_EQ(n, 2);
  EXPECT_NE(r.err.find("profile: decode, 8 passes"), std::string::npos) << r.err;
  nlohmann::json t = nlohmann::json::parse(ReadFile(trace));
  std::remove(trace.c_str());
  std::set<int> pids;
  for (const auto& e : t["traceEvents"]) pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{1, 2}));  // one process per test
}

}  // namespace
}  // namespace edgedecode::test
