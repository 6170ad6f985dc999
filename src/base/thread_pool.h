// A persistent pool of worker threads for data-parallel loops (split by rows).
// Workers spin briefly after each job, then sleep, so back-to-back jobs (one per matmul in decode)
// do not pay a wake-up each time, and an idle pool costs no CPU.
//
// Thread-safety: ParallelFor must be called from one thread at a time (the owner). fn is called
// concurrently from size() threads, on disjoint ranges.
//
// Profiling: with an observer set, each thread stamps the start and end of its chunk into its own
// cache line and the owner hands the job's timing to the observer after the job (no locks, no
// allocation). Without one, no clock is read.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace edgedecode {

// Monotonic clock in nanoseconds (steady_clock; a vDSO read of the TSC on Linux x86).
uint64_t NowNs();

// Timing of one ParallelFor: begin/end as the owner saw them, and each thread's chunk.
struct JobTiming {
  struct Chunk {
    uint64_t start = 0, end = 0;  // start == end: the thread had no work in this job
  };
  uint64_t begin = 0, end = 0;
  const Chunk* chunks = nullptr;  // size() entries, valid during OnJob only
  int n_threads = 0;
};

class JobObserver {
 public:
  virtual ~JobObserver() = default;
  // Called on the owner thread after each ParallelFor, while the observer is set.
  virtual void OnJob(const JobTiming& t) = 0;
};

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

  // Profiling hook (nullptr: off). Set from the owner thread between jobs; the observer must outlive
  // its use.
  void SetObserver(JobObserver* o) { observer_ = o; }
  JobObserver* observer() const { return observer_; }

 private:
  void WorkerLoop(int index);
  void RunChunk(int thread);
  void Report(uint64_t begin);  // hands the finished job's timing to observer_

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
  // Read by the workers only after they acquire a new generation, written by the owner only between
  // jobs: ordered by generation_ / pending_, no atomics needed.
  JobObserver* observer_ = nullptr;
  struct alignas(64) Slot {
    JobTiming::Chunk c;
  };
  std::vector<Slot> slots_;  // one per thread, its own cache line
  std::vector<JobTiming::Chunk> chunks_;  // gathered for OnJob
};

}  // namespace edgedecode
