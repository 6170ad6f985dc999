#include "cli/draft_options.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "llm/draft_model.h"
#include "llm/speculative.h"

namespace edgedecode::cli {
namespace {

std::vector<int64_t> TokenTypes(const llm::Model& m) {
  auto types = m.file().GetIntArray("tokenizer.ggml.token_type");
  return types.ok() ? *types : std::vector<int64_t>{};
}

Status CheckSmaller(uint64_t draft_bytes, uint64_t target_bytes, const std::string& what) {
  if (draft_bytes <= target_bytes) return Status::Ok();
  return InvalidArgument(what + " has " + llm::FormatBytes(draft_bytes) + " of weights, more than the target's " +
                         llm::FormatBytes(target_bytes) + ": a draft must be smaller than the model it drafts for");
}

}  // namespace

void DraftOptions::Add(CLI::App& app) {
  CLI::Option* d = app.add_option("--draft", model,
                                  "speculative decoding with a draft model: a smaller GGUF of the same vocabulary proposes "
                                  "tokens greedily, the model verifies them in one pass; the output is the same as without it");
  app.add_option("--draft-quant", quant,
                 "speculative decoding with the model's own weights re-encoded at load to TYPE (q4_0, q8_0, ...) as the "
                 "draft; the output is the same as without it")
      ->excludes(d);
}

Status DraftOptions::Validate() {
  if (quant.empty()) return Status::Ok();
  Status st = tooling::ParseQuantizeType(quant, &qopts_);
  if (!st.ok()) return InvalidArgument("--draft-quant: " + st.message());
  qopts_.allow_requantize = true;  // a draft's rounding costs acceptance, never exactness
  return Status::Ok();
}

Result<llm::MemoryPlan> DraftOptions::Plan(const llm::Model& target, const llm::PlanParams& pp) {
  if (!model.empty()) {
    if (!opened_) {  // once: plan asks again for every context length it tries
      ED_ASSIGN_OR_RETURN(opened_, llm::Model::Load(model));
      // The drafter rolls its own context back to what the target accepted: an lfm2 draft would start over
      // from the first token at every rejection.
      ED_RETURN_IF_ERROR(llm::SpeculativeSupported(opened_->config()).WithContext("--draft " + model));
      ED_RETURN_IF_ERROR(llm::CheckSameVocabulary(target.tokenizer(), TokenTypes(target), opened_->tokenizer(), TokenTypes(*opened_))
                             .WithContext("--draft " + model));
      ED_RETURN_IF_ERROR(CheckSmaller(opened_->weight_bytes(), target.weight_bytes(), "the draft model " + model));
    }
    return llm::PlanMemory(*opened_, pp);
  }
  const gguf::File& f = target.file();
  tooling::QuantizeStats st;
  ED_ASSIGN_OR_RETURN(const std::vector<GgmlType> types, tooling::PlanQuantize(f, qopts_, &st));
  ED_RETURN_IF_ERROR(CheckSmaller(st.out_bytes, st.in_bytes, "--draft-quant " + quant + " (the model re-encoded)"));
  bool half = false, q4_0 = false;
  for (size_t i = 0; i < types.size(); ++i) {
    if (f.tensors()[i].dims.size() < 2) continue;
    half = half || types[i] == GgmlType::kF16 || types[i] == GgmlType::kBF16;
    q4_0 = q4_0 || types[i] == GgmlType::kQ4_0;
  }
  // The file re-encoded: the same metadata and tensor table, the new tensor data, at most one alignment
  // of padding per tensor.
  const uint64_t bytes = f.file_size() - st.in_bytes + st.out_bytes + f.tensors().size() * f.alignment();
  const std::string how = "the model re-encoded at load (" + std::to_string(st.changes.size()) + " tensors to " + quant +
                          ", " + std::to_string(st.fallbacks) + " fallbacks) into a temporary file, mapped (in memory where TMPDIR is a tmpfs)";
  return llm::PlanMemoryRequantized(target, pp, bytes, how, half, q4_0);
}

Result<std::unique_ptr<llm::Model>> DraftOptions::Load(const llm::Model& target, int threads) {
  if (!model.empty()) {
    if (!opened_) return Internal("DraftOptions::Load before Plan");
    ED_RETURN_IF_ERROR(opened_->CheckWeights(false).WithContext(model));
    return std::move(opened_);
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/edgedecode-draft-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) return IoError(dir + ": cannot create a temporary directory for the --draft-quant model");
  const std::string path = dir + "/draft.gguf";
  tooling::QuantizeOptions q = qopts_;
  q.threads = threads;
  Status st = tooling::QuantizeModel(target.file().path(), path, q);
  Result<std::unique_ptr<llm::Model>> m = st.ok() ? llm::Model::Load(path) : Result<std::unique_ptr<llm::Model>>(st);
  // The mapping keeps the data once the name is gone: nothing is left behind.
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
  if (!m.ok()) return m.status().WithContext("--draft-quant " + quant);
  return m;
}

std::string DraftOptions::Describe() const {
  return model.empty() ? "the model re-encoded to " + quant : model;
}

}  // namespace edgedecode::cli
