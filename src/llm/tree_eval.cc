// Context::EvalTree and KeepTreePath: speculative decoding's token tree in one forward pass (each row
// attends to the cache before the tree plus its own ancestors), then the accepted path moved into place.
#include <cstring>
#include <string>

#include "llm/context.h"

namespace edgedecode::llm {

Status Context::EvalTree(const int32_t* tokens, const int* parents, int n) {
  if (n <= 0) return InvalidArgument("nothing to evaluate");
  if (model_.config().has_conv())  // a conv state follows one chain of positions, not a tree's branches
    return Unsupported("token trees are not supported for " + model_.config().arch +
                       " (its short-convolution state cannot hold branches)");
  if (n > params_.n_batch)
    return InvalidArgument("a tree of " + std::to_string(n) + " rows is larger than the batch (" + std::to_string(params_.n_batch) + ")");
  if (parents[0] != -1) return InvalidArgument("tree row 0 is the root: its parent must be -1");
  for (int i = 1; i < n; ++i) {
    if (parents[i] < 0 || parents[i] >= i)
      return InvalidArgument("tree row " + std::to_string(i) + ": parent " + std::to_string(parents[i]) +
                             " is not an earlier row");
  }
  ED_RETURN_IF_ERROR(CheckTokens(tokens, n));
  const int base = n_past_;
  // Each row's path of slots, root first: its parent's path, then its own slot. A row at depth d has d + 1.
  std::vector<int> depth(static_cast<size_t>(n), 0), start(static_cast<size_t>(n), 0);
  size_t total = 0;
  for (int i = 0; i < n; ++i) {
    if (i > 0) depth[static_cast<size_t>(i)] = depth[static_cast<size_t>(parents[i])] + 1;
    start[static_cast<size_t>(i)] = static_cast<int>(total);
    total += static_cast<size_t>(depth[static_cast<size_t>(i)]) + 1;
  }
  tree_paths_.resize(total);
  for (int i = 0; i < n; ++i) {
    int* path = tree_paths_.data() + start[static_cast<size_t>(i)];
    const int d = depth[static_cast<size_t>(i)];
    if (i > 0) std::memcpy(path, tree_paths_.data() + start[static_cast<size_t>(parents[i])], sizeof(int) * static_cast<size_t>(d));
    path[d] = base + i;
  }
  rows_at_.resize(static_cast<size_t>(n));
  std::vector<int> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    rows_at_[static_cast<size_t>(i)] = {this, base + depth[static_cast<size_t>(i)], tree_paths_.data() + start[static_cast<size_t>(i)], base};
    out[static_cast<size_t>(i)] = i;
  }
  if (logits_.size() < static_cast<size_t>(n) * n_vocab_) logits_.resize(static_cast<size_t>(n) * n_vocab_);
  Forward(tokens, n, out);
  rows_at_.clear();  // its paths point into tree_paths_
  n_logit_rows_ = n;
  n_past_ += n;
  AdvanceRingFloor();
  tree_base_ = base;
  return CheckLogits(base);
}

void Context::KeepTreePath(const int* path, int k) {
  if (tree_base_ < 0) return;
  const int base = tree_base_;
  tree_base_ = -1;
  const ModelConfig& c = model_.config();
  // path[j] >= j and increasing: slot base + j is never the source of a later move.
  for (int j = 0; j < k; ++j) {
    const int from = base + path[j], to = base + j;
    if (from == to) continue;
    for (size_t l = 0; l < layer_rows_.size(); ++l) {
      const int rows = layer_rows_[l];
      auto move = [&](std::vector<uint8_t>& cache, size_t off, GgmlType t, size_t row_bytes) {
        uint8_t* layer = cache.data() + off;
        if (!ByHead(t)) {
          std::memcpy(layer + static_cast<size_t>(to % rows) * row_bytes, layer + static_cast<size_t>(from % rows) * row_bytes, row_bytes);
          return;
        }
        const size_t hb = RowBytes(t, c.head_dim);
        for (int h = 0; h < c.n_kv_heads; ++h)
          std::memcpy(layer + HeadRowOffset(t, h, to % rows, rows), layer + HeadRowOffset(t, h, from % rows, rows), hb);
      };
      move(k_cache_, k_off_[l], params_.type_k, k_row_);
      move(v_cache_, v_off_[l], params_.type_v, v_row_);
    }
  }
  Truncate(base + k);
}

}  // namespace edgedecode::llm
