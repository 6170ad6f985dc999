// Context::EvalMulti: the tokens of several sequences (contexts over one model) in shared forward passes, so
// that `serve` reads the weights once per step for all of its streams (continuous batching).
#include <algorithm>
#include <cstring>
#include <string>

#include "llm/context.h"

namespace edgedecode::llm {

Status Context::CheckSharesPasses(const Context& o) const {
  if (&o.model_ != &model_) return InvalidArgument("is over another model");
  if (o.params_.isa != params_.isa) return InvalidArgument("uses other kernels");
  if (o.params_.type_k != params_.type_k || o.params_.type_v != params_.type_v)
    return InvalidArgument("has another KV cache type");
  if (o.rotate_k_ != rotate_k_) return InvalidArgument("rotates its keys differently");
  if (o.params_.attn_f16 != params_.attn_f16) return InvalidArgument("accumulates attention differently (attn_f16)");
  if (o.params_.fusions.OffList() != params_.fusions.OffList()) return InvalidArgument("has other fusions");
  // The pass computes the lead's layers for every row: a self-speculative draft's skip set must be all of theirs.
  if (o.skip_ != skip_) return InvalidArgument("skips other layers");
  return Status::Ok();
}

Status Context::EvalMulti(std::span<const SeqTokens> seqs) {
  if (seqs.empty()) return InvalidArgument("nothing to evaluate");
  // The pass runs on the last sequence's scratch (so that its logits row, written last, stays in place).
  Context& lead = *seqs.back().ctx;
  size_t total = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const SeqTokens& q = seqs[s];
    const std::string where = "sequence " + std::to_string(s) + ": ";
    if (q.ctx == nullptr) return InvalidArgument(where + "no context");
    for (size_t o = 0; o < s; ++o)
      if (seqs[o].ctx == q.ctx) return InvalidArgument(where + "the same context as sequence " + std::to_string(o));
    if (Status st = lead.CheckSharesPasses(*q.ctx); !st.ok()) return InvalidArgument(where + "the context " + st.message());
    if (q.n < 1 || q.n > q.ctx->n_batch())
      return InvalidArgument(where + std::to_string(q.n) + " tokens (1 to its batch size " + std::to_string(q.ctx->n_batch()) +
                             " per pass)");
    if (Status st = q.ctx->CheckTokens(q.tokens, q.n); !st.ok()) return Status(st.code(), where + st.message());
    total += static_cast<size_t>(q.n);
  }

  // The rows of every sequence end to end, packed into passes of up to the lead's n_batch rows. A sequence
  // cut between two passes is fine: its first part's keys and values are in its cache before the second.
  // Logits rows stay in the lead's scratch only until the pass ends, so sequences that keep all of theirs
  // must share one pass.
  const size_t cap = static_cast<size_t>(lead.n_batch());
  const bool any_all = std::any_of(seqs.begin(), seqs.end(), [](const SeqTokens& q) { return q.all_logits; });
  if (any_all && total > cap)
    return InvalidArgument(std::to_string(total) + " tokens with every logits row kept (at most " + std::to_string(cap) +
                           ", one pass)");
  std::vector<int32_t> tokens;
  std::vector<int> out_rows;
  std::vector<size_t> out_seq;    // the sequence of each logits row of the pass ...
  std::vector<int> out_local;     // ... and the row it becomes in that sequence's logits
  tokens.reserve(std::min(total, cap));
  lead.rows_at_.clear();
  auto run = [&] {
    lead.Forward(tokens.data(), static_cast<int>(tokens.size()), out_rows);
    const size_t nv = static_cast<size_t>(lead.n_vocab_);
    // The other sequences' rows first: the lead's own rows then move down within lead.logits_ (row r to
    // its local row <= r, in increasing order, so no row is overwritten before it is read).
    for (size_t r = 0; r < out_rows.size(); ++r) {
      Context& c = *seqs[out_seq[r]].ctx;
      if (&c == &lead) continue;
      const size_t need = static_cast<size_t>(out_local[r] + 1) * nv;
      if (c.logits_.size() < need) c.logits_.resize(need);
      std::memcpy(c.logits_.data() + static_cast<size_t>(out_local[r]) * nv, lead.logits_.data() + r * nv, sizeof(float) * nv);
    }
    for (size_t r = 0; r < out_rows.size(); ++r) {
      if (seqs[out_seq[r]].ctx != &lead || static_cast<size_t>(out_local[r]) == r) continue;
      std::memmove(lead.logits_.data() + static_cast<size_t>(out_local[r]) * nv, lead.logits_.data() + r * nv, sizeof(float) * nv);
    }
    tokens.clear();
    out_rows.clear();
    out_seq.clear();
    out_local.clear();
    lead.rows_at_.clear();
  };
  for (size_t s = 0; s < seqs.size(); ++s) {
    const SeqTokens& q = seqs[s];
    for (int i = 0; i < q.n; ++i) {
      if (q.all_logits || i == q.n - 1) {
        out_rows.push_back(static_cast<int>(tokens.size()));
        out_seq.push_back(s);
        out_local.push_back(q.all_logits ? i : 0);
      }
      tokens.push_back(q.tokens[i]);
      lead.rows_at_.push_back({q.ctx, q.ctx->n_past_ + i});
      if (tokens.size() == cap) run();
    }
  }
  if (!tokens.empty()) run();

  for (const SeqTokens& q : seqs) {
    q.ctx->n_logit_rows_ = q.all_logits ? q.n : 1;
    q.ctx->n_past_ += q.n;
    q.ctx->AdvanceRingFloor();
  }
  for (size_t s = 0; s < seqs.size(); ++s) {
    Context& c = *seqs[s].ctx;
    const Status st = c.CheckLogits(c.n_past_ - seqs[s].n);
    if (st.ok()) continue;
    for (const SeqTokens& q : seqs) {  // every sequence's positions dropped, as if the call had failed
      if (q.ctx == &c) continue;
      // A conv state (lfm2) has taken the rows already: nothing of such a sequence is kept.
      q.ctx->n_past_ = q.ctx->model_.config().has_conv() ? 0 : q.ctx->n_past_ - q.n;
      q.ctx->n_logit_rows_ = 0;
    }
    return Status(st.code(), "sequence " + std::to_string(s) + ": " + st.message());
  }
  return Status::Ok();
}

}  // namespace edgedecode::llm
