// `edgedecode doctor data|env`: argument parsing only; the work is in data.cc / env.cc / oci.cc.
#include <unistd.h>

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "doctor/data.h"
#include "doctor/env.h"

namespace edgedecode::cli {

int DoctorMain(int argc, char** argv) {
  CLI::App app{"environment and data checks that expose decode failures before inference", "doctor"};
  app.require_subcommand(1);

  doctor::DataCommand dc;
  std::string target;
  auto* data = app.add_subcommand("data", "check every image and label file of a dataset tree");
  data->add_option("DIR", dc.opt.root, "dataset root")->required();
  data->add_option("--target", target, "target profile JSON (targets/*.json) with an \"image_decoder\" key");
  data->add_option("--jobs,-j", dc.opt.jobs, "worker threads (default: all cores)");
  data->add_option("--json", dc.json_path, "write every finding with its code to FILE");
  data->add_flag("--fix", dc.fix, "write fixed copies (needs --out; the input is never modified)");
  data->add_option("--out", dc.out_dir, "directory for fixed copies and the change log");
  auto* man = data->add_option("--manifest", dc.manifest_path, "write SHA-256 + size of every file (sha256sum -c format, plus FILE.json)");
  data->add_option("--verify", dc.verify_path, "report missing, changed and unexpected files against a manifest")->excludes(man);
  bool no_progress = false;
  data->add_flag("--no-progress", no_progress, "no progress output on stderr");

  doctor::EnvOptions eo;
  auto* env = app.add_subcommand("env", "CPU, memory, cgroup limits, memory bandwidth; model and OCI layout integrity");
  env->add_option("--model", eo.model, "GGUF model: integrity, SHA-256 vs MODEL.sha256, decode roofline tok/s");
  env->add_option("--oci", eo.oci, "OCI image layout directory to check offline");
  env->add_option("--referrers-response", eo.referrers, "saved registry reply to a referrers request to classify");
  env->add_option("--max-threads", eo.max_threads, "bandwidth measured for 1..N threads (default: cores)");
  env->add_option("--bandwidth-mib", eo.bandwidth_mib, "buffer size per measurement in MiB (default 256)");
  env->add_flag("--no-bandwidth", eo.no_bandwidth, "skip the bandwidth measurement");
  env->add_flag("--json", eo.json, "print JSON instead of text");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (data->parsed()) {
    if (!target.empty()) {
      auto hw = doctor::LoadHwDecoder(target);
      if (!hw.ok()) {
        std::fprintf(stderr, "doctor data: %s\n", hw.status().message().c_str());
        return 2;
      }
      dc.opt.hw = hw.value();
    }
    dc.opt.progress = !no_progress;
    return doctor::RunData(dc);
  }
  return doctor::RunEnv(eo);
}

}  // namespace edgedecode::cli
