// `edgedecode plan`: the memory budget table of running a model on a device, from the runtime's own
// accounting (llm/memory_plan.h), with pass/fail against the headroom rule and what would fit.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <thread>

#include "cli/commands.h"
#include "llm/cli_options.h"
#include "llm/memory_plan.h"

namespace edgedecode::cli {

void PrintPlan(FILE* out, const llm::MemoryPlan& plan, uint64_t device_bytes, double headroom, const std::string& device) {
  std::fprintf(out, "%-32s %12s  %s\n", "component", "bytes", "how");
  for (const llm::MemoryItem& it : plan.items)
    std::fprintf(out, "%-32s %12s  %s\n", it.component.c_str(), llm::FormatBytes(it.bytes).c_str(), it.detail.c_str());
  std::fprintf(out, "%-32s %12s\n", "total (peak)", llm::FormatBytes(plan.total).c_str());
  if (device_bytes > 0) {
    const double frac = static_cast<double>(plan.total) / static_cast<double>(device_bytes);
    std::fprintf(out, "%-32s %12s  %.0f%% of it; rule: at most %.0f%% -> %s\n", ("device: " + device).c_str(),
                 llm::FormatBytes(device_bytes).c_str(), 100 * frac, 100 * headroom, frac <= headroom ? "PASS" : "FAIL");
  }
}

namespace {

// Largest context (multiple of 256, at most the training context) whose plan fits in `budget`.
int LargestContext(const llm::Model& m, llm::PlanParams p, uint64_t budget) {
  int lo = 0, hi = std::max(256, m.config().n_ctx_train) / 256;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    p.n_ctx = mid * 256;
    if (llm::PlanMemory(m, p).total <= budget) lo = mid; else hi = mid - 1;
  }
  return lo * 256;
}

}  // namespace

int PlanMain(int argc, char** argv) {
  CLI::App app{"Memory budget of running a model: weights, KV cache, activations, tokenizer, runtime; "
               "the total against the device's memory and the headroom rule.",
               "edgedecode plan"};
  ModelOptions mo;
  mo.n_ctx = 2048;
  mo.Add(app);
  std::string target;
  int n_seqs = 1;
  double headroom = 0.7;
  bool json = false;
  app.add_option("--target", target, "device profile JSON (memory_bytes); default: this machine");
  app.add_option("--seqs", n_seqs, "parallel sequences (each has its own KV cache)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--headroom", headroom, "largest fraction of the device memory the peak may take")->capture_default_str();
  app.add_flag("--json", json, "JSON output");
  CLI11_PARSE(app, argc, argv);

  llm::ContextParams cp;
  Status st = ParseKvTypes(mo, &cp);
  if (!st.ok()) return Fail(st);
  auto model = llm::Model::Load(mo.model);
  if (!model.ok()) return Fail(model.status());
  const llm::Model& m = **model;
  for (GgmlType t : {cp.type_k, cp.type_v}) {
    st = llm::CheckKvType(m.config(), t, "KV");
    if (!st.ok()) return Fail(st);
  }

  uint64_t device = 0;
  std::string device_name = "this machine (available memory)";
  if (!target.empty()) {
    std::ifstream f(target);
    if (!f) return Fail(NotFound(target + ": cannot open"));
    nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
    if (j.is_discarded() || !j.contains("memory_bytes") || !j["memory_bytes"].is_number())
      return Fail(Corrupt(target + ": not a profile with a numeric memory_bytes"));
    device = j["memory_bytes"].get<uint64_t>();
    device_name = j.value("name", target);
  } else {
    device = llm::AvailableMemoryBytes();
  }

  llm::PlanParams pp;
  pp.n_ctx = mo.n_ctx > 0 ? mo.n_ctx : std::min(m.config().n_ctx_train, 4096);
  pp.n_batch = mo.n_batch;
  pp.n_seqs = n_seqs;
  pp.type_k = cp.type_k;
  pp.type_v = cp.type_v;
  pp.n_threads = mo.n_threads > 0 ? mo.n_threads : static_cast<int>(std::thread::hardware_concurrency());
  llm::MemoryPlan plan = llm::PlanMemory(m, pp);
  const uint64_t budget = static_cast<uint64_t>(headroom * static_cast<double>(device));
  const bool pass = device == 0 || plan.total <= budget;

  nlohmann::json rec = nlohmann::json::array();
  for (GgmlType kv : {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    if (!llm::CheckKvType(m.config(), kv, "KV").ok()) continue;
    llm::PlanParams q = pp;
    q.type_k = q.type_v = kv;
    rec.push_back({{"kv_type", TypeName(static_cast<uint32_t>(kv))}, {"max_ctx", device ? LargestContext(m, q, budget) : 0}});
  }
  // Would a smaller weight type be needed? Weights scale with bits per weight; q4_0 is 4.5 bits.
  const double weight_bytes = static_cast<double>(plan.items[0].bytes);
  const double rest = static_cast<double>(plan.total) - weight_bytes;
  std::string weight_advice;
  if (!pass && device) {
    double q4 = 0;
    for (const llm::Weight* w : m.all_weights()) q4 += static_cast<double>(w->rows) * static_cast<double>(w->cols) * 4.5 / 8;
    weight_advice = rest + q4 <= static_cast<double>(budget)
                        ? "fits with q4_0 weights (" + llm::FormatBytes(static_cast<uint64_t>(q4)) + "): edgedecode quantize IN OUT q4_0"
                        : "does not fit even with q4_0 weights at this context: lower -c or use a smaller model";
  }

  if (json) {
    nlohmann::json j;
    j["model"] = mo.model;
    j["ctx"] = pp.n_ctx;
    j["seqs"] = n_seqs;
    j["items"] = nlohmann::json::array();
    for (const auto& it : plan.items) j["items"].push_back({{"component", it.component}, {"bytes", it.bytes}, {"detail", it.detail}});
    j["total_bytes"] = plan.total;
    j["device"] = device_name;
    j["device_bytes"] = device;
    j["headroom"] = headroom;
    j["pass"] = pass;
    j["max_ctx_by_kv_type"] = rec;
    if (!weight_advice.empty()) j["weights"] = weight_advice;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("memory plan: %s, ctx %d, %d seq(s), batch %d\n\n", mo.model.c_str(), pp.n_ctx, n_seqs, std::min(pp.n_batch, pp.n_ctx));
    PrintPlan(stdout, plan, device, headroom, device_name);
    if (device) {
      std::printf("\nlargest context that fits (%.0f%% rule):", 100 * headroom);
      for (const auto& r : rec) std::printf("  %s KV: %d", r["kv_type"].get<std::string>().c_str(), r["max_ctx"].get<int>());
      std::printf("\n");
    }
    if (!weight_advice.empty()) std::printf("weights: %s\n", weight_advice.c_str());
  }
  return pass ? 0 : 1;
}

}  // namespace edgedecode::cli
