// Per-op profile of the forward pass (`run --profile`, `bench --profile`, `--trace FILE.json`).
//
// What is measured, per op kind and per phase (prefill: passes of more than one token; decode: one):
//  - wall time on the owner thread from the op's start to its end (it includes the owner's barrier wait);
//  - bytes moved: what the op must read and write, from the tensor shapes and types (weights, KV cache
//    rows, activations), each counted once per call. GB/s is those bytes over the wall time: for decode
//    matmuls that is the DRAM rate; for batched matmuls and prefill attention, whose operands come back
//    from cache, it is an effective rate, not DRAM traffic;
//  - barrier wait: for each parallel region, each thread's time from the end of its own chunk to the end
//    of the region (load imbalance and the join), summed over threads; wake-up: from the region's start
//    to a worker's first instruction on it;
//  - the kernel that ran.
// A trace keeps every op span (thread 0), every worker chunk and every barrier wait, in Chrome's trace
// event format (opens in Perfetto and chrome://tracing).
//
// Cost: nothing when no profiler is attached (the Context tests one pointer per op and reads no clock;
// the pool tests one pointer per job). Attached, about two clock reads per op and two per thread per job.
//
// Thread-safety: every method runs on the Context's owner thread. Worker threads only stamp their own
// cache-line slot in the pool (ThreadPool::SetObserver); OnJob gathers them after the join. No locks.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/thread_pool.h"
#include "edgedecode/status.h"

namespace edgedecode::llm {

// Op kinds of the forward pass. Fused ops have their own kinds, so a profile says which path ran.
enum class Op : uint8_t {
  kEmbed,
  kAttnNorm, kAttnNormQuant,
  kQuantize,                      // activation quantization of a matmul input (unless folded into a norm)
  kWq, kWk, kWv, kWqkv,
  kRope, kKvWrite, kRopeKvWrite,
  kAttention,
  kWo,
  kResidual,
  kFfnNorm, kFfnNormQuant,
  kGate, kUp, kSiluMul, kGateUpSilu,
  kDown,
  kOutputNorm, kOutputNormQuant,
  kOutput,
  kConvInProj, kShortConv, kConvOutProj,  // lfm2's short-convolution layers: in_proj, the gated conv, out_proj
  kCount
};
const char* OpName(Op op);

class Profiler : public JobObserver {
 public:
  enum Phase { kPrefill, kDecode, kPhases };

  // trace: keep events for WriteTrace (at most max_events; later ones are counted, not kept).
  Profiler(int n_threads, bool trace, size_t max_events = size_t{1} << 21);

  // Kernel description of an op (set once, when the profiler is attached to a context).
  void SetKernel(Op op, std::string kernel) { kernel_[static_cast<int>(op)] = std::move(kernel); }

  // One forward pass over m tokens.
  void BeginPass(int m);
  void EndPass();
  // One op; returns the start time to give End.
  uint64_t Begin(Op op) {
    cur_ = op;
    return NowNs();
  }
  void End(Op op, uint64_t t0, uint64_t bytes);
  void OnJob(const JobTiming& t) override;  // from the pool: attributed to the op in progress

  // Forgets what was measured (bench: after the warm-up run). Kernels and the time origin stay.
  void Reset();

  // The tables (one per phase that ran) as text.
  std::string FormatTable() const;
  // {"prefill": {...}, "decode": {...}}: per op name, calls, ms, bytes, gb_s, barrier_ms, kernel.
  nlohmann::json ToJson() const;
  // One trace file of one or more profiles (bench: one per test), each a process labelled by its name.
  static Status WriteTrace(const std::string& path, const std::vector<std::pair<std::string, const Profiler*>>& profiles);

  // Totals, for tests and callers: forward-pass wall time and the sum of the op times of a phase.
  double pass_ms(Phase p) const { return static_cast<double>(phase_[p].pass_ns) * 1e-6; }
  double op_ms(Phase p) const;

 private:
  struct OpStats {
    uint64_t ns = 0, calls = 0, bytes = 0;
    uint64_t barrier_ns = 0;  // summed over threads
    uint64_t wake_ns = 0;     // summed over workers
    uint64_t jobs = 0;        // parallel regions
  };
  struct ThreadStats {
    uint64_t busy_ns = 0, barrier_ns = 0, wake_ns = 0;
  };
  struct PhaseStats {
    OpStats ops[static_cast<int>(Op::kCount)];
    std::vector<ThreadStats> threads;
    uint64_t passes = 0, tokens = 0, pass_ns = 0;
  };
  enum EventKind : uint8_t { kOpSpan, kChunk, kBarrier, kPass };
  struct Event {
    uint64_t ts, dur;
    int32_t arg;  // kPass: tokens
    uint16_t tid;
    uint8_t op, kind;
  };
  void Add(const Event& e) {
    if (events_.size() < max_events_) events_.push_back(e);
    else ++dropped_;
  }

  int n_threads_;
  bool trace_;
  size_t max_events_;
  Phase phase_now_ = kDecode;
  Op cur_ = Op::kCount;  // the op in progress (kCount: none)
  uint64_t pass_t0_ = 0;
  int pass_m_ = 0;
  PhaseStats phase_[kPhases];
  std::string kernel_[static_cast<int>(Op::kCount)];
  std::vector<Event> events_;
  uint64_t dropped_ = 0;
};

}  // namespace edgedecode::llm
