// The scheduler of `edgedecode serve`: N slots, each its own llm::Context (own KV cache) over one shared,
// read-only llm::Model, driven by ONE thread that owns every context. HTTP handler threads only submit a
// Job and wait on it. Continuous batching: each step samples the next token of every decoding slot and then
// evaluates all of them in one forward pass over the slots' contexts (llm::Context::EvalMulti: one read of
// the weights for every stream), together with one prefill chunk of one prefilling slot (round-robin), kept
// short while others decode so that a long prompt never stalls the other streams. A new job goes to the free slot whose cached tokens share the longest prefix with its prompt, and only
// the rest of the prompt is prefilled (llm::EvalReusingPrefix).
//
// Speculative decoding (SpecOptions::lookup > 0): a decoding slot whose history (prompt and answer so far)
// repeats its last n-gram appends the tokens that followed it as a draft to its row of the pass, with the
// logits of every row kept; the next step samples from those rows one by one, as plain decoding would, while
// the sampled token equals the drafted one, and drops the rejected rows from the slot's cache. The tokens
// out are those of plain decoding (same sampler calls, same logits bits); only the tokens per pass change.
// Jobs with a response_format do not draft. Prints nothing.
//
// Drafting is cost-aware (llm::DraftLengthChooser, as `run`'s adaptive chains): each slot keeps a running
// estimate of its per-token acceptance, and the scheduler measures what a step costs by the rows of its
// pass (the extra verify rows) and what the draft model costs per drafted token. Each step a slot drafts
// the length with the most expected tokens per second for the whole pass (the other slots' tokens
// included, which the extra rows slow down too); where plain steps win, or where a draft is rejected at its
// first token, the slot pauses drafting (4 steps, doubling to 128 while it keeps losing) and then probes
// with one draft. The slot's estimate and pause carry over to its next job (they measure the drafter on
// this traffic). Timing decides which steps draft and how much, never which tokens come out.
//
// With a draft model (`serve --draft` / `--draft-quant`) each slot has a context over the draft model as well,
// sized like its own: an llm::DraftModelDrafter that follows the slot's history (the tokens its cache holds
// and next: the accepted ones are caught up on, the rejected ones rolled back, a new job's prompt keeps the
// prefix it shares) proposes up to draft_max tokens greedily, which go into the slot's row exactly as a
// lookup draft does. With --lookup too, the n-gram lookup is asked first and the draft model only when it
// finds nothing (as `run` chains them). A probe after a pause catches the draft model up on the slot's first
// and newest tokens only (see DraftWithModel). The slots' draft contexts draft together, in shared passes of the
// draft model (llm::DraftModelDrafter::DraftMany).
//
// Self-speculative decoding (`serve --self-spec`, SpecOptions::self_spec): each slot's own context drafts with
// the skipped layers bypassed (llm::SelfSpecDrafter: the same weights, the kept layers' KV cache), in the
// place and with the cost accounting of a draft model (per drafted token, measured), the slots' drafts again
// in shared passes (llm::SelfSpecDrafter::DraftMany). A draft leaves the slot's cache as it was; the verify
// pass then writes every layer at the drafted positions and the rejected ones are dropped as for any draft.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "edgedecode/status.h"
#include "llm/context.h"
#include "llm/draft_length.h"
#include "llm/json_constraint.h"
#include "llm/sampler.h"
#include "tok/tokenizer.h"

namespace edgedecode::cli::serve {

// A generated token's log-probability under the model (log-softmax of the raw logits over the whole
// vocabulary, before temperature and the truncations), and the most likely alternatives at that step.
struct TopLogprob {
  std::string token;  // the token's bytes (control tokens rendered, e.g. "</s>")
  float logprob = 0;
};
struct TokenLogprob {
  std::string token;  // the bytes the token added to the output
  float logprob = 0;
  std::vector<TopLogprob> top;  // most likely first
};

// One generation request and the channel its tokens come back through. Shared by the handler thread
// (which waits on it) and the scheduler thread (which fills it); every field below `mu` is guarded by it.
struct Job {
  // Inputs, set before Submit and read-only afterwards.
  std::vector<int32_t> prompt;
  int max_tokens = 16;
  llm::SamplerParams sampling;
  std::vector<std::string> stops;
  bool ignore_eos = false;  // generate past end-of-generation tokens (llama.cpp's extension)
  int top_logprobs = -1;    // >= 0: record each token's TokenLogprob with this many alternatives
  std::shared_ptr<const llm::JsonGrammar> grammar;  // not null: only tokens that keep the JSON valid

  // Set by the handler when the client is gone: the scheduler frees the slot within one step.
  std::atomic<bool> cancelled{false};

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> pieces;  // text generated and not yet taken by the handler, one per token
  std::vector<TokenLogprob> logprobs;  // with top_logprobs >= 0: one per generated token, not yet taken
  bool done = false;
  std::string finish_reason;   // "stop" or "length" once done
  int completion_tokens = 0;
  int reused_tokens = 0;       // prompt tokens served from the slot's KV cache
  Status error;                // a failed forward pass

  // Blocks until text is available or the job is done (or timeout passed); appends the new pieces to
  // *out (a stream sends one event each) and the new log-probabilities to *lp (when not null). Returns
  // whether the job is done.
  bool WaitPieces(std::vector<std::string>* out, int timeout_ms, std::vector<TokenLogprob>* lp = nullptr);
};

struct SchedulerStats {
  uint64_t prompt_tokens = 0, completion_tokens = 0, reused_tokens = 0;
  uint64_t draft_tokens = 0, draft_accepted = 0;  // speculative decoding: drafted, and kept
  uint64_t draft_passes = 0;        // slot steps that verified a draft
  uint64_t draft_paused_steps = 0;  // slot steps that had a draft (or would have asked the draft model) but
                                    // did not draft: the slot's drafting paused (losing or failing drafts)
  int slots_draft_paused = 0;       // busy slots whose drafting is paused now
  int queue_depth = 0, slots_busy = 0, slots = 0;
  int64_t kv_cells_used = 0, kv_cells_total = 0;
};

// Speculative decoding by prompt lookup (see above); lookup = 0: off.
struct SpecOptions {
  int lookup = 0;     // the longest draft
  int ngram_max = 3;  // the n-gram sizes matched, longest first
  int ngram_min = 1;
  int draft_max = 8;  // with draft contexts or self_spec: the longest draft of the draft model / skipping layers
  std::vector<int> self_spec;  // the layers each slot's context skips to draft for itself (empty: off); a skip
                               // set that passed llm::CheckSkipSet for the model; not with draft contexts
  // A testing tool, never a user option: pass_s > 0 replaces the measured costs (a step whose pass has n rows
  // takes pass_s + n * row_s seconds, a token of the draft model draft_token_s), so that a test's drafting
  // decisions do not depend on the machine's timing.
  struct FixedCosts {
    double pass_s = 0, row_s = 0, draft_token_s = 0;
  } fixed_costs;
};

class Scheduler {
 public:
  // contexts: one per slot, all over the same model; queue_limit: jobs waiting beyond the busy slots.
  // drafts: empty, or one context per slot over a draft model of the same vocabulary (speculative decoding
  // with a draft model, see above); the draft model must outlive the scheduler.
  Scheduler(std::vector<std::unique_ptr<llm::Context>> contexts, const tok::Tokenizer& tk, int n_batch, int queue_limit,
            SpecOptions spec = {}, std::vector<std::unique_ptr<llm::Context>> drafts = {});
  ~Scheduler();  // Drain()s
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a job: ResourceExhausted when the queue is full, Unavailable after StopAccepting.
  Status Submit(const std::shared_ptr<Job>& job);
  // No new jobs; the queued and running ones finish.
  void StopAccepting();
  // Waits until every accepted job is done, then ends the scheduler thread.
  void Drain();
  SchedulerStats Stats() const;
  int n_ctx() const;

 private:
  struct Slot;
  void Loop();
  // Moves queued jobs to free slots, the longest cached prefix first. Caller holds mu_.
  void AssignLocked();
  // One step of every busy slot: a token sampled and sent for each decoding one, then one forward pass with
  // their tokens and (at most) one prefill chunk of one prefilling slot.
  void Step();
  // Samples, sends and checks the next token(s) of a decoding slot -- one per logits row the last pass kept
  // for it, while they confirm its draft -- and drops the rejected draft rows from its cache; true when
  // s.next is to be evaluated, false when the job finished.
  bool Decode(Slot& s);
  // Samples, sends and checks one token from logits row `row`, after n_cached valid cache positions; false
  // when the job finished.
  bool Emit(Slot& s, int row, int n_cached, int32_t* token);
  // Sets s.verify to s.next and up to `room` draft tokens after it: the n-gram lookup's (none while paused,
  // for grammar jobs, or near the limits). Returns how many tokens the slot's draft model is to propose
  // instead (0: none), which DraftWithModel appends.
  // rows: the rows of the pass so far, the slot's own (next) included; others: the other decoding slots.
  int Draft(Slot& s, int room, int rows, int others);
  // The draft length of a slot (its chooser over StepEstimates), at most k_max; 0: no draft this step (plain
  // steps win, paused, or nothing measured yet).
  int DraftLength(Slot& s, int k_max, int rows, int others, double token_s);
  // The estimated seconds of the step with k = 0..k_max drafted tokens added to a pass of `rows` rows, each
  // drafted token costing token_s as well (0 at k = 0 when nothing is measured yet).
  std::vector<double> StepEstimates(int rows, int k_max, double token_s) const;
  // The draft models (or the self-speculative drafters) of the slots that asked (slot, tokens) propose
  // together: their passes are shared. Returns the seconds it took.
  double DraftWithModel(const std::vector<std::pair<Slot*, int>>& asks);
  // DraftWithModel's two halves: the drafts of the draft models / of the self-speculative drafters, appended to
  // each slot's verify. Each returns whether its time measures drafting alone (no catch-up of history), the
  // time DraftWithModel charges per drafted token.
  bool DraftWithDraftModels(const std::vector<std::pair<Slot*, int>>& asks);
  bool DraftWithSkippedLayers(const std::vector<std::pair<Slot*, int>>& asks);
  // Each slot's draft (requests[i].draft, of asks[i]) appended to its verify rows; next, pushed on its cached
  // tokens as the history the drafter continued, popped.
  template <class Requests>
  void AppendDrafts(const std::vector<std::pair<Slot*, int>>& asks, const Requests& requests);
  // The prompt tokens a prefilling slot evaluates next (after dropping the part of its cache the prompt does
  // not share, on its first chunk): at most `limit`.
  int PrefillChunk(Slot& s, int limit);
  // After the pass evaluated a slot's n tokens: the cache's token list, and the end of its prefill.
  void Evaluated(Slot& s, int n);
  void Finish(Slot& s, const std::string& reason, const Status& error = Status::Ok());

  // Samples the next token of a job with a grammar: the logits of the tokens that would break the JSON (and
  // of end-of-generation until it is complete) are masked. -1: no token may follow (see Step).
  int32_t SampleConstrained(Slot& s, int row);

  const tok::Tokenizer& tk_;
  const llm::TokenBytes vocab_bytes_;  // every token's bytes, for the response_format mask
  const int n_batch_;
  const size_t queue_limit_;
  const SpecOptions spec_;
  std::vector<std::unique_ptr<Slot>> slots_;
  size_t next_prefill_ = 0;  // the slot whose prefill goes first in the next step (round-robin)

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool accepting_ = true, stop_ = false;
  int busy_ = 0;
  SchedulerStats totals_;  // token counters (guarded by mu_)
  std::vector<int> kv_used_;  // n_past of each slot, published after each step (guarded by mu_)
  int draft_paused_ = 0;      // busy slots with drafting paused, published after each step (guarded by mu_)
  // The measured costs of drafting (scheduler thread only): seconds of a step by the rows of its pass (the
  // draft model's time left out), and the draft model's seconds per drafted token (0: not measured yet).
  llm::PassTimes step_times_;
  int64_t steps_ = 0;
  int last_rows_ = 0;        // the rows of the last step's pass (0: none to record) ...
  double last_pass_s_ = 0;   // ... and its seconds, the sampling of its rows not yet counted
  double draft_token_s_ = 0;
  std::thread thread_;
};

}  // namespace edgedecode::cli::serve
