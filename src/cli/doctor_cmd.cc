// `edgedecode doctor data|env`: argument parsing and the text report; the checks are in src/doctor.
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/doctor_data.h"
#include "doctor/env.h"

namespace edgedecode::cli {
namespace {

void PrintFindings(FILE* out, const nlohmann::json& findings) {
  for (auto& f : findings)
    std::fprintf(out, "  %s: %s [%s]: %s\n", EscapeForTerminal(f.value("path", "")).c_str(), f.value("code", "").c_str(),
                 f.value("severity", "").c_str(), EscapeForTerminal(f.value("message", "")).c_str());
}

// The text form of CollectEnv's JSON.
void PrintEnv(FILE* out, const nlohmann::json& j, const doctor::EnvOptions& opt) {
  const auto& c = j["cpu"];
  std::fprintf(out, "cpu:      %s (%s), %d cores online, %d usable\n", c.value("model", "").c_str(), c.value("arch", "").c_str(),
               c.value("logical_cores", 0), c.value("usable_cores", 0));
  std::string feats;
  for (auto& f : c["features"]) feats += (feats.empty() ? "" : " ") + f.get<std::string>();
  std::fprintf(out, "isa:      %s\n", feats.c_str());
  std::fprintf(out, "memory:   %.1f GiB total, %.1f GiB available\n", j["memory"].value("total", 0.0) / 1073741824.0,
               j["memory"].value("available", 0.0) / 1073741824.0);
  const auto& g = j["cgroup"];
  const int64_t lim = g.value("memory_limit", int64_t{-1});
  const double cpus = g.value("cpus", -1.0);
  std::fprintf(out, "cgroup:   v%d, memory limit %s, cpu limit %s\n", g.value("version", 0),
               lim < 0 ? "none" : (std::to_string(lim >> 20) + " MiB").c_str(), cpus < 0 ? "none" : std::to_string(cpus).c_str());
  if (j.contains("bandwidth")) {
    std::fprintf(out, "bandwidth (read, %zu MiB buffer):", j["bandwidth"].value("buffer_bytes", size_t{0}) >> 20);
    for (auto& p : j["bandwidth"]["points"]) std::fprintf(out, "  %dT %.1f GB/s", p.value("threads", 0), p.value("gb_per_s", 0.0));
    std::fprintf(out, "\n");
  }
  if (j.contains("model")) {
    const auto& m = j["model"];
    if (m.value("ok", false)) {
      std::fprintf(out, "model:    %s: GGUF v%u, %s, %zu tensors, %.1f MiB, %.1f MiB read per token\n", opt.model.c_str(),
                   m.value("version", 0u), m.value("architecture", "").c_str(), m.value("tensors", size_t{0}),
                   m.value("file_size", 0.0) / 1048576, m.value("bytes_per_token", 0.0) / 1048576);
      if (m.contains("roofline_tok_per_s"))
        std::fprintf(out, "roofline: %.1f tok/s decode at best measured bandwidth (memory-bound upper limit)\n",
                     m["roofline_tok_per_s"].get<double>());
    } else {
      std::fprintf(out, "model:    %s: CORRUPT: %s\n", opt.model.c_str(), m.value("error", "").c_str());
    }
    std::fprintf(out, "sha256:   %s%s\n", m.value("sha256", "").c_str(),
                 m.contains("sha256_match") ? (m["sha256_match"].get<bool>() ? " (matches .sha256)" : " (MISMATCH against .sha256)")
                 : m.contains("sha256_file") ? " (.sha256 beside it not usable)"
                                             : " (no .sha256 beside it)");
    PrintFindings(out, m["findings"]);
  }
  if (j.contains("oci")) {
    const auto& o = j["oci"];
    std::fprintf(out, "oci:      %s: %d manifest(s), %d blob(s) checked, %d referrer(s)\n", opt.oci.c_str(),
                 o.value("manifests", 0), o.value("blobs_checked", 0), o.value("referrers", 0));
    for (auto& p : o["platforms"]) std::fprintf(out, "          platform %s\n", p.get<std::string>().c_str());
    PrintFindings(out, o["findings"]);
  }
  if (j.contains("referrers_response")) {
    const auto& r = j["referrers_response"];
    std::fprintf(out, "referrers: %s: %s: %s\n", EscapeForTerminal(opt.referrers).c_str(), r.value("code", "").c_str(),
                 EscapeForTerminal(r.value("message", "")).c_str());
  }
}

}  // namespace

int DoctorMain(int argc, char** argv) {
  const std::string cmd = "edgedecode doctor";
  CLI::App app{"environment and data checks that expose decode failures before inference", cmd};
  app.require_subcommand(1);

  DoctorDataCommand dc;
  std::string target;
  JsonOutput data_json, env_json;
  auto* data = app.add_subcommand("data", "check every image and label file of a dataset tree");
  data->add_option("DIR", dc.opt.root, "dataset root")->required();
  data->add_option("--target,-T", target, "device: a profile NAME (targets/NAME.json) or FILE.json with an \"image_decoder\" key");
  data->add_option("--jobs,-j", dc.opt.jobs, "worker threads (default: all cores)");
  data_json.Add(*data, "every finding with its code");
  data->add_flag("--fix", dc.fix, "write fixed copies (needs --out; the input is never modified)");
  data->add_option("--out", dc.out_dir, "folder for fixed copies and the change log (outside the input tree)");
  auto* man = data->add_option("--manifest", dc.manifest_path, "write SHA-256 + size of every file (sha256sum -c format, plus FILE.json)");
  data->add_option("--verify", dc.verify_path, "report missing, changed and unexpected files against a manifest")->excludes(man);
  bool no_progress = false;
  AddNoProgress(*data, &no_progress);

  doctor::EnvOptions eo;
  auto* env = app.add_subcommand("env", "CPU, memory, cgroup limits, memory bandwidth; model and OCI layout integrity");
  env->add_option("--model,-m", eo.model, "GGUF model: integrity, SHA-256 vs MODEL.sha256, decode roofline tok/s");
  env->add_option("--oci", eo.oci, "OCI image layout directory to check offline");
  env->add_option("--referrers-response", eo.referrers, "saved registry reply to a referrers request to classify");
  env->add_option("--max-threads", eo.max_threads, "bandwidth measured for 1..N threads (default: cores)");
  env->add_option("--bandwidth-mib", eo.bandwidth_mib, "buffer size per measurement in MiB (default 256)");
  env->add_flag("--no-bandwidth", eo.no_bandwidth, "skip the bandwidth measurement");
  env_json.Add(*env, "the report");

  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (data->parsed()) {
    if (!target.empty()) {
      auto path = ResolveTarget(target);
      if (!path.ok()) return Fail(cmd + " data", path.status());
      auto hw = doctor::LoadHwDecoder(*path);
      if (!hw.ok()) return Fail(cmd + " data", hw.status());
      dc.opt.hw = hw.value();
    }
    if (data_json.on()) dc.json_path = data_json.to_stdout() ? "-" : data_json.path();
    dc.progress = !no_progress;
    return RunDoctorData(dc);
  }
  for (const std::string* p : {&eo.model, &eo.oci, &eo.referrers}) {
    std::error_code ec;
    if (!p->empty() && !std::filesystem::exists(*p, ec)) return Fail(cmd + " env", NotFound(*p + ": no such file or folder"));
  }
  int rc = 0;
  const nlohmann::json j = doctor::CollectEnv(eo, &rc);
  PrintEnv(env_json.text(), j, eo);
  if (Status st = env_json.Write(j, "doctor env", {eo.model, eo.oci, eo.referrers}); !st.ok()) return Fail(cmd + " env", st);
  return rc;
}

}  // namespace edgedecode::cli
