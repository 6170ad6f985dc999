// `edgedecode doctor data|env`: argument parsing; the work is in src/doctor (data.cc, env.cc, oci.cc).
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "doctor/data.h"
#include "doctor/env.h"

namespace edgedecode::cli {

int DoctorMain(int argc, char** argv) {
  const std::string cmd = "edgedecode doctor";
  CLI::App app{"environment and data checks that expose decode failures before inference", cmd};
  app.require_subcommand(1);

  doctor::DataCommand dc;
  std::string target;
  auto* data = app.add_subcommand("data", "check every image and label file of a dataset tree");
  data->add_option("DIR", dc.opt.root, "dataset root")->required();
  data->add_option("--target,-T", target, "device: a profile NAME (targets/NAME.json) or FILE.json with an \"image_decoder\" key");
  data->add_option("--jobs,-j", dc.opt.jobs, "worker threads (default: all cores)");
  data->add_option("--json", dc.json_path, "write every finding with its code to FILE");
  data->add_flag("--fix", dc.fix, "write fixed copies (needs --out; the input is never modified)");
  data->add_option("--out", dc.out_dir, "directory for fixed copies and the change log");
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
  env->add_flag("--json", eo.json, "print JSON instead of text");

  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (data->parsed()) {
    if (!target.empty()) {
      auto path = ResolveTarget(target);
      if (!path.ok()) return Fail(cmd + " data", path.status());
      auto hw = doctor::LoadHwDecoder(*path);
      if (!hw.ok()) return Fail(cmd + " data", hw.status());
      dc.opt.hw = hw.value();
    }
    dc.opt.progress = !no_progress;
    return doctor::RunData(dc);
  }
  for (const std::string* p : {&eo.model, &eo.oci, &eo.referrers}) {
    std::error_code ec;
    if (!p->empty() && !std::filesystem::exists(*p, ec))
      return Fail(cmd + " env", NotFound(*p + ": no such file or folder"));
  }
  return doctor::RunEnv(eo);
}

}  // namespace edgedecode::cli
