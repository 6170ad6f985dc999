#include "llm/profiler.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace edgedecode::llm {

const char* OpName(Op op) {
  switch (op) {
    case Op::kEmbed: return "embed";
    case Op::kAttnNorm: return "attn_norm";
    case Op::kAttnNormQuant: return "attn_norm+quantize";
    case Op::kQuantize: return "quantize";
    case Op::kWq: return "wq";
    case Op::kWk: return "wk";
    case Op::kWv: return "wv";
    case Op::kWqkv: return "wqkv";
    case Op::kRope: return "rope";
    case Op::kKvWrite: return "kv_write";
    case Op::kRopeKvWrite: return "rope+kv_write";
    case Op::kAttention: return "attention";
    case Op::kWo: return "wo";
    case Op::kResidual: return "residual";
    case Op::kFfnNorm: return "ffn_norm";
    case Op::kFfnNormQuant: return "ffn_norm+quantize";
    case Op::kGate: return "gate";
    case Op::kUp: return "up";
    case Op::kSiluMul: return "silu*mul";
    case Op::kGateUpSilu: return "gate_up+silu*mul";
    case Op::kDown: return "down";
    case Op::kOutputNorm: return "output_norm";
    case Op::kOutputNormQuant: return "output_norm+quantize";
    case Op::kOutput: return "output";
    case Op::kConvInProj: return "conv_in_proj";
    case Op::kShortConv: return "shortconv";
    case Op::kConvOutProj: return "conv_out_proj";
    case Op::kCount: break;
  }
  return "?";
}

namespace {
constexpr const char* kPhaseName[] = {"prefill", "decode"};
double Ms(uint64_t ns) { return static_cast<double>(ns) * 1e-6; }
}  // namespace

Profiler::Profiler(int n_threads, bool trace, size_t max_events)
    : n_threads_(n_threads), trace_(trace), max_events_(max_events) {
  for (PhaseStats& p : phase_) p.threads.resize(static_cast<size_t>(n_threads));
  if (trace_) events_.reserve(std::min<size_t>(max_events_, size_t{1} << 16));
}

void Profiler::Reset() {
  for (PhaseStats& p : phase_) {
    p = PhaseStats();
    p.threads.resize(static_cast<size_t>(n_threads_));
  }
  events_.clear();
  dropped_ = 0;
}

void Profiler::BeginPass(int m) {
  phase_now_ = m > 1 ? kPrefill : kDecode;
  pass_m_ = m;
  pass_t0_ = NowNs();
}

void Profiler::EndPass() {
  const uint64_t t1 = NowNs();
  PhaseStats& p = phase_[phase_now_];
  p.passes += 1;
  p.tokens += static_cast<uint64_t>(pass_m_);
  p.pass_ns += t1 - pass_t0_;
  if (trace_) Add({pass_t0_, t1 - pass_t0_, pass_m_, 0, 0, kPass});
}

void Profiler::End(Op op, uint64_t t0, uint64_t bytes) {
  const uint64_t t1 = NowNs();
  OpStats& s = phase_[phase_now_].ops[static_cast<int>(op)];
  s.ns += t1 - t0;
  s.calls += 1;
  s.bytes += bytes;
  cur_ = Op::kCount;
  if (trace_) Add({t0, t1 - t0, 0, 0, static_cast<uint8_t>(op), kOpSpan});
}

void Profiler::OnJob(const JobTiming& t) {
  PhaseStats& p = phase_[phase_now_];
  OpStats* s = cur_ == Op::kCount ? nullptr : &p.ops[static_cast<int>(cur_)];
  if (s != nullptr) s->jobs += 1;
  for (int i = 0; i < t.n_threads && i < n_threads_; ++i) {
    const JobTiming::Chunk& c = t.chunks[i];
    ThreadStats& ts = p.threads[static_cast<size_t>(i)];
    // A thread without work waited for the whole region (from when it saw the job).
    const uint64_t wake = c.start > t.begin ? c.start - t.begin : 0;
    const uint64_t busy = c.end - c.start;
    const uint64_t barrier = t.end > c.end ? t.end - c.end : 0;
    ts.busy_ns += busy;
    ts.barrier_ns += barrier;
    if (i > 0) ts.wake_ns += wake;
    if (s != nullptr) {
      s->barrier_ns += barrier;
      if (i > 0) s->wake_ns += wake;
    }
    if (trace_) {
      const uint8_t op = static_cast<uint8_t>(cur_);
      // Thread 0's own chunk lies inside its op span; the workers' chunks are their only record.
      if (i > 0 && busy > 0) Add({c.start, busy, 0, static_cast<uint16_t>(i), op, kChunk});
      if (barrier > 0) Add({c.end, barrier, 0, static_cast<uint16_t>(i), op, kBarrier});
    }
  }
}

double Profiler::op_ms(Phase ph) const {
  uint64_t ns = 0;
  for (const OpStats& s : phase_[ph].ops) ns += s.ns;
  return Ms(ns);
}

std::string Profiler::FormatTable() const {
  char* buf = nullptr;
  size_t len = 0;
  FILE* out = open_memstream(&buf, &len);  // the tables are printf-formatted; the caller decides where they go
  if (out == nullptr) return "";
  for (int ph = 0; ph < kPhases; ++ph) {
    const PhaseStats& p = phase_[ph];
    if (p.passes == 0) continue;
    const double total = Ms(p.pass_ns);
    std::fprintf(out, "\nprofile: %s, %llu passes, %llu tokens, %.1f ms in the forward pass (%.1f tok/s), %d threads\n",
                 kPhaseName[ph], static_cast<unsigned long long>(p.passes), static_cast<unsigned long long>(p.tokens), total,
                 total > 0 ? static_cast<double>(p.tokens) / (total * 1e-3) : 0.0, n_threads_);
    std::fprintf(out, "| %-20s | %6s | %9s | %5s | %10s | %6s | %10s | %s\n", "op", "calls", "ms", "%", "MB moved", "GB/s",
                 "barrier ms", "kernel");
    std::fprintf(out, "|%s|%s|%s|%s|%s|%s|%s|---\n", std::string(22, '-').c_str(), std::string(8, '-').c_str(),
                 std::string(11, '-').c_str(), std::string(7, '-').c_str(), std::string(12, '-').c_str(),
                 std::string(8, '-').c_str(), std::string(12, '-').c_str());
    uint64_t sum_ns = 0, sum_bar = 0;
    for (int o = 0; o < static_cast<int>(Op::kCount); ++o) {
      const OpStats& s = p.ops[o];
      if (s.calls == 0) continue;
      sum_ns += s.ns;
      sum_bar += s.barrier_ns;
      const double ms = Ms(s.ns);
      std::fprintf(out, "| %-20s | %6llu | %9.2f | %5.1f | %10.2f | %6.1f | %10.2f | %s\n", OpName(static_cast<Op>(o)),
                   static_cast<unsigned long long>(s.calls), ms, total > 0 ? 100 * ms / total : 0.0,
                   static_cast<double>(s.bytes) / 1e6, ms > 0 ? static_cast<double>(s.bytes) / (ms * 1e6) : 0.0,
                   Ms(s.barrier_ns) / n_threads_, kernel_[o].c_str());
    }
    std::fprintf(out, "| %-20s | %6s | %9.2f | %5.1f | %10s | %6s | %10.2f | forward pass %.2f ms\n", "sum of ops", "",
                 Ms(sum_ns), total > 0 ? 100 * Ms(sum_ns) / total : 0.0, "", "", Ms(sum_bar) / n_threads_, total);
    std::fprintf(out, "barrier ms: per thread, averaged over the %d threads. threads:", n_threads_);
    for (size_t i = 0; i < p.threads.size(); ++i) {
      const ThreadStats& t = p.threads[i];
      std::fprintf(out, " [%zu] busy %.1f ms, barrier %.1f ms", i, Ms(t.busy_ns), Ms(t.barrier_ns));
      if (i > 0) std::fprintf(out, ", wake-up %.1f ms", Ms(t.wake_ns));
    }
    std::fprintf(out, "\n");
  }
  if (dropped_ > 0)
    std::fprintf(out, "profile: trace full, %llu events not kept\n", static_cast<unsigned long long>(dropped_));
  std::fclose(out);
  std::string text(buf, len);
  std::free(buf);
  return text;
}

nlohmann::json Profiler::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (int ph = 0; ph < kPhases; ++ph) {
    const PhaseStats& p = phase_[ph];
    if (p.passes == 0) continue;
    nlohmann::json ops = nlohmann::json::array();
    for (int o = 0; o < static_cast<int>(Op::kCount); ++o) {
      const OpStats& s = p.ops[o];
      if (s.calls == 0) continue;
      const double ms = Ms(s.ns);
      ops.push_back({{"op", OpName(static_cast<Op>(o))}, {"calls", s.calls}, {"ms", ms}, {"bytes", s.bytes},
                     {"gb_s", ms > 0 ? static_cast<double>(s.bytes) / (ms * 1e6) : 0.0},
                     {"barrier_ms", Ms(s.barrier_ns) / n_threads_}, {"wake_ms", Ms(s.wake_ns) / n_threads_},
                     {"parallel_regions", s.jobs}, {"kernel", kernel_[o]}});
    }
    nlohmann::json threads = nlohmann::json::array();
    for (const ThreadStats& t : p.threads)
      threads.push_back({{"busy_ms", Ms(t.busy_ns)}, {"barrier_ms", Ms(t.barrier_ns)}, {"wake_ms", Ms(t.wake_ns)}});
    j[kPhaseName[ph]] = {{"passes", p.passes}, {"tokens", p.tokens}, {"forward_ms", Ms(p.pass_ns)},
                         {"ops_ms", op_ms(static_cast<Phase>(ph))}, {"ops", ops}, {"threads", threads}};
  }
  return j;
}

Status Profiler::WriteTrace(const std::string& path,
                            const std::vector<std::pair<std::string, const Profiler*>>& profiles) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return IoError(path + ": cannot write the trace: " + std::strerror(errno));
  // Times in microseconds from the first event of all the profiles.
  uint64_t origin = UINT64_MAX, dropped = 0;
  for (const auto& [name, p] : profiles) {
    for (const Event& e : p->events_) origin = std::min(origin, e.ts);
    dropped += p->dropped_;
  }
  std::fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"dropped_events\":%llu},\"traceEvents\":[\n",
               static_cast<unsigned long long>(dropped));
  bool first = true;
  auto sep = [&] {
    std::fputs(first ? "" : ",\n", f);
    first = false;
  };
  int pid = 0;
  for (const auto& [name, p] : profiles) {
    ++pid;
    nlohmann::json label = name;  // escaped as JSON
    sep();
    std::fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":%s}}", pid,
                 label.dump().c_str());
    for (int i = 0; i < p->n_threads_; ++i) {
      sep();
      std::fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s %d\"}}", pid, i,
                   i == 0 ? "main thread" : "worker", i);
    }
    for (const Event& e : p->events_) {
      const double ts = static_cast<double>(e.ts - origin) * 1e-3, dur = static_cast<double>(e.dur) * 1e-3;
      const char* op = e.op < static_cast<uint8_t>(Op::kCount) ? OpName(static_cast<Op>(e.op)) : "(outside ops)";
      sep();
      switch (e.kind) {
        case kPass:
          std::fprintf(f, "{\"name\":\"%s\",\"cat\":\"pass\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":0,"
                       "\"args\":{\"tokens\":%d}}", e.arg > 1 ? "prefill pass" : "decode pass", ts, dur, pid, e.arg);
          break;
        case kOpSpan:
        case kChunk:
          std::fprintf(f, "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d}", op,
                       e.kind == kOpSpan ? "op" : "work", ts, dur, pid, e.tid);
          break;
        default:
          std::fprintf(f, "{\"name\":\"barrier\",\"cat\":\"barrier\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,"
                       "\"tid\":%d,\"args\":{\"op\":\"%s\"}}", ts, dur, pid, e.tid, op);
          break;
      }
    }
  }
  std::fprintf(f, "\n]}\n");
  if (std::fclose(f) != 0) return IoError(path + ": error writing the trace");
  return Status::Ok();
}

}  // namespace edgedecode::llm
