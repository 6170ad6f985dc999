// Speculative decoding with a prompt-lookup (n-gram) drafter: the tokens that followed the most recent
// earlier occurrence of the last M tokens (prompt + generated) are proposed as a draft, and the target
// model verifies [pending token + draft] in one forward pass with the logits of every row. Any Drafter
// plugs in the same way: ReplayDrafter below (a measuring tool), DraftModelDrafter (llm/draft_model.h: a
// second, smaller model).
//
// Exactness: the caller's Sampler is asked for exactly one token per emitted token, from the row of
// logits that plain decoding would have used, in the same order -- a drafted token is accepted only when
// the sampler's own choice at that position equals it, and the first mismatch yields the sampler's token.
// The forward pass gives each row the same bits whatever the batch (the kernels compute every column as
// alone, attention is per token), so under greedy decoding the output equals plain decoding token for
// token, and under sampling it is the same draw from the same distribution (for a deterministic draft,
// q is a point mass: accepting t when the sample from p equals t accepts with probability p(t), and the
// rejection's sample is from p without t, renormalized: speculative sampling's rule).
//
// Usage, in place of plain decoding's "sample from ctx.logits(0); ctx.Eval(&token, 1)":
//   LookupDecoder d(ctx, sampler, params, prompt);   // after the prompt was evaluated
//   loop: t = d.Sample(); ...keep t or stop...; d.Advance(t, tokens_still_wanted);
// The cache holds speculative rows past n_past() between calls: the caller reads the logical position
// from n_past(), not ctx.n_past(). Prints nothing. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "edgedecode/status.h"
#include "llm/context.h"
#include "llm/draft_length.h"  // ExpectedPassTokens, BestDraftLength: the adaptive chain length
#include "llm/sampler.h"

namespace edgedecode::llm {

// A drafter: up to n_draft tokens proposed to follow `history` (prompt + every token kept so far).
using Drafter = std::function<std::vector<int32_t>(const std::vector<int32_t>& history, int n_draft)>;

// A draft tree: several candidate continuations at once. Node i holds tokens[i] and follows node parents[i]
// (-1: the root, the token being verified; else an earlier node, parents[i] < i). Siblings hold different
// tokens. A chain is the tree with parents[i] = i - 1.
struct DraftTree {
  std::vector<int32_t> tokens;
  std::vector<int> parents;
  size_t size() const { return tokens.size(); }
  bool empty() const { return tokens.empty(); }
  bool IsChain() const;
  // Adds `token` under `parent` unless that child exists; its index either way.
  int Child(int parent, int32_t token);
};
// A tree drafter: at most max_nodes nodes, none deeper than max_depth (the root's children at depth 1).
using TreeDrafter = std::function<DraftTree(const std::vector<int32_t>& history, int max_nodes, int max_depth)>;

// How a drafted token is accepted. kExact is speculative sampling (see the top of this file) and the only rule
// for real use. kBiasedAcceptDraft is a measuring and testing tool, never exposed as a user option: where the
// sampler's draw is not a drafted token, a second independent draw from the same row that is one is accepted
// instead, so a drafted token t comes out with probability 2 p(t) - p(t)^2 rather than p(t) -- a realistic
// over-accepting bug (a rule that "retries" before rejecting), for a statistical test of the output
// distribution to show that it can tell the difference. Under greedy decoding both rules give the same tokens.
// The second draw advances the sampler's RNG and is recorded for its repetition penalty.
enum class Acceptance { kExact, kBiasedAcceptDraft };

struct LookupParams {
  int n_draft = 4;     // tokens proposed per verify pass (0: off, every step a plain one)
  Drafter drafter;     // empty: the n-gram lookup below (LookupDraft)
  // The drafter costs time on every call (a draft model): while drafting is paused it is not called at all
  // (each step counts against the pause), rather than called and its draft dropped; adaptive, the first
  // step is a plain one (the drafter always proposes: the timing needs a plain step to compare with).
  bool costly_drafter = false;
  int ngram_max = 3;   // the longest n-gram tried first ...
  int ngram_min = 1;   // ... down to this one
  // Adaptive, chains: the draft length k (at most n_draft) of each pass is BestDraftLength's, the most
  // expected tokens per second, E[tokens | k, a] / time(k), with a the running per-token acceptance and
  // time(k) the measured time of a pass of k drafted tokens (drafter included), one running mean per k
  // (time(0): a plain step). A pass's time is not linear in k (the kernels work in tiles of rows: it steps
  // at tile sizes), hence one mean per k rather than one cost per drafted token: the first step is a plain
  // one; a k not measured yet is estimated on the line between the measured lengths around it, or past the
  // longest measured at that one's time (a pass of more rows is never cheaper), so that it is tried while
  // it could beat the best; every 16th choice re-measures a neighbour of the best. Where plain steps win
  // (k = 0), drafting pauses for `backoff` steps that found a draft (doubled on each pause in a row, up to
  // max_backoff; reset by a pass that accepts), then probes with one pass. Timing decides which steps
  // draft, never which tokens come out.
  // Adaptive, trees: drafting pauses the same way when the running mean of accepted tokens per verify pass
  // (weight 1/4 on the newest, starting at 1) falls below min_accept_per_pass, or when verify passes give
  // fewer tokens per second than plain steps, both timed here. adaptive = false: draft n_draft tokens (or a
  // tree of tree_nodes) whenever a match is found.
  bool adaptive = true;
  // Token trees: with tree_nodes > 0 and a tree drafter (tree_drafter, or the n-gram lookup's several matches
  // when both drafters are empty), each pass verifies a tree of up to tree_nodes drafted tokens at most
  // n_draft deep in one forward pass (Context::EvalTree) and keeps the longest path the sampler accepts.
  // Adaptive, the node budget of each pass is one of 3, 7, 15, ... below tree_nodes, or tree_nodes (trees of
  // 4, 8, 16 rows: the kernels' tiles): the one with the most expected tokens per second, from the measured
  // acceptance of each node position (a tree drafter lists its nodes most likely first and fills whatever
  // budget it is given) over each budget's measured pass time (each tried twice first, largest first; every
  // 16th pass re-measures the one measured longest ago). adaptive = false: tree_nodes always.
  // Adaptive drafting still pauses while passes lose (above). A tree that comes out a chain is verified as one.
  // tree_width: the n-gram lookup's continuations per tree (distinct matches).
  int tree_nodes = 0;
  int tree_width = 2;
  TreeDrafter tree_drafter;
  double min_accept_per_pass = 0.4;
  int backoff = 4;
  int max_backoff = 32;
  Acceptance acceptance = Acceptance::kExact;  // a testing tool only (see Acceptance)
};

struct LookupStats {
  int64_t drafted = 0;        // draft tokens sent for verification
  int64_t accepted = 0;       // draft tokens the target confirmed (and the caller consumed)
  int64_t verify_passes = 0;  // forward passes with a draft
  int64_t tree_passes = 0;    // ... of them with a branching tree (Context::EvalTree)
  int64_t plain_passes = 0;   // one-token forward passes (no draft found, drafting paused)
  int64_t tokens = 0;         // tokens sampled (one per emitted token)
  int64_t rejected = 0;       // verify passes whose draft the target left before its end
  double draft_s = 0;         // seconds in the drafter (a draft model's passes; ~0 for the n-gram lookup)
  double verify_s = 0;        // seconds of the target's verify passes
  double plain_s = 0;         // seconds of the target's one-token passes
  // Chain verify passes by draft length: chain_passes[k] passes of k drafted tokens took chain_s[k] seconds
  // (drafter included); index 0 unused (plain_passes, plain_s).
  std::vector<int64_t> chain_passes;
  std::vector<double> chain_s;
  double accept_estimate = 0; // the running per-token acceptance the adaptive length choice used last
  double acceptance() const { return drafted > 0 ? static_cast<double>(accepted) / drafted : 0.0; }
  int64_t passes() const { return verify_passes + plain_passes; }
};

// The n-gram lookup as a tree: the continuations (each at most max_depth tokens) of up to `width` distinct
// earlier occurrences of the last n-gram (most recent and longest first, the first being LookupDraft's),
// merged where they share a prefix, at most max_nodes nodes.
DraftTree LookupTree(const std::vector<int32_t>& history, int max_nodes, int max_depth, int width, int ngram_max,
                     int ngram_min);

// The proposal: up to n_draft tokens that followed the most recent earlier occurrence of the last n
// tokens of `history`, for n from ngram_max down to ngram_min; empty when none occurs.
std::vector<int32_t> LookupDraft(const std::vector<int32_t>& history, int n_draft, int ngram_max, int ngram_min);

// A measuring tool, not a drafter for real use: it proposes the target's own recorded continuation of
// the same prompt (a greedy run's output), each proposed token replaced by a wrong one with probability
// 1 - accept, so that a draft token is right with probability `accept`, independently: the acceptance
// rate a of the speculative-decoding model, set by hand on any model (random weights included), to
// measure what a verify pass gains at a given a. Deterministic for a seed. Past the recording's end, or
// once the history has left it, it proposes nothing.
//
// Two candidates (accept2 > accept; for trees): at each position a second candidate as well, so that the
// first is right with probability `accept` and one of the two with probability accept2 (the second is right
// only where the first is wrong). Tree() lays them out as the max_nodes nodes of highest path probability
// under those rates (each node's first child the first candidate, its second child the second); the
// candidates of a position are the same under every parent (they only matter under the right one).
class ReplayDrafter {
 public:
  ReplayDrafter(std::vector<int32_t> prompt, std::vector<int32_t> continuation, double accept, uint64_t seed, int n_vocab,
                double accept2 = 0);
  std::vector<int32_t> operator()(const std::vector<int32_t>& history, int n_draft);
  DraftTree Tree(const std::vector<int32_t>& history, int max_nodes, int max_depth);

 private:
  // Whether history is the recording's prompt plus a prefix of its continuation (else nothing to replay).
  bool OnRecording(const std::vector<int32_t>& history) const;
  double accept2_;
  std::vector<int32_t> recorded_;  // prompt + continuation
  size_t prompt_len_;
  double accept_;
  uint64_t state_;
  int n_vocab_;
};

// Unsupported naming the architecture when a model cannot verify drafts: one with short-convolution layers
// (lfm2), whose state cannot be rolled back to the last accepted token. Ok otherwise.
Status SpeculativeSupported(const ModelConfig& c);

class LookupDecoder {
 public:
  // ctx has evaluated `prompt` (its last logits row is the next token's distribution); sampler has
  // seen the prompt (Accept). Both outlive the decoder.
  LookupDecoder(Context& ctx, Sampler& sampler, const LookupParams& params, std::vector<int32_t> prompt);

  // The next token: the sampler's choice from the current row of logits (recorded in the sampler).
  int32_t Sample();
  // The caller keeps `token` (the last Sample()) and wants the one after it: moves to the next verified
  // row when the token was the draft's, else rolls back the rejected rows and evaluates [token + a new
  // draft of at most max_draft tokens] (max_draft: how many more tokens the caller may still want, so
  // that no pass drafts past -n). Fails as Context::Eval does (e.g. the context is full).
  Status Advance(int32_t token, int max_draft);
  // After the caller rebuilt the cache itself (a context shift: ctx.Reset + Eval of kept tokens): no
  // speculative rows remain; the next Advance evaluates from ctx.n_past().
  void CacheRebuilt();

  // Positions of the accepted sequence in the cache: the tokens before the last sampled one.
  int n_past() const { return in_verify_ ? base_ + static_cast<int>(path_.size()) : ctx_.n_past(); }
  const LookupStats& stats() const { return stats_; }

 private:
  Context& ctx_;
  Sampler& sampler_;
  LookupParams p_;
  std::vector<int32_t> history_;  // prompt + every sampled token kept
  DraftTree draft_;               // the draft of the last pass (row i + 1 holds node i's logits)
  bool in_verify_ = false;        // the last pass had a draft; rows 0..draft_.size() hold its logits
  bool tree_pass_ = false;        // ... verified as a tree (Context::EvalTree), else as a chain
  int base_ = 0;                  // cache position of the pass's first token
  std::vector<int> path_;         // the rows accepted so far in the pass, the root first; the last is the
                                  // row the next Sample reads
  int next_ = 0;                  // the row of the draft node the last Sample matched
  bool matched_ = false;          // the last Sample equals a child of the current row
  // The row of the draft node under the current row that holds `t`, or 0 when none does.
  int DraftChild(int row, int32_t t) const;
  LookupStats stats_;
  // Adaptive state.
  double recent_sum_ = 0;         // accepted tokens over the recent window of verify passes
  int recent_n_ = 0;
  int pass_accepted_ = 0;         // accepted in the current verify pass
  double pass_s_ = 0;             // seconds of the current verify pass
  double plain_s_ = 0;            // running mean seconds of a plain step (0: none yet)
  double verify_rate_ = 0;        // running mean tokens per second of verify passes (0: none yet)
  // The acceptance, the pause, and (chains) the length choice; chain_times_: per draft length k (0: a plain
  // step), the running mean seconds of its passes.
  DraftLengthChooser chooser_;
  PassTimes chain_times_;
  void EndPass();
  void RecordChainPass(int k, double seconds);
  int DraftLength(int k_max);
  // Adaptive tree size (see LookupParams::tree_nodes): the budgets tried and their tokens per second.
  struct TreeSize {
    int nodes;
    double seconds = 0;  // running mean seconds of its passes
    int passes = 0;
    int64_t last = 0;    // the choice at which it was last used
  };
  std::vector<TreeSize> tree_sizes_;
  int tree_size_ = -1;          // tree_sizes_ index of the pass being drafted / verified (-1: none)
  int64_t tree_choices_ = 0;
  std::vector<double> node_offered_, node_accepted_;  // per node index: decayed counts of passes offering it
                                                      // and of those that accepted it
  int TreeBudget();
  // Token trees are on (see LookupParams::tree_nodes): a tree drafter, or the n-gram lookup's matches.
  bool Trees() const { return p_.tree_nodes > 0 && (p_.tree_drafter || !p_.drafter); }
  // The draft for a pass of at most k tokens deep (a tree where trees are on, else a chain).
  DraftTree Draft(int k);
};

}  // namespace edgedecode::llm
