// `edgedecode rewrite IN.onnx -o OUT.onnx --target PROFILE`: rewrites that move a model's CPU fallbacks onto
// the target's accelerator, each verified against the original by ONNX Runtime (docs/scan.md).
// Exit codes: 0 written (every node a rewrite was tried on ended up rewritten and verified); 1 nothing
// applicable, or a rewrite failed verification with no verified alternative (the verified ones are still
// written); 2 usage (bad option, unknown profile or rewrite, -o equal to the input); 3 bad or unreadable
// model; 4 the ONNX Runtime oracle is missing or failed.
#include <cstdio>
#include <cstdlib>

#include "base/temp_path.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/signals.h"
#include "scan/onnx_model.h"
#include "scan/ort_oracle.h"
#include "scan/rewrite.h"
#include "scan/scanner.h"

namespace edgedecode::cli {

int RewriteMain(int argc, char** argv) {
  const std::string cmd = "edgedecode rewrite";
  CLI::App app{"edgedecode rewrite: graph rewrites that move a model's CPU fallbacks onto the target's accelerator\n"
               "(fix input shapes, fold shape computations, Resize bilinear -> ConvTranspose or nearest + Conv).\n"
               "Each rewrite is kept only if ONNX Runtime finds the rewritten model equal to the original on random\n"
               "inputs (max abs diff <= --tolerance on every output). The input file is never modified.", cmd};
  std::string model, out, target;
  JsonOutput json;
  std::vector<std::string> shapes, only;
  bool dry_run = false, list = false;
  scan::RewriteOptions opts;
  app.add_option("model", model, "input model (.onnx)");
  app.add_option("-o,--output", out, "output model (must not be the input)");
  app.add_option("--target,-T", target, "device: a profile NAME (targets/NAME.json) or FILE.json");
  app.add_option("--input-shape", shapes, "fix an input shape, NAME=D0,D1,... (repeatable; applies fix-input-shape)");
  app.add_option("--only", only, "apply only these rewrites (repeatable or comma-separated), also to nodes the device already runs")
      ->delimiter(',');
  app.add_flag("--dry-run", dry_run, "build and verify every rewrite, write nothing");
  app.add_flag("--list", list, "list the rewrites and exit");
  json.Add(app, "the report");
  app.add_option("--tolerance", opts.tolerance, "max abs diff allowed on every output (default 1e-4)");
  app.add_option("-s,--seed", opts.oracle.seed, "seed of the random inputs (default 1)");
  std::string range;
  app.add_option("--input-range", range, "LO,HI: random float inputs uniform in [LO, HI) (default -1,1; e.g. 0,255 for raw pixels)");
  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (list) {
    for (const auto& r : scan::Rewrites()) std::printf("%-24s %s\n", r.name, r.summary);
    return 0;
  }
  if (model.empty() || out.empty() || target.empty())
    return Fail(cmd, InvalidArgument("need IN.onnx, -o OUT.onnx and --target PROFILE (see --help)"));
  auto path = ResolveTarget(target);
  if (!path.ok()) return Fail(cmd, path.status());
  auto prof = scan::Profile::Load(*path);
  if (!prof.ok()) return Fail(cmd, prof.status());
  for (const auto& s : shapes)
    if (Status st = scan::ParseInputShape(s, &opts.input_shapes); !st.ok()) return Fail(cmd, st);
  if (!range.empty()) {
    size_t comma = range.find(',');
    char* end1 = nullptr;
    char* end2 = nullptr;
    if (comma != std::string::npos) {
      opts.oracle.lo = std::strtod(range.c_str(), &end1);
      opts.oracle.hi = std::strtod(range.c_str() + comma + 1, &end2);
    }
    if (comma == std::string::npos || end1 != range.c_str() + comma || *end2 != '\0' || !(opts.oracle.lo < opts.oracle.hi)) {
      return Fail(cmd, InvalidArgument("--input-range '" + range + "': expected LO,HI with LO < HI"));
    }
  }
  opts.only = only;
  opts.dry_run = dry_run;
  ExitOnSignalRemoving(TempPathFor(out));
  auto report = scan::RewriteModel(model, out, prof.value(), opts, scan::OrtOracle::Find());
  if (!report.ok()) return Fail(cmd, report.status());
  const scan::RewriteReport& r = report.value();
  std::fputs(r.ToText().c_str(), json.text());
  if (Status st = json.Write(r.ToJson(), "rewrite", {model, out}); !st.ok()) return Fail(cmd, st);
  if (r.Count("applied") == 0 || r.Unresolved() > 0) return 1;
  return 0;
}

}  // namespace edgedecode::cli
