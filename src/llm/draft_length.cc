#include "llm/draft_length.h"

#include <algorithm>

namespace edgedecode::llm {

double ExpectedPassTokens(int k, double a) {
  double tokens = 1, a_pow = 1;
  for (int i = 1; i <= k; ++i) {
    a_pow *= a;
    tokens += a_pow;
  }
  return tokens;
}

int BestDraftLength(double a, const std::vector<double>& seconds, int k_min, double other_tokens) {
  int best = k_min;
  double best_rate = 0;
  for (int k = std::max(k_min, 0); k < static_cast<int>(seconds.size()); ++k) {
    if (seconds[static_cast<size_t>(k)] <= 0) continue;
    const double rate = (ExpectedPassTokens(k, a) + other_tokens) / seconds[static_cast<size_t>(k)];
    if (rate > best_rate) best_rate = rate, best = k;
  }
  return best;
}

double SmoothedSeconds(double mean, double seconds) { return 0.75 * mean + 0.25 * std::min(seconds, 2 * mean); }

void PassTimes::Record(int n, double seconds, int64_t stamp) {
  if (n < 0) return;
  if (times_.size() <= static_cast<size_t>(n)) times_.resize(static_cast<size_t>(n) + 1);
  Time& t = times_[static_cast<size_t>(n)];
  t.seconds = t.passes < 2 ? seconds : SmoothedSeconds(t.seconds, seconds);
  ++t.passes;
  t.last = stamp;
}

std::vector<double> PassTimes::Estimates(int from, int to) const {
  from = std::max(from, 0);
  std::vector<double> est(static_cast<size_t>(std::max(to + 1, 0)), 0);
  int lo = -1;  // the last measured length at or below n
  for (int n = 0; n <= to; ++n) {
    if (Measured(n)) {
      est[static_cast<size_t>(n)] = times_[static_cast<size_t>(n)].seconds;
      lo = n;
      continue;
    }
    if (lo < 0) continue;  // nothing measured below: left unusable
    int hi = n + 1;
    while (hi <= to && !Measured(hi)) ++hi;
    const double t_lo = est[static_cast<size_t>(lo)];
    est[static_cast<size_t>(n)] = hi > to ? t_lo : t_lo + (times_[static_cast<size_t>(hi)].seconds - t_lo) * (n - lo) / (hi - lo);
  }
  if (from > to) return {};
  return std::vector<double>(est.begin() + from, est.end());
}

void DraftLengthChooser::RecordPass(int accepted, bool rejected) {
  accept_ew_ = 0.9 * accept_ew_ + accepted;
  reject_ew_ = 0.9 * reject_ew_ + (rejected ? 1 : 0);
}

double DraftLengthChooser::Acceptance() const { return std::min((accept_ew_ + 0.5) / (accept_ew_ + reject_ew_ + 1), 0.999); }

void DraftLengthChooser::Pause() {
  pause_ = backoff_;
  backoff_ = std::min(backoff_ * 2, max_backoff_);
  probe_ = true;
}

int DraftLengthChooser::Choose(int k_max, const std::vector<double>& est, const PassTimes& times, int times_offset,
                               double other_tokens) {
  const double a = Acceptance();
  // Paused (the step drafts only to count against the pause) or probing after one: a draft, never plain.
  const bool must_draft = pause_ > 0 || probe_;
  if (pause_ == 0) probe_ = false;
  int k = BestDraftLength(a, est, must_draft ? 1 : 0, other_tokens);
  if (k == 0) {  // plain steps win: pause, then probe
    Pause();
    return BestDraftLength(a, est, 1, other_tokens);  // the step counts against the pause
  }
  if (must_draft) return k;
  // Every 16th choice re-measures the neighbour of the best one measured longest ago (costs drift with
  // load; a plain step too, next to drafts of 1, where the choice against plain steps is closest).
  if (++choices_ % 16 == 0) {
    int pick = -1;
    for (int n : {k - 1, k + 1})
      if (n >= 0 && n <= k_max && (pick < 0 || times.Last(n + times_offset) < times.Last(pick + times_offset))) pick = n;
    if (pick >= 0) k = pick;
  }
  return std::min(k, k_max);
}

}  // namespace edgedecode::llm
