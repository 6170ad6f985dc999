#include "llm/speculative.h"

#include <algorithm>
#include <chrono>

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

ReplayDrafter::ReplayDrafter(std::vector<int32_t> prompt, std::vector<int32_t> continuation, double accept,
                             uint64_t seed, int n_vocab)
    : recorded_(std::move(prompt)), accept_(accept), state_(seed), n_vocab_(n_vocab) {
  prompt_len_ = recorded_.size();
  recorded_.insert(recorded_.end(), continuation.begin(), continuation.end());
}

std::vector<int32_t> ReplayDrafter::operator()(const std::vector<int32_t>& history, int n_draft) {
  std::vector<int32_t> draft;
  const size_t h = history.size();
  if (h < prompt_len_ || h >= recorded_.size() || n_draft <= 0) return draft;
  if (!std::equal(history.begin() + static_cast<long>(prompt_len_), history.end(),
                  recorded_.begin() + static_cast<long>(prompt_len_)))
    return draft;  // the output left the recording: its continuation no longer applies
  const size_t end = std::min(recorded_.size(), h + static_cast<size_t>(n_draft));
  for (size_t i = h; i < end; ++i) {
    const double u = SplitMix64Uniform(&state_);  // the same corruption on every platform
    const int32_t right = recorded_[i];
    draft.push_back(u < accept_ ? right : static_cast<int32_t>((right + 1) % n_vocab_));
  }
  return draft;
}

LookupDecoder::LookupDecoder(Context& ctx, Sampler& sampler, const LookupParams& params, std::vector<int32_t> prompt)
    : ctx_(ctx), sampler_(sampler), p_(params), history_(std::move(prompt)), backoff_(params.backoff) {
  recent_sum_ = 1.0;  // optimistic start: a few passes must fail before drafting pauses
}

int32_t LookupDecoder::Sample() {
  const int32_t t = sampler_.Sample(ctx_.logits(in_verify_ ? row_ : 0), ctx_.n_vocab());
  ++stats_.tokens;
  matched_ = in_verify_ && row_ < static_cast<int>(draft_.size()) && t == draft_[static_cast<size_t>(row_)];
  if (matched_) {
    ++stats_.accepted;
    ++pass_accepted_;
  }
  return t;
}

int LookupDecoder::DraftLength(int k_max) const {
  if (!p_.adaptive || extra_cost_ < 0 || accept_ew_ + reject_ew_ < 4) return k_max;
  const double a = std::min(accept_ew_ / (accept_ew_ + reject_ew_), 0.999);
  int best = k_max;
  double best_gain = 0;
  double a_pow = a;  // a^k
  for (int k = 1; k <= k_max; ++k) {
    a_pow *= a;  // a^(k+1)
    const double gain = (1 - a_pow) / (1 - a) / (1 + extra_cost_ * k);
    if (gain > best_gain) best_gain = gain, best = k;
  }
  return best;
}

void LookupDecoder::EndPass() {
  if (!in_verify_) return;
  // Per-token acceptance: the pass tested its draft up to the first mismatch (the draft's end if none).
  const bool rejected = pass_accepted_ < static_cast<int>(draft_.size());
  stats_.rejected += rejected;
  accept_ew_ = 0.9 * accept_ew_ + pass_accepted_;
  reject_ew_ = 0.9 * reject_ew_ + (rejected ? 1 : 0);
  // The extra cost of a drafted token, in plain steps: (pass time / step time - 1) / k.
  if (plain_s_ > 0 && !draft_.empty()) {
    const double extra = std::max(0.0, (pass_s_ / plain_s_ - 1) / static_cast<double>(draft_.size()));
    extra_cost_ = extra_cost_ < 0 ? extra : 0.75 * extra_cost_ + 0.25 * extra;
  }
  // Running mean of accepted tokens per verify pass (exponential, weight 1/4 on the newest).
  recent_sum_ = 0.75 * recent_sum_ + 0.25 * pass_accepted_;
  // Tokens per second of verify passes against plain steps, as measured here: where a pass over several
  // tokens costs several steps (a model too small to be bound by its weight reads), drafting loses even
  // when drafts are accepted.
  const double rate = (pass_accepted_ + 1) / std::max(pass_s_, 1e-9);
  verify_rate_ = verify_rate_ > 0 ? 0.75 * verify_rate_ + 0.25 * rate : rate;
  const bool slower = plain_s_ > 0 && verify_rate_ * plain_s_ < 1.0;
  if (pass_accepted_ > 0 && !slower) backoff_ = p_.backoff;
  if (p_.adaptive && (recent_sum_ < p_.min_accept_per_pass || slower)) {
    verify_rate_ = 0;  // the probe measures afresh
    pause_ = backoff_;
    backoff_ = std::min(backoff_ * 2, p_.max_backoff);
    // The probe after the pause: two passes that accept nothing pause again, one good pass keeps drafting.
    recent_sum_ = p_.min_accept_per_pass * 1.5;
  }
  in_verify_ = false;
  pass_accepted_ = 0;
}

void LookupDecoder::CacheRebuilt() {
  EndPass();
  matched_ = false;
}

Status LookupDecoder::Advance(int32_t token, int max_draft) {
  history_.push_back(token);
  if (matched_) {  // the token is the draft's: its row was computed in the same pass
    matched_ = false;
    ++row_;
    return Status::Ok();
  }
  // Roll back the rows after the last accepted token (none when the pass had no draft).
  if (in_verify_) ctx_.Truncate(base_ + row_ + 1);
  EndPass();
  const int base = ctx_.n_past();
  const int room = ctx_.n_ctx() - base - 1;  // the pass must fit in the context
  // A pass of at most one batch: its rejected rows can always be rolled back, sliding-window rings included
  // (Context::Truncate keeps the last batch of every ring).
  int k = std::min({DraftLength(p_.n_draft), max_draft, room, ctx_.n_batch() - 1});
  // A drafter that always proposes would leave no plain step to time: the first step is a plain one.
  if (p_.adaptive && p_.costly_drafter && plain_s_ == 0) k = 0;
  std::vector<int32_t> draft;
  double draft_s = 0;
  if (k > 0 && p_.costly_drafter && pause_ > 0) {
    --pause_;  // a paused step does not pay for a draft it would drop
  } else if (k > 0) {
    const double t0 = Now();
    draft = p_.drafter ? p_.drafter(history_, k) : LookupDraft(history_, k, p_.ngram_max, p_.ngram_min);
    draft_s = Now() - t0;
    stats_.draft_s += draft_s;
  }
  if (static_cast<int>(draft.size()) > k) draft.resize(static_cast<size_t>(k));
  // A pause counts the steps that found a draft (the others cost nothing).
  if (!draft.empty() && pause_ > 0) {
    --pause_;
    draft.clear();
  }
  if (draft.empty()) {
    const double t0 = Now();
    ED_RETURN_IF_ERROR(ctx_.Eval(&token, 1, false));
    const double s = Now() - t0;
    stats_.plain_s += s;
    plain_s_ = plain_s_ > 0 ? 0.75 * plain_s_ + 0.25 * s : s;
    ++stats_.plain_passes;
    return Status::Ok();
  }
  std::vector<int32_t> batch;
  batch.reserve(draft.size() + 1);
  batch.push_back(token);
  batch.insert(batch.end(), draft.begin(), draft.end());
  const double t0 = Now();
  ED_RETURN_IF_ERROR(ctx_.Eval(batch.data(), static_cast<int>(batch.size()), true));
  const double verify_s = Now() - t0;
  stats_.verify_s += verify_s;
  pass_s_ = draft_s + verify_s;  // what the pass cost against a plain step: the draft included
  ++stats_.verify_passes;
  stats_.drafted += static_cast<int64_t>(draft.size());
  draft_ = std::move(draft);
  in_verify_ = true;
  base_ = base;
  row_ = 0;
  return Status::Ok();
}

}  // namespace edgedecode::llm
