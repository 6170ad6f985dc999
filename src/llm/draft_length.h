// The cost-aware choice of a speculative draft's length, shared by `run` (LookupDecoder's adaptive chains)
// and `serve` (each slot of the scheduler): a running estimate of the per-token acceptance, the pass times
// measured per length, and the pause-and-probe rule for when plain steps win. Timing decides which steps
// draft and how much, never which tokens come out. Prints nothing. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace edgedecode::llm {

// Expected tokens from a verify pass of k drafted tokens, each right with probability a independently,
// the bonus token included: 1 + a + ... + a^k (1 for k = 0, a plain step).
double ExpectedPassTokens(int k, double a);
// The draft length, at least k_min, with the most expected tokens per second: (ExpectedPassTokens(k, a) +
// other_tokens) / seconds[k], where seconds[k] is the time of a pass of k drafted tokens (seconds[0]: a plain
// step) and other_tokens what the same pass gives besides (serve: the other slots' tokens, slowed down by
// the extra rows too); k ranges over 0..seconds.size() - 1; entries <= 0 are skipped (k_min when none is
// usable). 0: plain steps win.
int BestDraftLength(double a, const std::vector<double>& seconds, int k_min = 0, double other_tokens = 0);

// A running mean of seconds after one more measurement: weight 1/4 on the new one, counted at most twice
// the mean (one pass descheduled by another process must not rule its length out for long; a lasting
// slowdown still raises the mean within a few passes).
double SmoothedSeconds(double mean, double seconds);

// Running mean pass times by length (the number of drafted tokens, or serve's rows per pass), with
// estimates for the lengths not measured yet.
class PassTimes {
 public:
  // A pass of length n took `seconds`; `stamp` orders the measurements (the caller's choice counter).
  // The first pass of a length may pay for warming up (scratch growth, caches): the second replaces it,
  // later ones go into SmoothedSeconds.
  void Record(int n, double seconds, int64_t stamp);
  bool Measured(int n) const { return n >= 0 && static_cast<size_t>(n) < times_.size() && times_[static_cast<size_t>(n)].passes > 0; }
  // The stamp of n's last measurement (-1: never).
  int64_t Last(int n) const { return Measured(n) ? times_[static_cast<size_t>(n)].last : -1; }
  // Seconds of lengths from..to (index i: length from + i). A length not measured yet: between two measured
  // ones, on the line joining them (the pass time steps at tile sizes, so this is about right or high); past
  // the longest measured, that one's time (a pass of more rows is never cheaper: optimistic, so that a
  // longer draft is tried while it could win); below the shortest measured: 0 (unusable).
  std::vector<double> Estimates(int from, int to) const;

 private:
  struct Time {
    double seconds = 0;
    int passes = 0;
    int64_t last = 0;
  };
  std::vector<Time> times_;
};

// The draft length of each pass from the running acceptance and the estimated pass times, pausing drafting
// where plain steps win (see LookupParams::adaptive).
class DraftLengthChooser {
 public:
  // backoff: the first pause in steps, doubled on each pause in a row up to max_backoff.
  DraftLengthChooser(int backoff, int max_backoff) : backoff0_(backoff), max_backoff_(max_backoff), backoff_(backoff) {}

  // After a verify pass: `accepted` drafted tokens kept; rejected: the pass stopped before the draft's end.
  void RecordPass(int accepted, bool rejected);
  // The running per-token acceptance: decayed counts of accepted tokens and of passes left before the
  // draft's end (the geometric law's estimate with censored passes), with half a pseudo-count each (a prior
  // of 1/2 that a few passes outweigh).
  double Acceptance() const;

  // The length of the next pass, at most k_max, from est[k] (the estimated seconds of a pass of k drafted
  // tokens, est[0] a plain step; see BestDraftLength, other_tokens included). Where plain steps win, drafting
  // pauses for `backoff` steps (doubled on each pause in a row), and the choice is the best nonzero length
  // (the caller counts the step against the pause: CountPausedStep). While paused, and on the probe after a
  // pause, the choice is never 0. Every 16th choice otherwise re-measures the neighbour of the best one
  // measured longest ago (times: their stamps; costs drift with load).
  int Choose(int k_max, const std::vector<double>& est, const PassTimes& times, int times_offset = 0,
             double other_tokens = 0);
  // The stamp for PassTimes::Record: the choices made so far.
  int64_t choices() const { return choices_; }

  // The pause: drafting off for pause() more steps that would draft.
  int pause() const { return pause_; }
  // The next Choose drafts whatever the costs say: it counts against a pause, or it is the probe after one.
  bool probing() const { return pause_ > 0 || probe_; }
  void CountPausedStep() { if (pause_ > 0) --pause_; }
  // Pauses now (a caller's own rule: trees, or serve's first-token rejection), doubling the next pause.
  void Pause();
  // A pass that paid: the next pause is the first one's length again.
  void ResetBackoff() { backoff_ = backoff0_; }

 private:
  int backoff0_, max_backoff_;
  int pause_ = 0, backoff_;
  bool probe_ = false;  // the first pass after a pause: a draft, whatever the choice says
  double accept_ew_ = 0, reject_ew_ = 0;
  int64_t choices_ = 0;
};

}  // namespace edgedecode::llm
