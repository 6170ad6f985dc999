#include "base/thread_pool.h"

#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
static inline void CpuRelax() { _mm_pause(); }
#elif defined(__aarch64__)
static inline void CpuRelax() { asm volatile("yield"); }
#else
static inline void CpuRelax() {}
#endif

namespace edgedecode {

uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

namespace {
// Spins before a worker goes to sleep: long enough that the next job of a decode step (issued right after
// the last) finds the workers awake, short enough that an idle pool soon stops using CPU (thread_pool.h).
constexpr int kSpinIterations = 20000;
}

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads < 1 ? 1 : n_threads), slots_(static_cast<size_t>(n_threads_)), chunks_(slots_.size()) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::RunChunk(int thread) {
  int64_t blocks = (n_ + grain_ - 1) / grain_;
  int64_t per = blocks / n_threads_, extra = blocks % n_threads_;
  int64_t b0 = thread * per + (thread < extra ? thread : extra);
  int64_t b1 = b0 + per + (thread < extra ? 1 : 0);
  int64_t begin = b0 * grain_, end = b1 * grain_ < n_ ? b1 * grain_ : n_;
  if (observer_ == nullptr) {
    if (begin < end) (*fn_)(begin, end, thread);
    return;
  }
  JobTiming::Chunk& c = slots_[static_cast<size_t>(thread)].c;
  c.start = NowNs();
  if (begin < end) (*fn_)(begin, end, thread);
  c.end = begin < end ? NowNs() : c.start;
}

void ThreadPool::Report(uint64_t begin) {
  JobTiming t;
  t.begin = begin;
  t.end = NowNs();
  for (size_t i = 0; i < slots_.size(); ++i) chunks_[i] = slots_[i].c;
  t.chunks = chunks_.data();
  t.n_threads = n_threads_;
  observer_->OnJob(t);
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain, const RangeFn& fn) {
  if (n <= 0) return;
  fn_ = &fn;
  n_ = n;
  grain_ = grain < 1 ? 1 : grain;
  const uint64_t t_begin = observer_ != nullptr ? NowNs() : 0;
  if (n_threads_ == 1) {
    RunChunk(0);
    if (observer_ != nullptr) Report(t_begin);
    return;
  }
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  if (sleepers_.load(std::memory_order_acquire) > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  RunChunk(0);
  while (pending_.load(std::memory_order_acquire) != 0) CpuRelax();
  if (observer_ != nullptr) Report(t_begin);
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < kSpinIterations; ++spin) {
      CpuRelax();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      sleepers_.fetch_sub(1);
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load()) return;
    RunChunk(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace edgedecode
