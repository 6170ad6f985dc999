// Memory read bandwidth, measured: T threads each sum their slice of one shared buffer; the best of
// `reps` runs counts. Short and bounded (buffer size x reps x thread counts). Header-only so the
// runtime's bench can reuse it. Thread-safe: every call owns its buffer and threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace edgedecode::bench {

struct BandwidthPoint {
  int threads = 1;
  double gb_per_s = 0;  // 1e9 bytes per second, best of the runs
};

namespace detail {
inline uint64_t SumSlice(const uint64_t* p, size_t n) {
  // Four independent accumulators so the loop is bound by loads, not by the add chain.
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) { a += p[i]; b += p[i + 1]; c += p[i + 2]; d += p[i + 3]; }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}
}  // namespace detail

// Reads `bytes` (rounded to 8) with `threads` threads, `reps` times; returns the best GB/s. Each rep
// reads the buffer `passes` times (keep bytes well above the last-level cache then): a rep of a few
// milliseconds is at the mercy of one scheduler hiccup on a shared machine, and measured 20-40% low
// against the bytes a decode step demonstrably streams.
inline double MeasureReadBandwidth(int threads, size_t bytes, int reps = 3, int passes = 1) {
  threads = std::max(1, threads);
  const size_t words = std::max<size_t>(bytes / 8, static_cast<size_t>(threads) * 64);
  std::unique_ptr<uint64_t[]> buf(new uint64_t[words]);
  for (size_t i = 0; i < words; ++i) buf[i] = i;  // fault every page in before timing
  double best = 0;
  std::atomic<uint64_t> sink{0};
  for (int r = 0; r < reps; ++r) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    const size_t per = words / threads;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        const size_t n = t == threads - 1 ? words - per * t : per;
        uint64_t acc = 0;
        for (int p = 0; p < passes; ++p) acc += detail::SumSlice(buf.get() + per * t, n);
        sink.fetch_add(acc, std::memory_order_relaxed);
      });
    }
    while (ready.load() < threads) std::this_thread::yield();
    auto t0 = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    for (auto& th : pool) th.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, static_cast<double>(words) * 8 * std::max(1, passes) / s / 1e9);
  }
  if (sink.load() == 42) best += 0;  // keep the sums observable
  return best;
}

// 1..max_threads (powers of two plus max_threads itself, to stay short on many-core machines).
inline std::vector<BandwidthPoint> MeasureReadBandwidthCurve(int max_threads, size_t bytes, int reps = 3,
                                                             int passes = 1) {
  std::vector<int> counts;
  for (int t = 1; t < max_threads; t *= 2) counts.push_back(t);
  counts.push_back(std::max(1, max_threads));
  std::vector<BandwidthPoint> out;
  for (int t : counts) out.push_back({t, MeasureReadBandwidth(t, bytes, reps, passes)});
  return out;
}

}  // namespace edgedecode::bench
