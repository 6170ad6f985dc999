// Self-speculative decoding by layer skip (`run --self-spec LAYERS`, `run --self-spec auto`): the model
// drafts for itself with a subset of its own layers (the skipped layers are bypassed: the residual stream
// passes through them unchanged), sharing its weights and the KV cache of the kept layers -- no second
// model, no second cache. LookupDecoder (speculative.h) verifies the draft with the full model, so the
// output stays the model's own.
//
// The cache: a draft step writes the kept layers' KV at the positions past the accepted ones (the skipped
// layers' rows are neither written nor read); the drafter then rolls them back (Context::Truncate) and the
// verify pass of the full model writes every layer at those positions, before any row reads them. A draft
// is at most a batch minus one token long (LookupDecoder's bound), which sliding-window rings always hold.
//
// `auto` searches the skip set by teacher forcing on a calibration text (SearchSkipSet) and keeps the
// choice beside the model in a small JSON file (MODEL.gguf.self-spec.json) tied to the model's identity
// (a hash of the GGUF header and tensor table, and the file size). Prints nothing. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "edgedecode/status.h"
#include "gguf/gguf.h"
#include "llm/context.h"

namespace edgedecode::llm {

// "4-7,10": the layers to skip, as a comma list of layers and inclusive ranges, counted from 0. Sorted.
// InvalidArgument naming the problem: not a number, a reversed range, a layer out of range (0..n_layers-1),
// a layer given twice, every layer skipped.
Result<std::vector<int>> ParseSkipLayers(const std::string& text, int n_layers);
// The same checks on a skip set from elsewhere (a saved file).
Status CheckSkipSet(const std::vector<int>& skip, int n_layers);
// The canonical text of a sorted skip set: "4-7,10" ("" for none).
std::string FormatSkipLayers(const std::vector<int>& skip);

struct SelfSpecStats {
  int64_t calls = 0;   // drafts asked for
  int64_t evals = 0;   // draft passes (one token each, over the kept layers)
  double seconds = 0;  // time spent drafting
};

class SelfSpecDrafter {
 public:
  // ctx: the target's own context (the one LookupDecoder verifies on), outliving the drafter. skip: a set
  // that passed CheckSkipSet for ctx's model.
  SelfSpecDrafter(Context& ctx, const std::vector<int>& skip);

  // Up to n_draft tokens the kept layers predict greedily after `history` (whose last token is the one the
  // cache has not seen yet: ctx holds the positions before it). The cache is as it was on return. Empty
  // when the context has no room (the target then decodes plainly). After a draft pass fails (logits that
  // overflow without the skipped layers: Context::Eval's Corrupt, which scans the weights) it proposes
  // nothing more, so that the failure is paid once.
  std::vector<int32_t> operator()(const std::vector<int32_t>& history, int n_draft);
  const SelfSpecStats& stats() const { return stats_; }

  // One draft request of DraftMany.
  struct Request {
    SelfSpecDrafter* drafter;
    const std::vector<int32_t>* history;
    int n_draft;
    std::vector<int32_t> draft;  // out: what (*drafter)(*history, n_draft) would return
  };
  // Several drafters over distinct contexts of one model with the same skip set (serve's slots) draft at once:
  // each greedy step of all of them is one shared pass (Context::EvalMulti: one read of the kept layers'
  // weights for every slot). Each row's logits are the bits its own pass would give, so every draft is the one
  // operator() would return. Each context's cache is as it was on return. A drafter in a shared pass that
  // failed keeps what it drafted before it, and drafts alone from then on (operator(), which stops for good
  // when its own pass fails): one slot's overflow does not stop the others.
  static void DraftMany(std::vector<Request>& requests);

 private:
  // The draft length operator() takes for n_draft wanted, 0 when it drafts nothing.
  int Length(const std::vector<int32_t>& history, int n_draft) const;

  Context& ctx_;
  std::vector<bool> flags_;  // Context::SetSkipLayers' form of the skip set
  bool broken_ = false;      // a draft pass failed: no more drafts
  bool alone_ = false;       // a shared draft pass failed: DraftMany drafts this one by itself
  SelfSpecStats stats_;
};

// The model's identity for a saved skip set: a 64-bit FNV-1a hash (16 lower-case hex digits) of the file's
// bytes before its tensor data (header, metadata, tensor table) and the file's size. Reads data_offset()
// bytes of the file, not the weights.
struct ModelIdentity {
  std::string header_hash;
  uint64_t file_size = 0;
};
Result<ModelIdentity> IdentifyModel(const gguf::File& file);

// The calibration text `auto` uses when the prompt is shorter than kSelfSpecMinPromptTokens tokens.
const char* SelfSpecCalibrationText();
inline constexpr int kSelfSpecMinPromptTokens = 64;

// Where the search stands, after each candidate set it scored.
struct SelfSpecProgress {
  int step = 0;             // the candidates of this step skip `step` layers
  int step_scored = 0;      // candidates of this step scored so far ...
  int step_candidates = 0;  // ... of these
  int scored = 0;           // candidates scored in all steps
  double best_speedup = 0;  // the best set's expected speedup among the steps completed (0: none yet)
};

struct SelfSpecSearchParams {
  int max_tokens = 160;  // calibration tokens used (the first ones)
  int max_draft = 8;     // draft lengths scored: 1..max_draft
  // Called after each candidate (each costs a teacher-forced pass over the calibration tokens); false stops
  // the search, which keeps the best set of the steps completed (or of the first step's candidates scored,
  // if it stops in the first). Empty: none.
  std::function<bool(const SelfSpecProgress&)> progress;
};

// The chosen skip set and what the search measured.
struct SelfSpecChoice {
  std::vector<int> skip;
  double acceptance = 0;        // top-1 agreement of the skipping model with the full one, teacher-forced
  double draft_cost = 0;        // a draft step over a full step: the kept layers' and the output's weight bytes
  double verify_extra = 0;      // a verify pass of 1 + k tokens costs 1 + verify_extra * k full steps (timed)
  int draft_len = 0;            // the draft length that maximizes expected_speedup
  double expected_speedup = 0;  // tokens per unit of full-step time against plain decoding's 1
  int calibration_tokens = 0;
  std::string calibration;      // "prompt" or "built-in"
  bool complete = true;         // false: the search was stopped (SelfSpecSearchParams::progress)
};

// Expected tokens per pass over its cost for acceptance a, draft length k, a draft step's cost c and the
// verify extra b: (1 - a^(k+1)) / (1 - a) / (k c + 1 + b k).
double SelfSpecSpeedup(double a, int k, double c, double b);

// Greedy search by teacher forcing over `calib` (at most params.max_tokens of it): starting from no layer
// skipped, each step adds the layer whose skipping keeps the top-1 agreement with the full model highest;
// each set is scored by SelfSpecSpeedup at its best draft length; the best-scoring set wins (it stops two
// steps after the score last improved). A set whose logits overflow counts as agreeing nowhere. Uses ctx (Reset before and after; no skip set left). At least two
// calibration tokens are needed; a model of one layer has nothing to skip (InvalidArgument).
Result<SelfSpecChoice> SearchSkipSet(Context& ctx, const std::vector<int32_t>& calib, const SelfSpecSearchParams& params);

// The file `auto` keeps beside the model.
inline std::string SelfSpecPath(const std::string& model_path) { return model_path + ".self-spec.json"; }
// Files larger than this are not a saved skip set (Corrupt without reading them).
inline constexpr uint64_t kSelfSpecFileLimit = 64 * 1024;

// A saved choice for this model: nullopt when `path` does not exist; Corrupt naming the file and the field
// when it is not one (bad JSON, a missing or mistyped field, a skip set that fails CheckSkipSet); Corrupt
// naming both identities when it was saved for another model (hash or size differ).
Result<std::optional<SelfSpecChoice>> ReadSelfSpecFile(const std::string& path, const ModelIdentity& id, int n_layers);
// Writes the choice atomically (a temporary file beside it, then rename). IoError naming the path and why.
Status WriteSelfSpecFile(const std::string& path, const SelfSpecChoice& choice, const ModelIdentity& id, int n_layers);

}  // namespace edgedecode::llm
