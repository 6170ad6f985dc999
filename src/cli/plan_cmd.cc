// `edgedecode plan`: the memory budget table of running a model on a device, from the runtime's own
// accounting (llm/memory_plan.h), with pass/fail against the headroom rule and what would fit.
#include <cstdio>
#include <fstream>
#include <functional>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/draft_options.h"
#include "cli/model_options.h"

namespace edgedecode::cli {
namespace {

constexpr int kContextStep = 256;
constexpr int kMaxSeqs = 4096;     // parallel sequences a plan describes  // the largest context that fits is searched in steps of this

// The plan of a model for p, with its speculative draft's when there is one (the whole process).
using PlanFn = std::function<llm::MemoryPlan(const llm::PlanParams&)>;

// Largest context (a multiple of kContextStep, at most `cap`) whose plan fits in `budget`.
int LargestContext(const PlanFn& plan_of, llm::PlanParams p, uint64_t budget, int cap) {
  int lo = 0, hi = std::max(kContextStep, cap) / kContextStep;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    p.n_ctx = mid * kContextStep;
    if (plan_of(p).total <= budget) lo = mid; else hi = mid - 1;
  }
  return lo * kContextStep;
}

// The device's memory from a profile's memory_bytes.
Result<uint64_t> ProfileMemory(const std::string& path, std::string* name) {
  std::ifstream f(path);
  if (!f) return NotFound(path + ": cannot open");
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Corrupt(path + ": not a JSON object");
  if (!j.contains("memory_bytes") || !j["memory_bytes"].is_number_unsigned() || j["memory_bytes"].get<uint64_t>() == 0 ||
      j["memory_bytes"].get<uint64_t>() > llm::kMaxMemoryBytes)
    return Corrupt(path + ": memory_bytes must be a positive integer of at most " + std::to_string(llm::kMaxMemoryBytes) +
                   " (the device's memory in bytes)");
  *name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : path;
  return j["memory_bytes"].get<uint64_t>();
}

// What would make a plan that does not fit, fit: a smaller KV type at this context, or a smaller weight type
// (only types smaller than the model's own), computed from the plan, never a change that cannot help.
std::string FitAdvice(const llm::Model& m, const PlanFn& plan_of, const llm::PlanParams& pp, const llm::MemoryPlan& plan,
                      uint64_t budget) {
  for (GgmlType kv : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const GgmlTypeTraits &a = TypeTraits(kv), &cur = TypeTraits(pp.type_k);
    if (a.type_size * static_cast<size_t>(cur.block_size) >= cur.type_size * static_cast<size_t>(a.block_size))
      continue;  // not smaller than the KV type in use
    if (!llm::CheckKvType(m.config(), kv, "KV").ok()) continue;
    llm::PlanParams q = pp;
    q.type_k = q.type_v = kv;
    if (plan_of(q).total <= budget)
      return std::string("fits with a ") + TypeName(static_cast<uint32_t>(kv)) + " KV cache: --kv-type " + TypeName(static_cast<uint32_t>(kv));
  }
  double weights = 0, q4 = 0;
  for (const llm::Weight* w : m.all_weights()) {
    weights += static_cast<double>(w->nbytes());
    q4 += static_cast<double>(w->rows) * static_cast<double>(w->cols) * 4.5 / 8;  // q4_0: 4.5 bits per weight
  }
  if (q4 < 0.9 * weights) {
    const double rest = static_cast<double>(plan.total) - static_cast<double>(plan.items[0].bytes);
    if (rest + q4 <= static_cast<double>(budget))
      return "fits with q4_0 weights (" + llm::FormatBytes(static_cast<uint64_t>(q4)) + "): edgedecode quantize IN OUT q4_0";
  }
  return "does not fit at this context with any KV or weight type edgedecode offers: lower -c or use a smaller model";
}

}  // namespace

int PlanMain(int argc, char** argv) {
  const std::string cmd = "edgedecode plan";
  CLI::App app{"Memory budget of running a model: weights, KV cache, activations, tokenizer, runtime; "
               "the total against the device's memory and the headroom rule.",
               cmd};
  ModelOptions mo;
  mo.Add(app);
  std::string target;
  int n_seqs = 1;
  double headroom = 0.7;
  JsonOutput json;
  app.add_option("--target,-T", target, "device: a profile NAME (targets/NAME.json) or FILE.json with memory_bytes; default: this machine");
  app.add_option("--seqs", n_seqs, "parallel sequences (each has its own KV cache)")->capture_default_str();
  app.add_option("--headroom", headroom, "largest fraction of the device memory the peak may take")->capture_default_str();
  DraftOptions draft;
  draft.Add(app);
  json.Add(app, "the plan");
  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (Status st = draft.Validate(); !st.ok()) return Fail(cmd, st);
  if (n_seqs < 1 || n_seqs > kMaxSeqs)
    return Fail(cmd, InvalidArgument("--seqs must be from 1 to " + std::to_string(kMaxSeqs)));
  if (!(headroom > 0 && headroom <= 1)) return Fail(cmd, InvalidArgument("--headroom must be in (0, 1]"));
  if (Status st = mo.Validate(); !st.ok()) return Fail(cmd, st);

  llm::ContextParams cp;
  if (Status st = ParseKvTypes(mo, &cp); !st.ok()) return Fail(cmd, st);
  uint64_t device = 0;
  std::string device_name = "this machine (available memory)";
  if (!target.empty()) {
    auto path = ResolveTarget(target);
    if (!path.ok()) return Fail(cmd, path.status());
    auto mem = ProfileMemory(*path, &device_name);
    if (!mem.ok()) return Fail(cmd, mem.status());
    device = *mem;
  } else {
    auto avail = llm::AvailableMemoryBytes();
    if (!avail.ok()) return Fail(cmd, avail.status());
    device = *avail;
  }
  auto model = llm::Model::Load(mo.model);
  if (!model.ok()) return Fail(cmd, model.status());
  const llm::Model& m = **model;
  for (GgmlType t : {cp.type_k, cp.type_v})
    if (Status st = llm::CheckKvType(m.config(), t, "KV"); !st.ok()) return Fail(cmd, st);

  const int train = m.config().n_ctx_train;
  llm::PlanParams pp;
  pp.n_ctx = ContextLength(m, mo.n_ctx);  // the context `run` would use
  pp.n_batch = mo.n_batch;
  pp.n_seqs = n_seqs;
  pp.type_k = cp.type_k;
  pp.type_v = cp.type_v;
  pp.n_threads = mo.n_threads > 0 ? mo.n_threads : static_cast<int>(std::thread::hardware_concurrency());
  // With --draft / --draft-quant the draft's weights, KV cache and scratch are lines of the same plan.
  if (draft.on()) {
    auto dp = draft.Plan(m, pp);
    if (!dp.ok()) return Fail(cmd, dp.status());
  }
  const PlanFn plan_of = [&](const llm::PlanParams& p) {
    llm::MemoryPlan full = llm::PlanMemory(m, p);
    if (draft.on()) {
      auto dp = draft.Plan(m, p);  // checked above: the same draft, another context length or KV type
      if (dp.ok()) llm::AddDraftPlan(*dp, &full);
    }
    return full;
  };
  const llm::MemoryPlan plan = plan_of(pp);
  const uint64_t budget = static_cast<uint64_t>(headroom * static_cast<double>(device));
  const bool pass = device == 0 || plan.total <= budget;

  // The largest context is capped at the trained length (beyond it quality degrades) and rounded down to a
  // multiple of kContextStep.
  const int cap = train > 0 ? train : pp.n_ctx;
  nlohmann::json rec = nlohmann::json::array();
  for (GgmlType kv : {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    if (!llm::CheckKvType(m.config(), kv, "KV").ok()) continue;
    llm::PlanParams q = pp;
    q.type_k = q.type_v = kv;
    rec.push_back({{"kv_type", TypeName(static_cast<uint32_t>(kv))}, {"max_ctx", device ? LargestContext(plan_of, q, budget, cap) : 0}});
  }
  const std::string cap_note = "searched in steps of " + std::to_string(kContextStep) + " tokens up to the trained context of " +
                               std::to_string(cap);
  const std::string advice = pass ? "" : FitAdvice(m, plan_of, pp, plan, budget);

  FILE* out = json.text();
  std::fprintf(out, "memory plan: %s%s, ctx %d, %d seq(s), batch %d\n\n", mo.model.c_str(),
               draft.on() ? (" with draft " + draft.Describe()).c_str() : "", pp.n_ctx, n_seqs, std::min(pp.n_batch, pp.n_ctx));
  std::fputs(FormatPlan(plan, device, headroom, device_name).c_str(), out);
  if (device) {
    std::fprintf(out, "\nlargest context that fits (%.0f%% rule; %s):", 100 * headroom, cap_note.c_str());
    for (const auto& r : rec) std::fprintf(out, "  %s KV: %d", r["kv_type"].get<std::string>().c_str(), r["max_ctx"].get<int>());
    std::fprintf(out, "\n");
  }
  if (!advice.empty()) std::fprintf(out, "advice: %s\n", advice.c_str());
  if (json.on()) {
    nlohmann::json j;
    j["model"] = mo.model;
    j["ctx"] = pp.n_ctx;
    j["ctx_train"] = train;
    j["seqs"] = n_seqs;
    if (draft.on()) j["draft"] = draft.Describe();
    j["items"] = nlohmann::json::array();
    for (const auto& it : plan.items) j["items"].push_back({{"component", it.component}, {"bytes", it.bytes}, {"detail", it.detail}});
    j["total_bytes"] = plan.total;
    j["device"] = device_name;
    j["device_bytes"] = device;
    j["headroom"] = headroom;
    j["pass"] = pass;
    j["max_ctx_by_kv_type"] = rec;
    j["max_ctx_rule"] = cap_note;
    if (!advice.empty()) j["advice"] = advice;
    if (Status st = json.Write(j, "plan", {mo.model}); !st.ok()) return Fail(cmd, st);
  }
  return pass ? 0 : 1;
}

}  // namespace edgedecode::cli
