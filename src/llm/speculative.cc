#include "llm/speculative.h"

#include <algorithm>
#include <chrono>
#include <queue>

#include "base/splitmix64.h"

namespace edgedecode::llm {
namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

std::vector<int32_t> LookupDraft(const std::vector<int32_t>& history, int n_draft, int ngram_max, int ngram_min) {
  std::vector<int32_t> draft;
  const int64_t h = static_cast<int64_t>(history.size());
  if (n_draft <= 0) return draft;
  ngram_min = std::max(ngram_min, 1);
  for (int n = ngram_max; n >= ngram_min; --n) {
    if (n >= h) continue;  // the n-gram needs an earlier occurrence with at least one token after it
    const int32_t* tail = history.data() + (h - n);
    // The most recent earlier start s (s + n <= h - 1, so that history[s + n] exists and the match is
    // not the tail itself).
    for (int64_t s = h - n - 1; s >= 0; --s) {
      if (!std::equal(tail, tail + n, history.data() + s)) continue;
      const int64_t from = s + n, to = std::min<int64_t>(from + n_draft, h);
      draft.assign(history.begin() + from, history.begin() + to);
      return draft;
    }
  }
  return draft;
}

bool DraftTree::IsChain() const {
  for (size_t i = 0; i < parents.size(); ++i)
    if (parents[i] != static_cast<int>(i) - 1) return false;
  return true;
}

int DraftTree::Child(int parent, int32_t token) {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (parents[i] == parent && tokens[i] == token) return static_cast<int>(i);
  tokens.push_back(token);
  parents.push_back(parent);
  return static_cast<int>(tokens.size()) - 1;
}

DraftTree LookupTree(const std::vector<int32_t>& history, int max_nodes, int max_depth, int width, int ngram_max,
                     int ngram_min) {
  DraftTree tree;
  const int64_t h = static_cast<int64_t>(history.size());
  if (max_nodes <= 0 || max_depth <= 0 || width <= 0) return tree;
  int found = 0;
  for (int n = ngram_max; n >= std::max(ngram_min, 1); --n) {
    if (n >= h) continue;
    const int32_t* tail = history.data() + (h - n);
    for (int64_t s = h - n - 1; s >= 0; --s) {
      if (!std::equal(tail, tail + n, history.data() + s)) continue;
      // Its continuation into the tree, as far as the node budget goes; a continuation already there
      // (every token an existing node) is not a new candidate.
      const size_t before = tree.size();
      int node = -1;
      const int64_t from = s + n, to = std::min<int64_t>(from + max_depth, h);
      for (int64_t i = from; i < to; ++i) {
        if (static_cast<int>(tree.size()) == max_nodes) {
          int existing = -1;  // at the budget: only follow nodes already there
          for (size_t j = 0; j < tree.size(); ++j)
            if (tree.parents[j] == node && tree.tokens[j] == history[static_cast<size_t>(i)]) existing = static_cast<int>(j);
          if (existing < 0) break;
          node = existing;
          continue;
        }
        node = tree.Child(node, history[static_cast<size_t>(i)]);
      }
      if (tree.size() > before && ++found == width) return tree;
      if (static_cast<int>(tree.size()) == max_nodes) return tree;
    }
  }
  return tree;
}

ReplayDrafter::ReplayDrafter(std::vector<int32_t> prompt, std::vector<int32_t> continuation, double accept,
                             uint64_t seed, int n_vocab, double accept2)
    : accept2_(accept2), recorded_(std::move(prompt)), accept_(accept), state_(seed), n_vocab_(n_vocab) {
  prompt_len_ = recorded_.size();
  recorded_.insert(recorded_.end(), continuation.begin(), continuation.end());
}

bool ReplayDrafter::OnRecording(const std::vector<int32_t>& history) const {
  const size_t h = history.size();
  if (h < prompt_len_ || h >= recorded_.size()) return false;
  // The output left the recording: its continuation no longer applies.
  return std::equal(history.begin() + static_cast<long>(prompt_len_), history.end(),
                    recorded_.begin() + static_cast<long>(prompt_len_));
}

std::vector<int32_t> ReplayDrafter::operator()(const std::vector<int32_t>& history, int n_draft) {
  std::vector<int32_t> draft;
  const size_t h = history.size();
  if (n_draft <= 0 || !OnRecording(history)) return draft;
  const size_t end = std::min(recorded_.size(), h + static_cast<size_t>(n_draft));
  for (size_t i = h; i < end; ++i) {
    const double u = SplitMix64Uniform(&state_);  // the same corruption on every platform
    const int32_t right = recorded_[i];
    draft.push_back(u < accept_ ? right : static_cast<int32_t>((right + 1) % n_vocab_));
  }
  return draft;
}

DraftTree ReplayDrafter::Tree(const std::vector<int32_t>& history, int max_nodes, int max_depth) {
  DraftTree tree;
  const size_t h = history.size();
  if (max_nodes <= 0 || max_depth <= 0 || !OnRecording(history)) return tree;
  const int depth = static_cast<int>(std::min<size_t>(static_cast<size_t>(max_depth), recorded_.size() - h));
  // The two candidates of each position: the first right with probability accept, else the second right
  // with probability accept2 - accept (one draw decides both); wrong ones are right + 1 and right + 2.
  std::vector<int32_t> cand(2 * static_cast<size_t>(depth));
  for (int d = 0; d < depth; ++d) {
    const double u = SplitMix64Uniform(&state_);
    const int32_t right = recorded_[h + static_cast<size_t>(d)];
    const int32_t wrong1 = static_cast<int32_t>((right + 1) % n_vocab_), wrong2 = static_cast<int32_t>((right + 2) % n_vocab_);
    const bool first_right = u < accept_;
    const bool second_right = !first_right && u < accept2_;  // probability accept2 - accept
    cand[2 * static_cast<size_t>(d)] = first_right ? right : wrong1;
    cand[2 * static_cast<size_t>(d) + 1] = second_right ? right : wrong2;
  }
  // Best first by path probability under the rates (first child accept, second accept2 - accept).
  const double p[2] = {accept_, std::max(0.0, accept2_ - accept_)};
  struct Open {
    double prob;
    int parent, depth, rank;
    int64_t order;  // ties: the earlier opened first (deterministic)
    bool operator<(const Open& o) const { return prob != o.prob ? prob < o.prob : order > o.order; }
  };
  std::priority_queue<Open> open;
  int64_t order = 0;
  auto push_children = [&](double prob, int parent, int d) {
    if (d >= depth) return;
    for (int r = 0; r < 2; ++r)
      if (p[r] > 0 || r == 0) open.push({prob * p[r], parent, d, r, order++});
  };
  push_children(1.0, -1, 0);
  while (!open.empty() && static_cast<int>(tree.size()) < max_nodes) {
    const Open o = open.top();
    open.pop();
    tree.tokens.push_back(cand[2 * static_cast<size_t>(o.depth) + static_cast<size_t>(o.rank)]);
    tree.parents.push_back(o.parent);
    push_children(o.prob, static_cast<int>(tree.size()) - 1, o.depth + 1);
  }
  return tree;
}

LookupDecoder::LookupDecoder(Context& ctx, Sampler& sampler, const LookupParams& params, std::vector<int32_t> prompt)
    : ctx_(ctx), sampler_(sampler), p_(params), history_(std::move(prompt)),
      chooser_(params.backoff, params.max_backoff) {
  recent_sum_ = 1.0;  // optimistic start: a few passes must fail before drafting pauses
}

int LookupDecoder::DraftChild(int row, int32_t t) const {
  for (size_t i = 0; i < draft_.size(); ++i)
    if (draft_.parents[i] == row - 1 && draft_.tokens[i] == t) return static_cast<int>(i) + 1;
  return 0;
}

int32_t LookupDecoder::Sample() {
  const int row = in_verify_ ? path_.back() : 0;
  int32_t t = sampler_.Sample(ctx_.logits(row), ctx_.n_vocab());
  ++stats_.tokens;
  matched_ = false;
  if (in_verify_) {  // a child of the current row (node row - 1) holding t
    next_ = DraftChild(row, t);
    if (next_ == 0 && p_.acceptance == Acceptance::kBiasedAcceptDraft) {  // the testing tool's second chance
      const int32_t again = sampler_.Sample(ctx_.logits(row), ctx_.n_vocab());
      next_ = DraftChild(row, again);
      if (next_ > 0) t = again;
    }
    matched_ = next_ > 0;
  }
  if (matched_) {
    ++stats_.accepted;
    ++pass_accepted_;
  }
  return t;
}

void LookupDecoder::RecordChainPass(int k, double seconds) {
  chain_times_.Record(k, seconds, chooser_.choices());
  if (k > 0) {
    if (stats_.chain_passes.size() <= static_cast<size_t>(k)) {
      stats_.chain_passes.resize(static_cast<size_t>(k) + 1, 0);
      stats_.chain_s.resize(static_cast<size_t>(k) + 1, 0);
    }
    ++stats_.chain_passes[static_cast<size_t>(k)];
    stats_.chain_s[static_cast<size_t>(k)] += seconds;
  }
}

int LookupDecoder::DraftLength(int k_max) {
  if (!p_.adaptive || k_max <= 0) return k_max;
  // The plain step's time first: every other estimate is relative to it.
  if (!chain_times_.Measured(0)) return 0;
  stats_.accept_estimate = chooser_.Acceptance();
  return chooser_.Choose(k_max, chain_times_.Estimates(0, k_max), chain_times_);
}

void LookupDecoder::EndPass() {
  if (!in_verify_) return;
  // Per-token acceptance: the pass tested its draft up to the first mismatch (the draft's end if none).
  // The pass stopped before a leaf of the tree (the draft's end, for a chain).
  const int last = path_.empty() ? 0 : path_.back() - 1;
  const bool rejected = std::find(draft_.parents.begin(), draft_.parents.end(), last) != draft_.parents.end();
  stats_.rejected += rejected;
  chooser_.RecordPass(pass_accepted_, rejected);
  if (!draft_.empty() && !tree_pass_) RecordChainPass(static_cast<int>(draft_.size()), pass_s_);
  // Running mean of accepted tokens per verify pass (exponential, weight 1/4 on the newest).
  recent_sum_ = 0.75 * recent_sum_ + 0.25 * pass_accepted_;
  // Tokens per second of verify passes against plain steps, as measured here: where a pass over several
  // tokens costs several steps (a model too small to be bound by its weight reads), drafting loses even
  // when drafts are accepted.
  const double rate = (pass_accepted_ + 1) / std::max(pass_s_, 1e-9);
  verify_rate_ = verify_rate_ > 0 ? 0.75 * verify_rate_ + 0.25 * rate : rate;
  const bool slower = plain_s_ > 0 && verify_rate_ * plain_s_ < 1.0;
  if (pass_accepted_ > 0 && (!slower || !Trees())) chooser_.ResetBackoff();
  // Chains pause where BestDraftLength says plain steps win (DraftLength): these coarser rules, which an
  // unlucky streak of a few rejected passes trips at a fair acceptance, are the trees'.
  if (p_.adaptive && Trees() && (recent_sum_ < p_.min_accept_per_pass || slower)) {
    verify_rate_ = 0;  // the probe measures afresh
    chooser_.Pause();
    // The probe after the pause: two passes that accept nothing pause again, one good pass keeps drafting.
    recent_sum_ = p_.min_accept_per_pass * 1.5;
  }
  if (tree_size_ >= 0) {
    TreeSize& t = tree_sizes_[static_cast<size_t>(tree_size_)];
    t.seconds = t.passes == 0 ? pass_s_ : 0.75 * t.seconds + 0.25 * pass_s_;
    ++t.passes;
    tree_size_ = -1;
    // Which node positions this pass offered and which it accepted (the path's rows after the root).
    if (node_offered_.size() < draft_.size()) {
      node_offered_.resize(draft_.size(), 0);
      node_accepted_.resize(draft_.size(), 0);
    }
    for (size_t i = 0; i < node_offered_.size(); ++i) {
      node_offered_[i] = 0.95 * node_offered_[i] + (i < draft_.size() ? 1 : 0);
      node_accepted_[i] *= 0.95;
    }
    for (size_t j = 1; j < path_.size(); ++j) node_accepted_[static_cast<size_t>(path_[j] - 1)] += 1;
  }
  in_verify_ = false;
  pass_accepted_ = 0;
}

int LookupDecoder::TreeBudget() {
  if (!p_.adaptive) return p_.tree_nodes;
  if (tree_sizes_.empty()) {
    for (int n = 3; n < p_.tree_nodes; n = 2 * n + 1) tree_sizes_.push_back({n});
    tree_sizes_.push_back({p_.tree_nodes});
  }
  ++tree_choices_;
  int pick = -1;
  for (int i = static_cast<int>(tree_sizes_.size()) - 1; i >= 0 && pick < 0; --i)
    if (tree_sizes_[static_cast<size_t>(i)].passes < 2) pick = i;  // each measured twice, largest first
  const int n = static_cast<int>(tree_sizes_.size());
  auto at = [&](int i) -> const TreeSize& { return tree_sizes_[static_cast<size_t>(i)]; };
  if (pick < 0 && tree_choices_ % 16 == 0) {  // re-measure the one measured longest ago
    pick = 0;
    for (int i = 1; i < n; ++i)
      if (at(i).last < at(pick).last) pick = i;
  }
  if (pick < 0) {  // the most expected tokens per second
    double best = -1;
    for (int i = 0; i < n; ++i) {
      double tokens = 1;
      for (size_t j = 0; j < static_cast<size_t>(at(i).nodes) && j < node_offered_.size(); ++j)
        if (node_offered_[j] > 0) tokens += node_accepted_[j] / node_offered_[j];
      const double rate = tokens / std::max(at(i).seconds, 1e-9);
      if (rate > best) best = rate, pick = i;
    }
  }
  tree_sizes_[static_cast<size_t>(pick)].last = tree_choices_;
  tree_size_ = pick;
  return tree_sizes_[static_cast<size_t>(pick)].nodes;
}

void LookupDecoder::CacheRebuilt() {
  EndPass();
  matched_ = false;
}

Status SpeculativeSupported(const ModelConfig& c) {
  if (!c.has_conv()) return Status::Ok();
  return Unsupported("speculative decoding is not supported for " + c.arch +
                     ": its short-convolution layers keep a state that cannot roll back rejected draft tokens");
}

Status LookupDecoder::Advance(int32_t token, int max_draft) {
  history_.push_back(token);
  if (matched_) {  // the token is the draft's: its row was computed in the same pass
    matched_ = false;
    path_.push_back(next_);
    return Status::Ok();
  }
  // Roll back the rows after the last accepted token (none when the pass had no draft): a tree keeps its
  // accepted path, moved to the positions after base_.
  if (in_verify_ && tree_pass_) ctx_.KeepTreePath(path_.data(), static_cast<int>(path_.size()));
  else if (in_verify_) ctx_.Truncate(base_ + static_cast<int>(path_.size()));
  EndPass();
  const int base = ctx_.n_past();
  const int room = ctx_.n_ctx() - base - 1;  // the pass must fit in the context
  // A pass of at most one batch: its rejected rows can always be rolled back, sliding-window rings included
  // (Context::Truncate keeps the last batch of every ring).
  // A tree is n_draft deep (its cost is its node count, fixed; the chain length model does not apply).
  const bool trees = Trees();
  int k = std::min({p_.n_draft, max_draft, room, ctx_.n_batch() - 1});
  if (!trees) k = DraftLength(k);
  // A drafter that always proposes would leave no plain step to time: the first step is a plain one.
  if (p_.adaptive && p_.costly_drafter && plain_s_ == 0) k = 0;
  DraftTree draft;
  double draft_s = 0;
  if (k > 0 && p_.costly_drafter && chooser_.pause() > 0) {
    chooser_.CountPausedStep();  // a paused step does not pay for a draft it would drop
  } else if (k > 0) {
    const double t0 = Now();
    draft = Draft(k);
    draft_s = Now() - t0;
    stats_.draft_s += draft_s;
  }
  // A pause counts the steps that found a draft (the others cost nothing).
  if (!draft.empty() && chooser_.pause() > 0) {
    chooser_.CountPausedStep();
    draft = DraftTree();
  }
  if (draft.empty()) {
    const double t0 = Now();
    ED_RETURN_IF_ERROR(ctx_.Eval(&token, 1, false));
    const double s = Now() - t0;
    stats_.plain_s += s;
    plain_s_ = plain_s_ > 0 ? 0.75 * plain_s_ + 0.25 * s : s;
    RecordChainPass(0, s);
    ++stats_.plain_passes;
    return Status::Ok();
  }
  // Rejected draft rows are rolled back; a short-convolution state (lfm2) cannot be (commands refuse
  // drafting for such models at start; this keeps the library from decoding wrong tokens).
  if (ctx_.model().config().has_conv()) return SpeculativeSupported(ctx_.model().config());
  std::vector<int32_t> batch;
  batch.reserve(draft.size() + 1);
  batch.push_back(token);
  batch.insert(batch.end(), draft.tokens.begin(), draft.tokens.end());
  const bool tree = !draft.IsChain();
  const double t0 = Now();
  if (tree) {
    std::vector<int> parents(batch.size());
    parents[0] = -1;
    for (size_t i = 0; i < draft.size(); ++i) parents[i + 1] = draft.parents[i] + 1;
    ED_RETURN_IF_ERROR(ctx_.EvalTree(batch.data(), parents.data(), static_cast<int>(batch.size())));
  } else {
    ED_RETURN_IF_ERROR(ctx_.Eval(batch.data(), static_cast<int>(batch.size()), true));
  }
  const double verify_s = Now() - t0;
  stats_.verify_s += verify_s;
  pass_s_ = draft_s + verify_s;  // what the pass cost against a plain step: the draft included
  ++stats_.verify_passes;
  stats_.tree_passes += tree;
  stats_.drafted += static_cast<int64_t>(draft.size());
  draft_ = std::move(draft);
  in_verify_ = true;
  tree_pass_ = tree;
  base_ = base;
  path_.assign(1, 0);
  return Status::Ok();
}

DraftTree LookupDecoder::Draft(int k) {
  DraftTree t;
  if (p_.tree_nodes > 0 && (p_.tree_drafter || !p_.drafter)) {
    // Room for the tree's nodes: the context after the root, and one batch.
    const int nodes = std::min({TreeBudget(), ctx_.n_ctx() - ctx_.n_past() - 1, ctx_.n_batch() - 1});
    t = p_.tree_drafter ? p_.tree_drafter(history_, nodes, k)
                        : LookupTree(history_, nodes, k, p_.tree_width, p_.ngram_max, p_.ngram_min);
    if (static_cast<int>(t.size()) > nodes) t = DraftTree();  // a drafter that broke its bound drafts nothing
    return t;
  }
  t.tokens = p_.drafter ? p_.drafter(history_, k) : LookupDraft(history_, k, p_.ngram_max, p_.ngram_min);
  if (static_cast<int>(t.tokens.size()) > k) t.tokens.resize(static_cast<size_t>(k));
  for (size_t i = 0; i < t.tokens.size(); ++i) t.parents.push_back(static_cast<int>(i) - 1);
  return t;
}

}  // namespace edgedecode::llm
