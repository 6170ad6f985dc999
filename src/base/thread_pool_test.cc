#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace edgedecode {
namespace {

TEST(ThreadPool, CoversEveryIndexOnceForAnySize) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 64, 1000, 4097}) {
      for (int64_t grain : {1, 4, 32}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.ParallelFor(n, grain, [&](int64_t b, int64_t e, int) {
          EXPECT_EQ(b % grain, 0);
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << threads << " " << n;
      }
    }
  }
}

TEST(ThreadPool, ManyBackToBackJobs) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  for (int j = 0; j < 20000; ++j) {
    pool.ParallelFor(10, 1, [&](int64_t b, int64_t e, int) { sum += e - b; });
  }
  EXPECT_EQ(sum.load(), 200000);
}

// The profiling hook: one report per job, every thread's chunk inside the job's span, threads with
// no work marked empty; and no report once the observer is removed.
TEST(ThreadPool, ObserverSeesEveryJobAndChunk) {
  struct Recorder : JobObserver {
    int jobs = 0, bad = 0, empty = 0;
    void OnJob(const JobTiming& t) override {
      ++jobs;
      if (t.n_threads != 3 || t.end < t.begin) ++bad;
      for (int i = 0; i < t.n_threads; ++i) {
        const JobTiming::Chunk& c = t.chunks[i];
        if (c.start < t.begin || c.end > t.end || c.end < c.start) ++bad;
        if (c.start == c.end) ++empty;
      }
    }
  } rec;
  ThreadPool pool(3);
  pool.SetObserver(&rec);
  for (int j = 0; j < 100; ++j) pool.ParallelFor(300, 1, [](int64_t, int64_t, int) {});
  pool.ParallelFor(1, 1, [](int64_t, int64_t, int) {});  // two threads idle
  pool.SetObserver(nullptr);
  pool.ParallelFor(300, 1, [](int64_t, int64_t, int) {});
  EXPECT_EQ(rec.jobs, 101);
  EXPECT_EQ(rec.bad, 0);
  EXPECT_GE(rec.empty, 2);
}

}  // namespace
}  // namespace edgedecode
