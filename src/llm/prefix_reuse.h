// Evaluating a prompt that shares a prefix with what a context already holds (the next turn of a chat,
// a request that repeats a conversation): only the new tokens are prefilled. One per sequence, on the
// thread that owns the context.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "llm/context.h"

namespace edgedecode::llm {

// `cached` lists the tokens at positions 0..ctx.n_past()-1. Evaluates `tokens`, keeping the longest common
// prefix in the KV cache (at least the last token is evaluated again, for its logits), in passes of `batch`
// tokens; `stop` is asked between passes. On return `cached` is `tokens` (or the part evaluated when
// stopped); *reused is the number of tokens that were not evaluated again.
inline Status EvalReusingPrefix(Context& ctx, std::vector<int32_t>& cached, const std::vector<int32_t>& tokens, int batch,
                                int* reused, const std::function<bool()>& stop = nullptr) {
  size_t common = 0;
  const size_t limit = std::min({cached.size(), tokens.size(), static_cast<size_t>(ctx.n_past())});
  while (common < limit && cached[common] == tokens[common]) ++common;
  if (common == tokens.size() && common > 0) --common;  // the last token again: its logits are needed
  // Sliding-window rings no longer hold the window before `common`: everything is evaluated again.
  if (static_cast<int>(common) < ctx.n_past() && static_cast<int>(common) < ctx.min_truncate()) common = 0;
  ctx.Truncate(static_cast<int>(common));
  cached.resize(common);
  *reused = static_cast<int>(common);
  for (size_t i = common; i < tokens.size(); i += static_cast<size_t>(batch)) {
    if (stop && stop()) break;
    const int n = static_cast<int>(std::min(tokens.size() - i, static_cast<size_t>(batch)));
    ED_RETURN_IF_ERROR(ctx.Eval(tokens.data() + i, n, false));
    cached.insert(cached.end(), tokens.begin() + static_cast<long>(i), tokens.begin() + static_cast<long>(i) + n);
  }
  return Status::Ok();
}

}  // namespace edgedecode::llm
