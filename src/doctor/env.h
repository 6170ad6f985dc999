// `doctor env`: this machine (CPU, ISA, memory, cgroup limits, bandwidth), a GGUF model's integrity
// and decode roofline, OCI layouts offline. Functions are independent and thread-compatible.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "doctor/bandwidth.h"
#include "doctor/finding.h"

namespace edgedecode::doctor {

struct EnvOptions {
  std::string model, oci, referrers;
  int max_threads = 0;
  int bandwidth_mib = 256;
  bool no_bandwidth = false;
};

struct CpuInfo {
  std::string model;
  std::string arch;
  int logical_cores = 0;   // online
  int usable_cores = 0;    // affinity mask
  std::vector<std::string> features;  // usable ISA features (CPU and OS both enable them)
  uint64_t mem_total = 0, mem_available = 0;  // bytes
  int cgroup_version = 0;                      // 0 none found, 1, 2
  int64_t cgroup_memory_limit = -1;            // bytes, -1 = unlimited/unknown
  double cgroup_cpus = -1;                     // quota/period, -1 = unlimited/unknown
};
CpuInfo ReadCpuInfo();

struct ModelCheck {
  bool ok = false;
  std::string error;           // GGUF structure error (offset and item named)
  uint32_t version = 0;
  uint64_t file_size = 0, tensor_bytes = 0, bytes_per_token = 0;
  size_t n_tensors = 0;
  std::string architecture;
  std::string sha256, sha256_expected, sha256_file;  // expected from MODEL.sha256 if present
  std::vector<Finding> findings;
};
// bytes_per_token: every weight once, but only one row of the token embedding.
ModelCheck CheckModel(const std::string& path, bool hash = true);

// Everything `doctor env` reports, as JSON (cpu, memory, cgroup, bandwidth, model, oci, referrers_response);
// *exit_code: 0 clean, 1 findings, 3 an unreadable referrers reply. Prints nothing.
nlohmann::json CollectEnv(const EnvOptions& opt, int* exit_code);

}  // namespace edgedecode::doctor
