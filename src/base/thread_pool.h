// A persistent pool of worker threads for data-parallel loops (split by rows).
// Workers spin briefly after each job, then sleep, so back-to-back jobs (one per matmul in decode)
// do not pay a wake-up each time, and an idle pool costs no CPU.
//
// Thread-safety: ParallelFor must be called from one thread at a time (the owner). fn is called
// concurrently from size() threads, on disjoint ranges.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace edgedecode {

class ThreadPool {
 public:
  // n_threads includes the calling thread; 1 means no workers.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  using RangeFn = std::function<void(int64_t begin, int64_t end, int thread)>;
  // Splits [0, n) into size() contiguous chunks whose boundaries are multiples of `grain`
  // (so the split, and hence every result, is the same function of n for a given pool size),
  // runs them in parallel and returns when all are done.
  void ParallelFor(int64_t n, int64_t grain, const RangeFn& fn);

  // Nanoseconds the calling thread spent waiting for workers (profiling: barrier time).
  uint64_t wait_ns() const { return wait_ns_; }

 private:
  void WorkerLoop(int index);
  void RunChunk(int thread);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> sleepers_{0};
  // The current job (written by the owner before bumping generation_).
  const RangeFn* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t grain_ = 1;
  uint64_t wait_ns_ = 0;
};

}  // namespace edgedecode
