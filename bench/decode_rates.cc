// Microbenchmark (not a test): decode GB/s of several models alternating in one process, for comparing
// shapes on a shared machine whose memory bandwidth moves from minute to minute (bench's roofline compares
// one model with a probe; the probe's buffer is not the model's memory). Each model is loaded and
// repacked once; every round then decodes `tokens` tokens of each model in turn, and beside each run reads
// a huge-page buffer as large as that model's streamed bytes (best of 3 reads, 2 threads, AVX-512 where
// the CPU has it) and bench's probe (256 MiB) once per round.
// Only runs during which the rest of the machine stayed idle count (system busy CPU time minus this
// process's, from /proc/stat, under 5% of the run's cores x seconds): a neighbour on one of the cores
// stretches every barrier of a 2-thread decode and measures the neighbour, not the memory.
// Usage: decode_rates THREADS ROUNDS TOKENS MODEL.gguf...   (round 0 warms up and is not counted)
#include <sys/mman.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "doctor/bandwidth.h"
#include "llm/context.h"
#include "llm/memory_plan.h"
#include "llm/model.h"

using namespace edgedecode;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Non-idle CPU seconds of the whole machine (user, nice, system, irq, softirq).
double MachineBusySeconds() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  long v[7] = {};
  f >> cpu;
  for (long& x : v) f >> x;
  return static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6]) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// A buffer in huge pages (as the model's arena), faulted in.
uint8_t* HugeBuffer(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) std::abort();
  madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 1, bytes);
  return static_cast<uint8_t*>(p);
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) uint64_t SumRange512(const uint8_t* p, size_t n) {
  __m512i a = _mm512_set1_epi64(0), b = a;
  for (size_t i = 0; i + 128 <= n; i += 128) {
    a = _mm512_add_epi64(a, _mm512_loadu_si512(p + i));
    b = _mm512_add_epi64(b, _mm512_loadu_si512(p + i + 64));
  }
  uint64_t lanes[8];
  _mm512_storeu_si512(lanes, _mm512_add_epi64(a, b));
  uint64_t sum = 0;
  for (uint64_t x : lanes) sum += x;
  return sum;
}
#endif

uint64_t SumRange(const uint8_t* p, size_t n) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return SumRange512(p, n);
#endif
  return bench::detail::SumSlice(reinterpret_cast<const uint64_t*>(p), n / 8);
}

// GB/s of `threads` threads reading their slices of buf once.
double ReadRate(const uint8_t* buf, size_t bytes, int threads) {
  std::vector<std::thread> pool;
  std::vector<uint64_t> sink(static_cast<size_t>(threads));
  const size_t per = bytes / static_cast<size_t>(threads) / 128 * 128;
  const double t0 = Now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { sink[static_cast<size_t>(t)] = SumRange(buf + per * static_cast<size_t>(t), per); });
  for (std::thread& th : pool) th.join();
  const double s = Now() - t0;
  volatile uint64_t keep = sink[0];
  (void)keep;
  return static_cast<double>(per) * threads / s / 1e9;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Run {
  std::string name;
  std::unique_ptr<llm::Model> model;
  std::unique_ptr<llm::Context> ctx;
  double bytes = 0;  // streamed per decode step: bench's roofline count (llm::DecodeStepBytes) at depth 0
  uint8_t* buf = nullptr;
  std::vector<double> gbs, buf_gbs, probe;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: decode_rates THREADS ROUNDS TOKENS MODEL.gguf...\n");
    return 2;
  }
  const int threads = std::atoi(argv[1]), rounds = std::atoi(argv[2]), tokens = std::atoi(argv[3]);
  auto isa = kernels::ResolveIsa("auto");
  if (!isa.ok() || threads < 1 || rounds < 2 || tokens < 1) return 2;
  std::vector<Run> runs;
  for (int i = 4; i < argc; ++i) {
    Run r;
    r.name = argv[i];
    r.name = r.name.substr(r.name.rfind('/') + 1);
    auto m = llm::Model::Load(argv[i], false);
    if (!m.ok()) {
      std::fprintf(stderr, "%s: %s\n", argv[i], m.status().message().c_str());
      return 1;
    }
    r.model = std::move(*m);
    r.model->RepackForKernels(*isa);
    r.bytes = llm::DecodeStepBytes(*r.model, 0, GgmlType::kF16);
    llm::ContextParams cp;
    cp.n_threads = threads;
    cp.isa = *isa;
    cp.n_ctx = tokens + 8;
    cp.n_batch = 8;
    auto c = llm::Context::Create(*r.model, cp);
    if (!c.ok()) return 1;
    r.ctx = std::move(*c);
    r.buf = HugeBuffer(static_cast<size_t>(r.bytes) / 4096 * 4096);
    runs.push_back(std::move(r));
  }
  for (int round = 0; round < rounds; ++round) {
    const double probe = bench::MeasureReadBandwidth(threads, size_t{256} << 20, 3, 4);
    std::printf("round %d: probe %.1f GB/s", round, probe);
    for (Run& r : runs) {
      double buf = 0;
      for (int k = 0; k < 3; ++k) buf = std::max(buf, ReadRate(r.buf, static_cast<size_t>(r.bytes) / 4096 * 4096, threads));
      r.ctx->Reset();
      const double busy0 = MachineBusySeconds(), cpu0 = ProcessCpuSeconds(), t0 = Now();
      for (int i = 0; i < tokens; ++i) {
        const int32_t tok = 100 + 7 * i;
        if (!r.ctx->Eval(&tok, 1, false).ok()) return 1;
      }
      const double s = Now() - t0;
      const double foreign = (MachineBusySeconds() - busy0) - (ProcessCpuSeconds() - cpu0);
      const bool quiet = foreign < 0.05 * s * threads;
      const double gbs = r.bytes * tokens / s / 1e9;
      if (round > 0 && quiet) {
        r.gbs.push_back(gbs);
        r.buf_gbs.push_back(buf);
        r.probe.push_back(probe);
      }
      std::printf(" | %s %.2f t/s %.1f GB/s (buffer %.1f%s)", r.name.c_str(), tokens / s, gbs, buf, quiet ? "" : ", busy machine");
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  std::printf("\n| model | quiet runs | bytes/token MB | decode GB/s median (max) | buffer GB/s median | decode / buffer | decode / probe |\n|---|---|---|---|---|---|---|\n");
  for (const Run& r : runs) {
    if (r.gbs.empty()) {
      std::printf("| %s | 0 | %.1f | | | | |\n", r.name.c_str(), r.bytes / 1e6);
      continue;
    }
    std::vector<double> to_buf, to_probe;
    for (size_t i = 0; i < r.gbs.size(); ++i) {
      to_buf.push_back(r.gbs[i] / r.buf_gbs[i]);
      to_probe.push_back(r.gbs[i] / r.probe[i]);
    }
    std::printf("| %s | %zu | %.1f | %.1f (%.1f) | %.1f | %.2f | %.2f |\n", r.name.c_str(), r.gbs.size(), r.bytes / 1e6, Median(r.gbs),
                *std::max_element(r.gbs.begin(), r.gbs.end()), Median(r.buf_gbs), Median(to_buf), Median(to_probe));
  }
  return 0;
}
