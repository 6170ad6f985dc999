// A draft model for speculative decoding (`run --draft MODEL`, `run --draft-quant TYPE`): a second,
// smaller model of the same vocabulary proposes the next tokens greedily from its own context, and
// LookupDecoder verifies them with the target (speculative.h), so the output stays the target's.
//
// The drafter keeps its cache in step with the history it is given: the positions the target rejected
// are rolled back (Context::Truncate) and the tokens it has not seen yet (the target's accepted and
// emitted ones) are evaluated in one batched pass before it drafts. Tokens are compared, not counted, so
// a history that changed anywhere (a lookup drafter that proposed instead, a context shift) is handled
// by the same rule: keep the common prefix, evaluate the rest. Prints nothing. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgedecode/status.h"
#include "llm/context.h"
#include "llm/model.h"
#include "llm/speculative.h"
#include "tok/tokenizer.h"

namespace edgedecode::llm {

// Where a draft vocabulary breaks verification: a token id both have whose text differs, or (when the sizes
// differ) an extra token of the larger vocabulary that is not a special one (token type control,
// user-defined or unused). Extra trailing special tokens are accepted: the draft never proposes an id the
// target lacks (DraftModelDrafter's argmax covers the shared ids only). InvalidArgument naming the first
// differing token id and both pieces; `target_types` / `draft_types` are tokenizer.ggml.token_type (empty:
// all normal).
Status CheckSameVocabulary(const tok::Tokenizer& target, const std::vector<int64_t>& target_types,
                           const tok::Tokenizer& draft, const std::vector<int64_t>& draft_types);

// One greedy step of the draft model: its two most likely tokens and their probabilities (softmax over the
// shared vocabulary). top2 = -1 where there is no second token.
struct DraftStep {
  int32_t top1 = -1, top2 = -1;
  double p1 = 0, p2 = 0;
};

// The token tree of at most max_nodes nodes over a greedy chain of steps: the chain first (as deep as the
// budget allows: its passes are paid for, and a tree holding the chain accepts at least what the chain
// does), then the draft's second choices as leaves beside it, where the draft was least sure -- the
// highest probability of their path first (the chain's p1 before their depth, times their p2). Every
// parent precedes its children.
DraftTree TreeFromSteps(const std::vector<DraftStep>& steps, int max_nodes);

struct DraftModelStats {
  int64_t calls = 0;        // drafts asked for
  int64_t evals = 0;        // forward passes of the draft model
  int64_t caught_up = 0;    // history tokens evaluated to catch up (accepted / emitted by the target)
  int64_t rolled_back = 0;  // cache positions dropped (rejected drafts, a changed history)
  double seconds = 0;       // time spent drafting
};

class DraftModelDrafter {
 public:
  // ctx: a fresh context over the draft model (n_past 0), outliving the drafter. n_shared_vocab: the ids both
  // vocabularies have (the lower vocabulary size); only those are proposed.
  DraftModelDrafter(Context& ctx, int n_shared_vocab) : ctx_(ctx), n_vocab_(n_shared_vocab) {}

  // Up to n_draft tokens that the draft model predicts greedily after `history`; empty when the draft context
  // has no room or a draft pass fails (the target then decodes plainly: a draft is only a proposal).
  std::vector<int32_t> operator()(const std::vector<int32_t>& history, int n_draft);
  // A token tree for `run --tree-nodes`: the greedy chain, min(max_depth, max_nodes) deep (as many draft
  // passes as operator() takes for that length), with the draft's second choices where it was least sure
  // (TreeFromSteps). Empty as operator() is.
  DraftTree Tree(const std::vector<int32_t>& history, int max_nodes, int max_depth);
  // Evaluates the prompt ahead of the first draft (with the target's prefill), so that the first draft pass
  // costs what the others do. On failure the context starts afresh at the first draft.
  Status Prefill(const std::vector<int32_t>& prompt);
  const DraftModelStats& stats() const { return stats_; }

  // One draft request of DraftMany.
  struct Request {
    DraftModelDrafter* drafter;
    const std::vector<int32_t>* history;
    int n_draft;
    std::vector<int32_t> draft;  // out: what drafter(history, n_draft) would return
  };
  // Several drafters (distinct contexts over one draft model: serve's slots) draft at once: their catch-ups
  // and then each greedy step go through shared passes (Context::EvalMulti: one read of the draft weights
  // for all of them). Each row's logits are the bits its own pass would give, so every draft is the one
  // operator() would return. A request whose history does not fit (or n_draft <= 0) gets no draft; a failed
  // shared pass leaves the drafters it held empty, their contexts starting afresh next time.
  static void DraftMany(std::vector<Request>& requests);

 private:
  // The greedy draft; with steps, each step's two most likely tokens as well.
  Status Propose(const std::vector<int32_t>& history, int n_draft, std::vector<int32_t>* draft,
                 std::vector<DraftStep>* steps = nullptr);
  // Brings the cache to `want`: keeps the common prefix, rolls back the rest, evaluates the new tokens.
  Status CatchUp(const std::vector<int32_t>& want);
  // CatchUp's first half: drops the cached tokens past the prefix shared with `want` (want's last token is
  // evaluated again when cached, for its logits); returns the index of want's first token to evaluate.
  size_t RollBackTo(const std::vector<int32_t>& want);
  // After a failed pass the draft context's state is unknown: empty it, to start afresh next time.
  void StartAfresh() {
    ctx_.Reset();
    cached_.clear();
  }
  // The part of `history` the draft context holds: all of it while it fits with n_draft more positions,
  // else its first token (BOS) and the newer half of the context (the window slides by half contexts).
  std::vector<int32_t> Window(const std::vector<int32_t>& history, int n_draft);
  int32_t Argmax() const;
  DraftStep TopTwo() const;

  Context& ctx_;
  int n_vocab_;
  std::vector<int32_t> cached_;  // the tokens at the draft cache's positions 0..n_past-1
  size_t window_start_ = 0;      // history index the window's second part starts at (0: no window)
  DraftModelStats stats_;
};

}  // namespace edgedecode::llm
