#include "cli/serve_scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "llm/draft_model.h"
#include "llm/prefix_reuse.h"
#include "llm/self_spec.h"
#include "llm/speculative.h"
#include "llm/stop_strings.h"

namespace edgedecode::cli::serve {

bool Job::WaitPieces(std::vector<std::string>* out, int timeout_ms, std::vector<TokenLogprob>* lp) {
  std::unique_lock<std::mutex> lk(mu);
  cv.wait_for(lk, std::chrono::milliseconds(timeout_ms), [&] { return !pieces.empty() || done; });
  for (std::string& p : pieces) out->push_back(std::move(p));
  pieces.clear();
  if (lp != nullptr)
    for (TokenLogprob& t : logprobs) lp->push_back(std::move(t));
  logprobs.clear();
  return done;
}

// A slot: one context and the tokens its KV cache holds, kept after a job ends for the next one's prefix.
struct Scheduler::Slot {
  std::unique_ptr<llm::Context> ctx;
  // With a draft model: its context (declared first: the drafter refers to it) and the drafter over it, kept
  // across jobs so that a prompt's shared prefix stays in the draft cache too.
  std::unique_ptr<llm::Context> draft_ctx;
  std::unique_ptr<llm::DraftModelDrafter> drafter;
  // With SpecOptions::self_spec: the drafter over ctx itself with layers skipped (ctx is declared before it).
  std::unique_ptr<llm::SelfSpecDrafter> self_drafter;
  bool model_drafts() const { return drafter || self_drafter; }  // a drafter whose tokens cost passes
  std::vector<int32_t> cached;  // the tokens at positions 0 .. ctx->n_past()-1
  std::shared_ptr<Job> job;     // null: free
  bool prefilling = false, first_chunk = true;
  std::unique_ptr<llm::Sampler> sampler;
  std::unique_ptr<llm::StopMatcher> stopper;
  tok::Utf8Stream utf8;
  int32_t prev = -1;
  int32_t next = -1;  // the sampled token the step's pass evaluates
  std::vector<int32_t> verify;  // the rows of the step's pass: next, then its draft
  int drafted = 0;              // draft rows the last pass evaluated after next (their logits kept)
  // The draft length and the pause (see the top of serve_scheduler.h), kept across jobs.
  llm::DraftLengthChooser chooser{4, 128};
  // What the draft model continues: the first token and the cached tokens from draft_from on (0: all of
  // them), then next; draft_seen: the cached tokens at its last draft (see DraftWithModel).
  size_t draft_from = 0, draft_seen = 0;
  bool probe = false;  // this step's draft counts against a pause or probes after one (set by Draft before the choice)
  std::vector<int32_t> draft_view;
  int generated = 0;
  std::vector<std::pair<double, int32_t>> ranked;  // scratch of TokenLogprobOf
  std::optional<llm::JsonMatcher> matcher;  // the job's response_format
  std::vector<float> masked;                 // scratch of SampleConstrained
  std::vector<uint8_t> allowed;
};

namespace {

size_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  const size_t limit = std::min(a.size(), b.size());
  while (n < limit && a[n] == b[n]) ++n;
  return n;
}

// The chosen token's log-softmax over the raw logits (double precision: exact enough to compare with
// `edgedecode logits`) and the top n alternatives.
TokenLogprob TokenLogprobOf(const float* logits, int n_vocab, int32_t chosen, const std::string& piece, int n,
                            const tok::Tokenizer& tk, std::vector<std::pair<double, int32_t>>* ranked) {
  double mx = logits[0];
  for (int v = 1; v < n_vocab; ++v) mx = std::max(mx, static_cast<double>(logits[v]));
  double sum = 0;
  for (int v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(logits[v]) - mx);
  const double log_z = mx + std::log(sum);
  TokenLogprob t;
  t.token = piece;
  t.logprob = static_cast<float>(logits[chosen] - log_z);
  n = std::min(n, n_vocab);
  if (n <= 0) return t;
  ranked->resize(static_cast<size_t>(n_vocab));
  for (int v = 0; v < n_vocab; ++v) (*ranked)[static_cast<size_t>(v)] = {logits[v], v};
  std::partial_sort(ranked->begin(), ranked->begin() + n, ranked->end(),
                    [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  for (int k = 0; k < n; ++k) {
    const auto& [logit, id] = (*ranked)[static_cast<size_t>(k)];
    t.top.push_back({id == chosen ? piece : tk.TokenToPiece(id, true), static_cast<float>(logit - log_z)});
  }
  return t;
}

std::vector<std::string> VocabPieces(const tok::Tokenizer& tk) {
  std::vector<std::string> pieces(static_cast<size_t>(tk.vocab_size()));
  for (int32_t id = 0; id < tk.vocab_size(); ++id)
    if (!tk.IsEndOfGeneration(id)) pieces[static_cast<size_t>(id)] = tk.TokenToPiece(id);  // control tokens: ""
  return pieces;
}

}  // namespace

Scheduler::Scheduler(std::vector<std::unique_ptr<llm::Context>> contexts, const tok::Tokenizer& tk, int n_batch,
                     int queue_limit, SpecOptions spec, std::vector<std::unique_ptr<llm::Context>> drafts)
    : tk_(tk), vocab_bytes_(VocabPieces(tk)), n_batch_(std::max(1, n_batch)),
      queue_limit_(static_cast<size_t>(std::max(0, queue_limit))), spec_(spec) {
  for (size_t i = 0; i < contexts.size(); ++i) {
    auto s = std::make_unique<Slot>();
    s->ctx = std::move(contexts[i]);
    if (i < drafts.size() && drafts[i]) {
      s->draft_ctx = std::move(drafts[i]);
      // Only the ids both vocabularies have are proposed (the load checked that they agree).
      s->drafter = std::make_unique<llm::DraftModelDrafter>(*s->draft_ctx, std::min(s->ctx->n_vocab(), s->draft_ctx->n_vocab()));
    } else if (!spec_.self_spec.empty()) {
      s->self_drafter = std::make_unique<llm::SelfSpecDrafter>(*s->ctx, spec_.self_spec);
    }
    slots_.push_back(std::move(s));
  }
  kv_used_.assign(slots_.size(), 0);
  totals_.slots = static_cast<int>(slots_.size());
  for (const auto& s : slots_) totals_.kv_cells_total += s->ctx->n_ctx();
  thread_ = std::thread([this] { Loop(); });
}

Scheduler::~Scheduler() { Drain(); }

int Scheduler::n_ctx() const { return slots_.empty() ? 0 : slots_[0]->ctx->n_ctx(); }

Status Scheduler::Submit(const std::shared_ptr<Job>& job) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!accepting_) return Unavailable("the server is shutting down");
  // Jobs that find a free slot at once do not count against the queue.
  const size_t free_slots = slots_.size() - static_cast<size_t>(busy_);
  if (queue_.size() >= queue_limit_ + free_slots)
    return ResourceExhausted("the request queue is full (" + std::to_string(queue_limit_) + " waiting); retry later");
  queue_.push_back(job);
  cv_.notify_all();
  return Status::Ok();
}

void Scheduler::StopAccepting() {
  std::lock_guard<std::mutex> lk(mu_);
  accepting_ = false;
}

void Scheduler::Drain() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    accepting_ = false;
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

SchedulerStats Scheduler::Stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  SchedulerStats s = totals_;
  s.queue_depth = static_cast<int>(queue_.size());
  s.slots_busy = busy_;
  s.kv_cells_used = 0;
  for (int n : kv_used_) s.kv_cells_used += n;
  s.slots_draft_paused = draft_paused_;
  return s;
}

void Scheduler::AssignLocked() {
  while (!queue_.empty()) {
    std::shared_ptr<Job> job = queue_.front();
    if (job->cancelled) {  // the client left while it waited
      queue_.pop_front();
      std::lock_guard<std::mutex> jl(job->mu);
      job->done = true;
      job->finish_reason = "cancelled";
      job->cv.notify_all();
      continue;
    }
    Slot* best = nullptr;
    size_t best_len = 0;
    for (auto& s : slots_) {
      if (s->job) continue;
      const size_t len = CommonPrefix(s->cached, job->prompt);
      if (best == nullptr || len > best_len) best = s.get(), best_len = len;
    }
    if (best == nullptr) return;
    queue_.pop_front();
    Slot& s = *best;
    s.job = job;
    s.prefilling = true;
    s.first_chunk = true;
    s.sampler = std::make_unique<llm::Sampler>(job->sampling);
    for (int32_t t : job->prompt) s.sampler->Accept(t);  // as `run` does, for the repetition penalty
    s.stopper = std::make_unique<llm::StopMatcher>(job->stops);
    s.utf8 = tok::Utf8Stream();
    s.prev = job->prompt.back();
    s.generated = 0;
    s.drafted = 0;
    s.draft_seen = best_len;  // the draft cache may hold the shared prefix (its drafter keeps what matches)
    s.draft_from = 0;
    s.matcher.reset();
    if (job->grammar) s.matcher.emplace(job->grammar);
    ++busy_;
    totals_.prompt_tokens += job->prompt.size();
  }
}

void Scheduler::Loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return busy_ > 0 || !queue_.empty() || stop_; });
      AssignLocked();
      if (busy_ == 0 && queue_.empty() && stop_) return;
    }
    Step();
    std::lock_guard<std::mutex> lk(mu_);
    draft_paused_ = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
      kv_used_[i] = slots_[i]->ctx->n_past();
      draft_paused_ += slots_[i]->job && slots_[i]->chooser.pause() > 0;
    }
  }
}

namespace {

// While any slot decodes, a prefill chunk is at most this many tokens: a pass that carries one costs a few
// decode steps rather than a whole batch of prompt, so the other streams keep their pace (a prompt alone is
// prefilled n_batch tokens at a time).
constexpr int kChunkWhileDecoding = 16;

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

void Scheduler::Step() {
  const double t0 = Now();
  std::vector<Slot*> decoding;
  bool prefill_waits = false;
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (!s.job) continue;
    if (s.job->cancelled) Finish(s, "cancelled");
    else if (!s.prefilling && Decode(s)) decoding.push_back(&s);
    prefill_waits = prefill_waits || (s.job && s.prefilling);
  }
  // The last pass's cost: its own time and the sampling of its rows just done (a draft's rows are sampled
  // in the step after it: charged to the pass of the next step's row count, they would make plain steps
  // look dearer than they are).
  const double t1 = Now();
  if (last_rows_ > 0) step_times_.Record(last_rows_, last_pass_s_ + (t1 - t0), ++steps_);
  last_rows_ = 0;
  // Every row of a pass with drafts fits in one pass (their logits are kept); one row stays for a prefill.
  const int batch = std::min(slots_.empty() ? 1 : slots_[0]->ctx->n_batch(), n_batch_);
  int used = static_cast<int>(decoding.size());
  std::vector<llm::SeqTokens> rows;
  std::vector<Slot*> row_slots;
  std::vector<std::pair<Slot*, int>> asks;  // the slots whose draft model drafts, and how many tokens
  for (size_t i = 0; i < decoding.size(); ++i) {
    // The rows so far: this slot's, the earlier slots' with their drafts, one for each later slot.
    const int ask = Draft(*decoding[i], batch - used - (prefill_waits ? 1 : 0), used, static_cast<int>(decoding.size()) - 1);
    used += static_cast<int>(decoding[i]->verify.size()) - 1 + ask;
    if (ask > 0) asks.emplace_back(decoding[i], ask);
  }
  const double draft_s = asks.empty() ? 0 : DraftWithModel(asks);
  for (Slot* s : decoding) {
    rows.push_back({s->ctx.get(), s->verify.data(), static_cast<int>(s->verify.size()), s->verify.size() > 1});
    row_slots.push_back(s);
  }
  // One prefilling slot, round-robin, adds a chunk of its prompt to the pass.
  for (size_t k = 0; k < slots_.size(); ++k) {
    Slot& s = *slots_[(next_prefill_ + k) % slots_.size()];
    if (!s.job || !s.prefilling) continue;
    next_prefill_ = (next_prefill_ + k + 1) % slots_.size();
    // With decode rows, the chunk takes what they leave of one pass (at least a token).
    const int limit = decoding.empty() ? std::min(s.ctx->n_batch(), n_batch_) : std::min(kChunkWhileDecoding, batch - used);
    const int n = PrefillChunk(s, limit);
    if (n > 0) {
      rows.push_back({s.ctx.get(), s.job->prompt.data() + s.cached.size(), n});
      row_slots.push_back(&s);
    }
    break;
  }
  if (rows.empty()) return;
  if (llm::Context::EvalMulti(rows).ok()) {
    int n = 0;
    for (size_t r = 0; r < rows.size(); ++r) Evaluated(*row_slots[r], rows[r].n), n += rows[r].n;
    // The pass's cost by its rows, prefill rows included (they cost what verify rows do), with the drafting
    // choices but not the draft model's time; the sampling of its rows is added in the next step.
    last_rows_ = n;
    last_pass_s_ = Now() - t1 - draft_s;
    return;
  }
  // The shared pass failed without changing any cache: each slot alone, so that the error (a context full,
  // logits that overflow) ends only the job it belongs to.
  for (size_t r = 0; r < rows.size(); ++r) {
    Slot& s = *row_slots[r];
    if (Status st = s.ctx->Eval(rows[r].tokens, rows[r].n, rows[r].all_logits); !st.ok()) Finish(s, "error", st);
    else Evaluated(s, rows[r].n);
  }
}

int Scheduler::Draft(Slot& s, int room, int rows, int others) {
  s.verify.assign(1, s.next);
  if ((spec_.lookup <= 0 && !s.model_drafts()) || s.matcher || room <= 0) return 0;
  const llm::Context& ctx = *s.ctx;
  // Rows past next: within the room, the context, a batch (so that the rollback keeps sliding-window rings)
  // and what the answer may still take (row i of the pass gives its token i + 2 from now). Within the
  // context, the history and its draft always fit the draft context (of the same length): the drafter never
  // slides its window.
  const int k = std::min({room, ctx.n_batch() - 1, ctx.n_ctx() - ctx.n_past() - 1, s.job->max_tokens - s.generated - 1});
  if (k <= 0) return 0;
  std::vector<int32_t> draft;
  if (spec_.lookup > 0) {
    s.cached.push_back(s.next);  // the history the draft continues: the cache's tokens, then next
    draft = llm::LookupDraft(s.cached, std::min(k, spec_.lookup), spec_.ngram_max, spec_.ngram_min);
    s.cached.pop_back();
  }
  const bool ask_model = draft.empty() && s.model_drafts();
  if (draft.empty() && !ask_model) return 0;  // nothing to draft: a plain step that costs no choice
  // The lookup's draft is free; the draft model's tokens cost its passes.
  const double token_s = !ask_model ? 0 : spec_.fixed_costs.pass_s > 0 ? spec_.fixed_costs.draft_token_s : draft_token_s_;
  s.probe = s.chooser.probing();
  const int n = DraftLength(s, ask_model ? std::min(k, spec_.draft_max) : static_cast<int>(draft.size()), rows, others, token_s);
  // A pause counts the steps that found a draft or would ask the draft model (its passes are skipped too).
  if (s.chooser.pause() > 0) {
    s.chooser.CountPausedStep();
    std::lock_guard<std::mutex> lk(mu_);
    ++totals_.draft_paused_steps;
    return 0;
  }
  if (n <= 0) return 0;
  if (static_cast<int>(draft.size()) > n) draft.resize(static_cast<size_t>(n));
  s.verify.insert(s.verify.end(), draft.begin(), draft.end());
  return ask_model ? n : 0;
}

std::vector<double> Scheduler::StepEstimates(int rows, int k_max, double token_s) const {
  std::vector<double> est;
  const SpecOptions::FixedCosts& f = spec_.fixed_costs;
  if (f.pass_s > 0) {
    for (int k = 0; k <= k_max; ++k) est.push_back(f.pass_s + (rows + k) * f.row_s);
  } else {
    est = step_times_.Estimates(rows, rows + k_max);
  }
  for (size_t k = 1; k < est.size(); ++k)
    if (est[k] > 0) est[k] += static_cast<double>(k) * token_s;
  return est;
}

int Scheduler::DraftLength(Slot& s, int k_max, int rows, int others, double token_s) {
  if (k_max <= 0) return 0;
  const std::vector<double> est = StepEstimates(rows, k_max, token_s);
  // A plain step's time first: every other estimate is relative to it (the chooser is not asked).
  if (est.empty() || est[0] <= 0) return 0;
  const int k = s.chooser.Choose(k_max, est, step_times_, rows, others);
  // Drafting wins on its own (not a pause's step or its probe): the next pause is a short one again. (Not
  // on every accepted draft, as `run` does: a draft that is right but costs more than it saves would be
  // probed every few steps.)
  if (!s.probe && k > 0 && s.chooser.pause() == 0) s.chooser.ResetBackoff();
  return k;
}

namespace {

// The most tokens the draft model catches up on before a probe: after a pause longer than this, it restarts
// from the first token and the newest kDraftWindow ones, so that a probe costs a few draft-model rows
// rather than every token generated while drafting was paused (on a small model, that catch-up costs a
// large part of what plain decoding does). Drafting on from there, its view grows from the same start and
// each draft evaluates only the new tokens. (Drafts are proposals: what the draft model sees changes which
// are accepted, never the tokens out.)
constexpr size_t kDraftWindow = 16;

}  // namespace

template <class Requests>
void Scheduler::AppendDrafts(const std::vector<std::pair<Slot*, int>>& asks, const Requests& requests) {
  for (size_t i = 0; i < asks.size(); ++i) {
    Slot& s = *asks[i].first;
    s.cached.pop_back();  // next, pushed as the history's last token for the drafter
    s.verify.insert(s.verify.end(), requests[i].draft.begin(), requests[i].draft.end());
  }
}

bool Scheduler::DraftWithSkippedLayers(const std::vector<std::pair<Slot*, int>>& asks) {
  // The history is the slot's whole cache and next (the drafter evaluates next over what ctx holds): no
  // catch-up, so every draft's time is the drafting's own.
  std::vector<llm::SelfSpecDrafter::Request> requests;
  for (const auto& [s, n] : asks) s->cached.push_back(s->next);
  for (const auto& [s, n] : asks) requests.push_back({s->self_drafter.get(), &s->cached, n, {}});
  llm::SelfSpecDrafter::DraftMany(requests);
  AppendDrafts(asks, requests);
  return true;
}

bool Scheduler::DraftWithDraftModels(const std::vector<std::pair<Slot*, int>>& asks) {
  std::vector<llm::DraftModelDrafter::Request> requests;
  bool steady = true;  // every slot drafted in the step before: only a few tokens to catch up on
  for (const auto& [s, n] : asks) {
    const size_t have = s->cached.size();
    if (have < s->draft_seen || s->draft_from > have) s->draft_from = 0, s->draft_seen = 0;  // defensive
    steady = steady && have - s->draft_seen <= static_cast<size_t>(spec_.draft_max) + 1;
    if (s->probe && have - s->draft_seen > kDraftWindow && have > kDraftWindow + 1) s->draft_from = have - kDraftWindow;
    s->draft_seen = have;
    s->cached.push_back(s->next);  // the history the draft continues, as for the lookup
    const std::vector<int32_t>* view = &s->cached;
    if (s->draft_from > 0) {
      s->draft_view.assign(1, s->cached[0]);
      s->draft_view.insert(s->draft_view.end(), s->cached.begin() + static_cast<long>(s->draft_from), s->cached.end());
      view = &s->draft_view;
    }
    requests.push_back({s->drafter.get(), view, n, {}});
  }
  llm::DraftModelDrafter::DraftMany(requests);
  AppendDrafts(asks, requests);
  return steady;
}

double Scheduler::DraftWithModel(const std::vector<std::pair<Slot*, int>>& asks) {
  const double t0 = Now();
  const bool steady = asks.front().first->self_drafter ? DraftWithSkippedLayers(asks) : DraftWithDraftModels(asks);
  // Per drafted token: the shared passes take one greedy step of every slot at once, so the longest draft
  // sets their number. Measured while drafting goes on (the catch-up of a step's accepted tokens charged to
  // it), not on a probe's or a new prompt's longer catch-up, a one-off cost of resuming.
  const double seconds = Now() - t0;
  if (steady) {
    int longest = 0;
    for (const auto& ask : asks) longest = std::max(longest, ask.second);
    const double per_token = seconds / std::max(longest, 1);
    draft_token_s_ = draft_token_s_ > 0 ? llm::SmoothedSeconds(draft_token_s_, per_token) : per_token;
  }
  return seconds;
}

int Scheduler::PrefillChunk(Slot& s, int limit) {
  Job& job = *s.job;
  if (s.first_chunk) {
    // Only the cache's truncation to the prefix the prompt shares (stopped before its first pass).
    int reused = 0;
    Status st = llm::EvalReusingPrefix(*s.ctx, s.cached, job.prompt, n_batch_, &reused, [] { return true; });
    if (!st.ok()) {
      Finish(s, "error", st);
      return 0;
    }
    s.first_chunk = false;
    {
      std::lock_guard<std::mutex> jl(job.mu);
      job.reused_tokens = reused;
    }
    std::lock_guard<std::mutex> lk(mu_);
    totals_.reused_tokens += static_cast<uint64_t>(reused);
  }
  return static_cast<int>(std::min(job.prompt.size() - s.cached.size(), static_cast<size_t>(std::max(1, limit))));
}

void Scheduler::Evaluated(Slot& s, int n) {
  if (s.prefilling) {
    const std::vector<int32_t>& prompt = s.job->prompt;
    s.cached.insert(s.cached.end(), prompt.begin() + static_cast<long>(s.cached.size()),
                    prompt.begin() + static_cast<long>(s.cached.size()) + n);
    if (s.cached.size() == prompt.size()) s.prefilling = false;
    return;
  }
  s.cached.insert(s.cached.end(), s.verify.begin(), s.verify.begin() + n);
  s.drafted = n - 1;
}

bool Scheduler::Decode(Slot& s) {
  llm::Context& ctx = *s.ctx;
  const int k = s.drafted;
  s.drafted = 0;
  const int base = ctx.n_past() - k;  // the cache's positions before the draft rows (next included)
  for (int row = 0;; ++row) {
    int32_t t = -1;
    const bool more = Emit(s, row, base + row, &t);
    if (more && row < k && t == s.verify[static_cast<size_t>(row) + 1]) continue;  // the draft holds
    // Rows past this one drafted what did not come: dropped, so that t goes after the kept ones.
    ctx.Truncate(base + row);
    s.cached.resize(static_cast<size_t>(ctx.n_past()));
    if (k > 0) {
      {
        std::lock_guard<std::mutex> lk(mu_);
        totals_.draft_tokens += static_cast<uint64_t>(k);
        totals_.draft_accepted += static_cast<uint64_t>(row);
        ++totals_.draft_passes;
      }
      // A job that ended in the draft says nothing of it (an end-of-generation token is no rejection).
      if (more) {
        s.chooser.RecordPass(row, row < k);
        // Rejected at its first token: a pause, whatever the costs (a drafter that never matches is paused
        // after a bounded number of steps, however cheap its drafts look).
        if (row == 0) s.chooser.Pause();
      }
    }
    if (!more) return false;
    s.next = t;
    return true;
  }
}

bool Scheduler::Emit(Slot& s, int row, int n_cached, int32_t* token) {
  Job& job = *s.job;
  llm::Context& ctx = *s.ctx;
  auto finish = [&](const char* reason) {
    Finish(s, reason);
    return false;
  };
  // The same order of checks as `run`, so that greedy output is the same token for token.
  const int32_t next = s.matcher ? SampleConstrained(s, row) : s.sampler->Sample(ctx.logits(row), ctx.n_vocab());
  if (next < 0) return finish(s.matcher->Complete() ? "stop" : "length");
  if (s.matcher && tk_.IsEndOfGeneration(next)) return finish("stop");  // only allowed once complete
  if (!job.ignore_eos && tk_.IsEndOfGeneration(next)) return finish("stop");
  ++s.generated;
  std::string piece = tk_.TokenToPiece(next);
  // SentencePiece: the space a word carries is dropped right after BOS (as `run` and llama.cpp do).
  if (s.prev == tk_.bos() && tk_.model() == "llama" && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
  s.prev = next;
  if (s.matcher) s.matcher->Advance(piece);  // allowed by the mask, so it advances
  const std::string out = s.stopper->Push(s.utf8.Push(piece));
  std::optional<TokenLogprob> lp;
  if (job.top_logprobs >= 0)
    lp = TokenLogprobOf(ctx.logits(row), ctx.n_vocab(), next, piece, job.top_logprobs, tk_, &s.ranked);
  {
    std::lock_guard<std::mutex> jl(job.mu);
    job.completion_tokens = s.generated;
    if (lp) job.logprobs.push_back(std::move(*lp));
    if (!out.empty()) {
      job.pieces.push_back(out);
      job.cv.notify_all();
    }
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    ++totals_.completion_tokens;
  }
  if (s.stopper->stopped()) return finish("stop");
  if (s.generated >= job.max_tokens || n_cached >= ctx.n_ctx()) return finish("length");
  *token = next;
  return true;
}

int32_t Scheduler::SampleConstrained(Slot& s, int row) {
  const llm::Context& ctx = *s.ctx;
  const int nv = ctx.n_vocab();
  const float* logits = ctx.logits(row);
  s.matcher->AllowedTokens(vocab_bytes_, &s.allowed);
  const bool complete = s.matcher->Complete();
  s.masked.assign(logits, logits + nv);
  bool any = false;
  for (int v = 0; v < nv; ++v) {
    const bool ok = v < vocab_bytes_.size() && (s.allowed[static_cast<size_t>(v)] || (complete && tk_.IsEndOfGeneration(v)));
    if (!ok) s.masked[static_cast<size_t>(v)] = -std::numeric_limits<float>::infinity();
    any = any || ok;
  }
  // Nothing may follow: a complete text without an end-of-generation token in the vocabulary, or a
  // schema that the limits (depth, whitespace, number length) leave no way to finish.
  if (!any) return -1;
  return s.sampler->Sample(s.masked.data(), nv);
}

void Scheduler::Finish(Slot& s, const std::string& reason, const Status& error) {
  std::shared_ptr<Job> job = std::move(s.job);
  s.job.reset();
  std::string tail;
  if (reason != "error" && !s.stopper->stopped()) tail = s.stopper->Push(s.utf8.Flush()) + s.stopper->Flush();
  s.sampler.reset();
  s.stopper.reset();
  {
    std::lock_guard<std::mutex> jl(job->mu);
    if (!tail.empty()) job->pieces.push_back(tail);
    job->finish_reason = reason;
    job->error = error;
    job->done = true;
    job->cv.notify_all();
  }
  std::lock_guard<std::mutex> lk(mu_);
  --busy_;
}

}  // namespace edgedecode::cli::serve
