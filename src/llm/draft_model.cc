#include "llm/draft_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/utf8.h"

namespace edgedecode::llm {
namespace {

// Token types that never occur in text a model was trained to continue (llama.cpp's LLAMA_TOKEN_TYPE_*):
// control 3, user-defined 4, unused 5.
bool IsSpecialType(const std::vector<int64_t>& types, size_t id) {
  if (id >= types.size()) return false;
  return types[id] == 3 || types[id] == 4 || types[id] == 5;
}

// A token's text in an error message: quoted, with control characters and invalid bytes as \xNN.
std::string Quoted(const std::string& s) { return "'" + EscapeForTerminal(s) + "'"; }

}  // namespace

Status CheckSameVocabulary(const tok::Tokenizer& target, const std::vector<int64_t>& target_types,
                           const tok::Tokenizer& draft, const std::vector<int64_t>& draft_types) {
  const int32_t nt = target.vocab_size(), nd = draft.vocab_size();
  const int32_t shared = std::min(nt, nd);
  for (int32_t id = 0; id < shared; ++id) {
    if (target.TokenText(id) == draft.TokenText(id)) continue;
    return InvalidArgument("the draft model's vocabulary differs from the target's at token id " + std::to_string(id) +
                           ": target " + Quoted(target.TokenText(id)) + ", draft " + Quoted(draft.TokenText(id)) +
                           " (a draft must share the target's token ids)");
  }
  const bool target_larger = nt > nd;
  const tok::Tokenizer& larger = target_larger ? target : draft;
  const std::vector<int64_t>& types = target_larger ? target_types : draft_types;
  for (int32_t id = shared; id < larger.vocab_size(); ++id) {
    if (IsSpecialType(types, static_cast<size_t>(id))) continue;
    return InvalidArgument("the draft model's vocabulary differs from the target's at token id " + std::to_string(id) +
                           ": " + (target_larger ? "target " : "draft ") + Quoted(larger.TokenText(id)) + ", " +
                           (target_larger ? "draft" : "target") + " has no such token (" + std::to_string(nt) +
                           " target tokens, " + std::to_string(nd) +
                           " draft tokens; only trailing special tokens may differ)");
  }
  return Status::Ok();
}

int32_t DraftModelDrafter::Argmax() const {
  const float* row = ctx_.logits(0);
  return static_cast<int32_t>(std::max_element(row, row + n_vocab_) - row);
}

DraftStep DraftModelDrafter::TopTwo() const {
  const float* row = ctx_.logits(0);
  DraftStep s;
  for (int v = 0; v < n_vocab_; ++v) {
    if (s.top1 < 0 || row[v] > row[s.top1]) s.top2 = s.top1, s.top1 = v;
    else if (s.top2 < 0 || row[v] > row[s.top2]) s.top2 = v;
  }
  double sum = 0;
  for (int v = 0; v < n_vocab_; ++v) sum += std::exp(static_cast<double>(row[v]) - row[s.top1]);
  s.p1 = 1 / sum;
  s.p2 = s.top2 < 0 ? 0 : std::exp(static_cast<double>(row[s.top2]) - row[s.top1]) / sum;
  return s;
}

DraftTree TreeFromSteps(const std::vector<DraftStep>& steps, int max_nodes) {
  DraftTree t;
  const int depth = std::min(static_cast<int>(steps.size()), max_nodes);
  for (int d = 0; d < depth; ++d) {
    t.tokens.push_back(steps[static_cast<size_t>(d)].top1);
    t.parents.push_back(d - 1);
  }
  // The second choices by their path's probability: the chain's up to their depth, times their own.
  std::vector<std::pair<double, int>> second;  // (probability, depth)
  double path = 1;
  for (int d = 0; d < depth; ++d) {
    const DraftStep& st = steps[static_cast<size_t>(d)];
    if (st.top2 >= 0) second.push_back({path * st.p2, d});
    path *= st.p1;
  }
  std::stable_sort(second.begin(), second.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [p, d] : second) {
    if (static_cast<int>(t.size()) >= max_nodes) break;
    t.tokens.push_back(steps[static_cast<size_t>(d)].top2);
    t.parents.push_back(d - 1);  // beside the chain's node at depth d: under the one before it
  }
  return t;
}

std::vector<int32_t> DraftModelDrafter::Window(const std::vector<int32_t>& history, int n_draft) {
  const size_t h = history.size(), n_ctx = static_cast<size_t>(ctx_.n_ctx()), k = static_cast<size_t>(n_draft);
  auto fits = [&] { return (window_start_ == 0 ? h : 1 + h - window_start_) + k <= n_ctx; };
  if (!fits() && h > n_ctx / 2 + 1) window_start_ = h - n_ctx / 2;
  if (window_start_ == 0) return history;
  std::vector<int32_t> want;
  want.reserve(1 + h - window_start_);
  want.push_back(history[0]);
  want.insert(want.end(), history.begin() + static_cast<long>(window_start_), history.end());
  return want;
}

Status DraftModelDrafter::Prefill(const std::vector<int32_t>& prompt) {
  const auto t0 = std::chrono::steady_clock::now();
  Status st = prompt.empty() ? Status::Ok() : CatchUp(Window(prompt, 1));
  if (!st.ok()) StartAfresh();
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

size_t DraftModelDrafter::RollBackTo(const std::vector<int32_t>& want) {
  size_t p = std::mismatch(cached_.begin(), cached_.end(), want.begin(), want.end()).first - cached_.begin();
  p = std::min(p, want.size() - 1);
  if (p < cached_.size()) {
    ctx_.Truncate(static_cast<int>(p));  // below min_truncate() (sliding-window rings) it drops everything
    stats_.rolled_back += static_cast<int64_t>(cached_.size()) - ctx_.n_past();
    cached_.resize(static_cast<size_t>(ctx_.n_past()));
    p = cached_.size();
  }
  return p;
}

Status DraftModelDrafter::CatchUp(const std::vector<int32_t>& want) {
  const size_t p = RollBackTo(want);
  for (size_t i = p; i < want.size(); i += static_cast<size_t>(ctx_.n_batch())) {
    const int n = static_cast<int>(std::min(want.size() - i, static_cast<size_t>(ctx_.n_batch())));
    ED_RETURN_IF_ERROR(ctx_.Eval(want.data() + i, n, false));
    cached_.insert(cached_.end(), want.begin() + static_cast<long>(i), want.begin() + static_cast<long>(i) + n);
    ++stats_.evals;
  }
  stats_.caught_up += static_cast<int64_t>(want.size() - p);
  return Status::Ok();
}

Status DraftModelDrafter::Propose(const std::vector<int32_t>& history, int n_draft, std::vector<int32_t>* draft,
                                  std::vector<DraftStep>* steps) {
  const std::vector<int32_t> want = Window(history, n_draft);
  if (want.empty() || want.size() + static_cast<size_t>(n_draft) > static_cast<size_t>(ctx_.n_ctx())) return Status::Ok();
  ED_RETURN_IF_ERROR(CatchUp(want));
  for (;;) {
    int32_t t = Argmax();
    if (steps != nullptr) steps->push_back(TopTwo());
    draft->push_back(t);
    if (static_cast<int>(draft->size()) >= n_draft) break;
    ED_RETURN_IF_ERROR(ctx_.Eval(&t, 1, false));
    cached_.push_back(t);
    ++stats_.evals;
  }
  return Status::Ok();
}

std::vector<int32_t> DraftModelDrafter::operator()(const std::vector<int32_t>& history, int n_draft) {
  std::vector<int32_t> draft;
  if (n_draft <= 0 || history.empty()) return draft;
  const auto t0 = std::chrono::steady_clock::now();
  ++stats_.calls;
  if (Status st = Propose(history, n_draft, &draft); !st.ok()) {
    StartAfresh();
    draft.clear();
  }
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return draft;
}

void DraftModelDrafter::DraftMany(std::vector<Request>& requests) {
  // The requests still drafting, each with the tokens its next pass evaluates (a catch-up chunk, then the
  // one token it drafted last).
  struct Active {
    Request* req;
    std::vector<int32_t> want;  // the window of its history
    size_t next = 0;            // want's first token not evaluated yet
  };
  std::vector<Active> active;
  for (Request& r : requests) {
    r.draft.clear();
    if (r.n_draft <= 0 || r.history->empty()) continue;
    DraftModelDrafter& d = *r.drafter;
    ++d.stats_.calls;
    std::vector<int32_t> want = d.Window(*r.history, r.n_draft);
    if (want.empty() || want.size() + static_cast<size_t>(r.n_draft) > static_cast<size_t>(d.ctx_.n_ctx())) continue;
    const size_t p = d.RollBackTo(want);
    d.stats_.caught_up += static_cast<int64_t>(want.size() - p);
    active.push_back({&r, std::move(want), p});
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<SeqTokens> rows;
  std::vector<Active*> in_pass;
  std::vector<int32_t> drafted(active.size());  // the token each evaluates in a draft step (stable storage)
  auto fail = [&](const std::vector<Active*>& held) {
    for (Active* a : held) {
      a->req->drafter->StartAfresh();
      a->req->draft.clear();
    }
  };
  // Catch-up passes: every request's chunk of at most a batch, until all have evaluated their window.
  for (;;) {
    rows.clear();
    in_pass.clear();
    for (Active& a : active) {
      if (a.next >= a.want.size()) continue;
      const int n = static_cast<int>(std::min(a.want.size() - a.next, static_cast<size_t>(a.req->drafter->ctx_.n_batch())));
      rows.push_back({&a.req->drafter->ctx_, a.want.data() + a.next, n});
      in_pass.push_back(&a);
    }
    if (rows.empty()) break;
    if (!Context::EvalMulti(rows).ok()) {
      fail(in_pass);
      for (Active* a : in_pass) a->req = nullptr;  // out of this round
    } else {
      for (size_t i = 0; i < rows.size(); ++i) {
        Active& a = *in_pass[i];
        DraftModelDrafter& d = *a.req->drafter;
        d.cached_.insert(d.cached_.end(), a.want.begin() + static_cast<long>(a.next), a.want.begin() + static_cast<long>(a.next) + rows[i].n);
        a.next += static_cast<size_t>(rows[i].n);
        ++d.stats_.evals;
      }
    }
    std::erase_if(active, [](const Active& a) { return a.req == nullptr; });
  }
  // Greedy steps: each takes its argmax; those that want more evaluate it, all in one pass.
  for (;;) {
    rows.clear();
    in_pass.clear();
    for (size_t i = 0; i < active.size(); ++i) {
      Active& a = active[i];
      if (a.req == nullptr || static_cast<int>(a.req->draft.size()) >= a.req->n_draft) continue;
      DraftModelDrafter& d = *a.req->drafter;
      drafted[i] = d.Argmax();
      a.req->draft.push_back(drafted[i]);
      if (static_cast<int>(a.req->draft.size()) >= a.req->n_draft) continue;
      rows.push_back({&d.ctx_, &drafted[i], 1});
      in_pass.push_back(&a);
    }
    if (rows.empty()) break;
    if (!Context::EvalMulti(rows).ok()) {
      fail(in_pass);
      for (Active* a : in_pass) a->req = nullptr;
      continue;
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      DraftModelDrafter& d = *in_pass[i]->req->drafter;
      d.cached_.push_back(*rows[i].tokens);
      ++d.stats_.evals;
    }
  }
  // The time of the shared passes, split evenly (what each drafter's stats say it cost).
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto asked = std::count_if(requests.begin(), requests.end(), [](const Request& r) { return r.n_draft > 0; });
  for (Request& r : requests)
    if (r.n_draft > 0) r.drafter->stats_.seconds += s / static_cast<double>(asked);
}

DraftTree DraftModelDrafter::Tree(const std::vector<int32_t>& history, int max_nodes, int max_depth) {
  const int depth = std::min(max_depth, max_nodes);
  if (depth <= 0 || history.empty()) return DraftTree();
  const auto t0 = std::chrono::steady_clock::now();
  ++stats_.calls;
  std::vector<int32_t> chain;
  std::vector<DraftStep> steps;
  DraftTree tree;
  if (Status st = Propose(history, depth, &chain, &steps); !st.ok()) {
    StartAfresh();
  } else {
    tree = TreeFromSteps(steps, max_nodes);
  }
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return tree;
}

}  // namespace edgedecode::llm
