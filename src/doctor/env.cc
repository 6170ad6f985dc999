#include "doctor/env.h"

#include <sched.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <nlohmann/json.hpp>

#include "doctor/hash.h"
#include "doctor/oci.h"
#include "gguf/gguf.h"

namespace edgedecode::doctor {
namespace fs = std::filesystem;

namespace {

std::string ReadText(const std::string& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  while (!s.empty() && (s[0] == ' ' || s[0] == '\t')) s.erase(0, 1);
  return s;
}

#if defined(__x86_64__) || defined(__i386__)
void X86Features(std::vector<std::string>* f) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  const bool osxsave = c >> 27 & 1;
  uint64_t xcr0 = 0;
  if (osxsave) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (uint64_t{hi} << 32) | lo;
  }
  const bool os_ymm = (xcr0 & 0x6) == 0x6, os_zmm = (xcr0 & 0xE6) == 0xE6, os_amx = (xcr0 & 0x60000) == 0x60000;
  if (d >> 26 & 1) f->push_back("sse2");
  if (c >> 19 & 1) f->push_back("sse4.1");
  if ((c >> 28 & 1) && os_ymm) f->push_back("avx");
  if ((c >> 12 & 1) && os_ymm) f->push_back("fma");
  if (c >> 29 & 1) f->push_back("f16c");
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
  if ((b >> 5 & 1) && os_ymm) f->push_back("avx2");
  if (os_zmm) {
    if (b >> 16 & 1) f->push_back("avx512f");
    if (b >> 30 & 1) f->push_back("avx512bw");
    if (b >> 31 & 1) f->push_back("avx512vl");
    if (c >> 11 & 1) f->push_back("avx512_vnni");
  }
  if (os_amx) {
    if (d >> 24 & 1) f->push_back("amx_tile");
    if (d >> 25 & 1) f->push_back("amx_int8");
    if (d >> 22 & 1) f->push_back("amx_bf16");
  }
  unsigned a1, b1, c1, d1;
  if (__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1)) {
    if ((a1 >> 4 & 1) && os_ymm) f->push_back("avx_vnni");
    if ((a1 >> 5 & 1) && os_zmm) f->push_back("avx512_bf16");
  }
}
#endif

#if defined(__aarch64__)
void ArmFeatures(std::vector<std::string>* f) {
  unsigned long h = getauxval(AT_HWCAP), h2 = getauxval(AT_HWCAP2);
  if (h & (1UL << 1)) f->push_back("neon");       // HWCAP_ASIMD
  if (h & (1UL << 20)) f->push_back("dotprod");   // HWCAP_ASIMDDP
  if (h & (1UL << 22)) f->push_back("sve");       // HWCAP_SVE
  if (h2 & (1UL << 13)) f->push_back("i8mm");     // HWCAP2_I8MM
  if (h2 & (1UL << 14)) f->push_back("bf16");     // HWCAP2_BF16
  if (h2 & (1UL << 1)) f->push_back("sve2");      // HWCAP2_SVE2
}
#endif

uint64_t MeminfoKb(const std::string& text, const char* key) {
  size_t p = text.find(key);
  if (p == std::string::npos) return 0;
  return std::strtoull(text.c_str() + p + std::strlen(key), nullptr, 10);
}

void Cgroups(CpuInfo* c) {
  std::string self = ReadText("/proc/self/cgroup");
  std::istringstream in(self);
  std::string line, v2path, v1mem, v1cpu;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) v2path = line.substr(3);
    else if (line.find(":memory:") != std::string::npos) v1mem = line.substr(line.find(":memory:") + 8);
    else if (line.find("cpu,cpuacct:") != std::string::npos) v1cpu = line.substr(line.find("cpu,cpuacct:") + 12);
    else if (line.find(":cpu:") != std::string::npos) v1cpu = line.substr(line.find(":cpu:") + 5);
  }
  if (!v2path.empty() && fs::exists("/sys/fs/cgroup/cgroup.controllers")) {
    c->cgroup_version = 2;
    // The limit that binds is the smallest along the path to the root.
    for (fs::path p = fs::path("/sys/fs/cgroup") / fs::path(v2path).relative_path();; p = p.parent_path()) {
      std::string m = Trim(ReadText((p / "memory.max").string()));
      if (!m.empty() && m != "max") {
        int64_t v = std::atoll(m.c_str());
        if (c->cgroup_memory_limit < 0 || v < c->cgroup_memory_limit) c->cgroup_memory_limit = v;
      }
      std::string cpu = Trim(ReadText((p / "cpu.max").string()));
      if (!cpu.empty() && cpu.rfind("max", 0) != 0) {
        double q = std::atof(cpu.c_str()), per = std::atof(cpu.c_str() + cpu.find(' ') + 1);
        if (per > 0 && (c->cgroup_cpus < 0 || q / per < c->cgroup_cpus)) c->cgroup_cpus = q / per;
      }
      if (p == "/sys/fs/cgroup" || p == p.parent_path()) break;
    }
    return;
  }
  if (fs::exists("/sys/fs/cgroup/memory") || fs::exists("/sys/fs/cgroup/cpu")) {
    c->cgroup_version = 1;
    for (const std::string& base : {"/sys/fs/cgroup/memory" + v1mem, std::string("/sys/fs/cgroup/memory")}) {
      std::string m = Trim(ReadText(base + "/memory.limit_in_bytes"));
      if (!m.empty()) {
        int64_t v = std::atoll(m.c_str());
        if (v > 0 && v < (int64_t{1} << 62)) c->cgroup_memory_limit = v;
        break;
      }
    }
    for (const std::string& base : {"/sys/fs/cgroup/cpu" + v1cpu, std::string("/sys/fs/cgroup/cpu")}) {
      std::string q = Trim(ReadText(base + "/cpu.cfs_quota_us")), p = Trim(ReadText(base + "/cpu.cfs_period_us"));
      if (!q.empty() && !p.empty()) {
        double qq = std::atof(q.c_str()), pp = std::atof(p.c_str());
        if (qq > 0 && pp > 0) c->cgroup_cpus = qq / pp;
        break;
      }
    }
  }
}

}  // namespace

CpuInfo ReadCpuInfo() {
  CpuInfo c;
#if defined(__x86_64__)
  c.arch = "x86_64";
  X86Features(&c.features);
#elif defined(__aarch64__)
  c.arch = "aarch64";
  ArmFeatures(&c.features);
#else
  c.arch = "other";
#endif
  std::string cpuinfo = ReadText("/proc/cpuinfo");
  for (const char* key : {"model name", "Hardware", "CPU part"}) {
    size_t p = cpuinfo.find(key);
    if (p == std::string::npos) continue;
    size_t colon = cpuinfo.find(':', p), nl = cpuinfo.find('\n', p);
    if (colon < nl) { c.model = Trim(cpuinfo.substr(colon + 1, nl - colon - 1)); break; }
  }
  c.logical_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  cpu_set_t set;
  c.usable_cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : c.logical_cores;
  std::string mi = ReadText("/proc/meminfo");
  c.mem_total = MeminfoKb(mi, "MemTotal:") * 1024;
  c.mem_available = MeminfoKb(mi, "MemAvailable:") * 1024;
  Cgroups(&c);
  return c;
}

ModelCheck CheckModel(const std::string& path, bool hash) {
  ModelCheck m;
  // The GGUF reader's open() would wait forever on a FIFO: only a regular file is opened.
  {
    uint64_t size = 0;
    std::string why;
    const int fd = OpenRegularFile(path, &size, &why);
    if (fd < 0) {
      m.error = path + ": " + why;
      Finding x;
      x.code = FindingCode::kModelUnreadable;
      x.path = path;
      x.message = m.error;
      m.findings.push_back(std::move(x));
      return m;
    }
    ::close(fd);
  }
  auto f = gguf::File::Open(path);
  auto add = [&](FindingCode code, std::string msg) {
    Finding x;
    x.code = code;
    x.path = path;
    x.message = std::move(msg);
    m.findings.push_back(std::move(x));
  };
  if (!f.ok()) {
    m.error = f.status().message();
    add(FindingCode::kModelCorrupt, m.error);
  } else {
    const gguf::File& g = *f.value();
    m.ok = true;
    m.version = g.version();
    m.file_size = g.file_size();
    m.n_tensors = g.tensors().size();
    m.architecture = g.GetStringOr("general.architecture", "");
    for (const auto& t : g.tensors()) m.tensor_bytes += t.nbytes;
    m.bytes_per_token = gguf::DecodeBytesPerToken(g);
  }
  std::error_code ec;
  for (const std::string& side : {path + ".sha256", fs::path(path).replace_extension(".sha256").string()}) {
    if (!fs::exists(side, ec)) continue;
    m.sha256_file = side;
    auto want = ReadSha256Sidecar(side, path);
    if (want.ok()) {
      m.sha256_expected = want.value().hex;
    } else {
      // An unreadable or malformed side file says nothing about the model: never "corrupted".
      Finding x;
      x.code = want.status().code() == StatusCode::kNotFound ? FindingCode::kChecksumNotListed : FindingCode::kChecksumLineInvalid;
      x.severity = Severity::kWarning;
      x.path = side;
      x.message = want.status().message() + "; the model's SHA-256 was not checked against it";
      m.findings.push_back(std::move(x));
    }
    break;
  }
  if (hash || !m.sha256_expected.empty()) {
    auto h = Sha256File(path, m.file_size ? nullptr : &m.file_size);
    if (h.ok()) m.sha256 = h.value();
    else add(FindingCode::kModelUnreadable, h.status().message());
  }
  if (!m.sha256_expected.empty() && !m.sha256.empty() && m.sha256 != m.sha256_expected)
    add(FindingCode::kHashMismatch, "SHA-256 " + m.sha256 + " differs from " + m.sha256_file + " (" + m.sha256_expected +
                             "): corrupted or a different file");
  return m;
}

nlohmann::json CollectEnv(const EnvOptions& opt, int* exit_code) {
  using nlohmann::json;
  json j;
  int rc = 0;
  CpuInfo c = ReadCpuInfo();
  j["cpu"] = {{"model", c.model}, {"arch", c.arch}, {"logical_cores", c.logical_cores},
              {"usable_cores", c.usable_cores}, {"features", c.features}};
  j["memory"] = {{"total", c.mem_total}, {"available", c.mem_available}};
  j["cgroup"] = {{"version", c.cgroup_version}, {"memory_limit", c.cgroup_memory_limit}, {"cpus", c.cgroup_cpus}};
  double best_bw = 0;
  if (!opt.no_bandwidth) {
    int n = opt.max_threads > 0 ? opt.max_threads : c.usable_cores;
    size_t bytes = static_cast<size_t>(std::max(8, opt.bandwidth_mib)) << 20;
    // Never ask for more than a quarter of what is available (cgroup included).
    uint64_t avail = c.mem_available;
    if (c.cgroup_memory_limit > 0) avail = std::min<uint64_t>(avail, c.cgroup_memory_limit);
    if (avail && bytes > avail / 4) bytes = avail / 4;
    json bw = json::array();
    // About 1 GiB read per rep (several passes over the buffer; see MeasureReadBandwidth).
    const int passes = static_cast<int>(std::clamp<size_t>((size_t{1} << 30) / bytes, 1, 8));
    for (const auto& p : bench::MeasureReadBandwidthCurve(n, bytes, 3, passes)) {
      bw.push_back({{"threads", p.threads}, {"gb_per_s", p.gb_per_s}});
      best_bw = std::max(best_bw, p.gb_per_s);
    }
    j["bandwidth"] = {{"buffer_bytes", bytes}, {"points", bw}};
  }
  if (!opt.model.empty()) {
    ModelCheck m = CheckModel(opt.model);
    json mj = {{"path", opt.model}, {"ok", m.ok}, {"version", m.version}, {"file_size", m.file_size},
               {"tensors", m.n_tensors}, {"architecture", m.architecture}, {"tensor_bytes", m.tensor_bytes},
               {"bytes_per_token", m.bytes_per_token}, {"sha256", m.sha256}};
    if (!m.error.empty()) mj["error"] = m.error;
    if (!m.sha256_file.empty()) {
      mj["sha256_file"] = m.sha256_file;
      mj["sha256_expected"] = m.sha256_expected;
      if (!m.sha256_expected.empty()) mj["sha256_match"] = m.sha256 == m.sha256_expected;
    }
    json mf = json::array();
    for (const auto& f : m.findings)
      mf.push_back({{"code", FindingCodeName(f.code)}, {"severity", SeverityName(f.severity)}, {"path", f.path}, {"message", f.message}});
    mj["findings"] = mf;
    if (best_bw > 0 && m.bytes_per_token > 0) mj["roofline_tok_per_s"] = best_bw * 1e9 / m.bytes_per_token;
    j["model"] = mj;
    if (!m.findings.empty()) rc = 1;
  }
  if (!opt.oci.empty()) {
    OciReport r = CheckOciLayout(opt.oci);
    json fj = json::array();
    for (const auto& f : r.findings) {
      fj.push_back({{"code", FindingCodeName(f.code)}, {"severity", SeverityName(f.severity)}, {"path", f.path}, {"message", f.message}});
      if (f.severity != Severity::kInfo) rc = 1;
    }
    j["oci"] = {{"dir", opt.oci}, {"manifests", r.manifests}, {"blobs_checked", r.blobs_checked},
                {"referrers", r.referrers}, {"platforms", r.platforms}, {"findings", fj}};
  }
  if (!opt.referrers.empty()) {
    ReferrersVerdict v = ClassifyReferrersResponse(opt.referrers);
    j["referrers_response"] = {{"file", opt.referrers}, {"code", FindingCodeName(v.code)}, {"http_status", v.http_status}, {"message", v.message}};
    if (v.code == FindingCode::kReferrersUnreadable) rc = 3;
    else if (v.code != FindingCode::kReferrersOk) rc = std::max(rc, 1);
  }
  *exit_code = rc;
  return j;
}

}  // namespace edgedecode::doctor
