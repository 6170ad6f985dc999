// `edgedecode rewrite IN.onnx -o OUT.onnx --target PROFILE`: rewrites that move a model's CPU fallbacks onto
// the target's accelerator, each verified against the original by ONNX Runtime (docs/scan.md).
// Exit codes: 0 written (every node a rewrite was tried on ended up rewritten and verified); 1 nothing
// applicable, or a rewrite failed verification with no verified alternative (the verified ones are still
// written); 2 usage (bad option, unknown profile or rewrite, -o equal to the input); 3 bad or unreadable
// model; 4 the ONNX Runtime oracle is missing or failed.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cli/commands.h"
#include "scan/onnx_model.h"
#include "scan/ort_oracle.h"
#include "scan/rewrite.h"
#include "scan/scanner.h"

namespace edgedecode::cli {

int RewriteMain(int argc, char** argv) {
  CLI::App app{"edgedecode rewrite: graph rewrites that move a model's CPU fallbacks onto the target's accelerator\n"
               "(fix input shapes, fold shape computations, Resize bilinear -> ConvTranspose or nearest + Conv).\n"
               "Each rewrite is kept only if ONNX Runtime finds the rewritten model equal to the original on random\n"
               "inputs (max abs diff <= --tolerance on every output). The input file is never modified.", "rewrite"};
  std::string model, out, target, json_out;
  std::vector<std::string> shapes, only;
  bool dry_run = false, list = false;
  scan::RewriteOptions opts;
  app.add_option("model", model, "input model (.onnx)");
  app.add_option("-o,--output", out, "output model (must not be the input)");
  app.add_option("-t,--target", target, "device profile name (targets/NAME.json) or path to a .json");
  app.add_option("--input-shape", shapes, "fix an input shape, NAME=D0,D1,... (repeatable; applies fix-input-shape)");
  app.add_option("--only", only, "apply only these rewrites (repeatable or comma-separated), also to nodes the device already runs")
      ->delimiter(',');
  app.add_flag("--dry-run", dry_run, "build and verify every rewrite, write nothing");
  app.add_flag("--list", list, "list the rewrites and exit");
  app.add_option("--json", json_out, "write the report as JSON to FILE ('-' = stdout; the text then goes to stderr)");
  app.add_option("--tolerance", opts.tolerance, "max abs diff allowed on every output (default 1e-4)");
  app.add_option("--seed", opts.oracle.seed, "seed of the random inputs (default 1)");
  std::string range;
  app.add_option("--input-range", range, "LO,HI: random float inputs uniform in [LO, HI) (default -1,1; e.g. 0,255 for raw pixels)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (list) {
    for (const auto& r : scan::Rewrites()) std::printf("%-24s %s\n", r.name, r.summary);
    return 0;
  }
  if (model.empty() || out.empty() || target.empty()) {
    std::fprintf(stderr, "edgedecode rewrite: need IN.onnx, -o OUT.onnx and --target PROFILE (see --help)\n");
    return 2;
  }
  auto prof = scan::Profile::Load(target);
  if (!prof.ok()) {
    std::fprintf(stderr, "edgedecode rewrite: %s\n", prof.status().message().c_str());
    return prof.status().code() == StatusCode::kNotFound ? 2 : 3;
  }
  for (const auto& s : shapes) {
    Status st = scan::ParseInputShape(s, &opts.input_shapes);
    if (!st.ok()) { std::fprintf(stderr, "edgedecode rewrite: %s\n", st.message().c_str()); return 2; }
  }
  if (!range.empty()) {
    size_t comma = range.find(',');
    char* end1 = nullptr;
    char* end2 = nullptr;
    if (comma != std::string::npos) {
      opts.oracle.lo = std::strtod(range.c_str(), &end1);
      opts.oracle.hi = std::strtod(range.c_str() + comma + 1, &end2);
    }
    if (comma == std::string::npos || end1 != range.c_str() + comma || *end2 != '\0' || !(opts.oracle.lo < opts.oracle.hi)) {
      std::fprintf(stderr, "edgedecode rewrite: --input-range '%s': expected LO,HI with LO < HI\n", range.c_str());
      return 2;
    }
  }
  opts.only = only;
  opts.dry_run = dry_run;
  auto report = scan::RewriteModel(model, out, prof.value(), opts, scan::OrtOracle::Find());
  if (!report.ok()) {
    std::fprintf(stderr, "edgedecode rewrite: %s\n", report.status().message().c_str());
    switch (report.status().code()) {
      case StatusCode::kInvalidArgument: return 2;
      case StatusCode::kInternal: return 4;
      default: return 3;
    }
  }
  const scan::RewriteReport& r = report.value();
  std::fputs(r.ToText().c_str(), json_out == "-" ? stderr : stdout);
  if (!json_out.empty()) {
    std::string text = r.ToJson().dump(1) + "\n";
    if (json_out == "-") std::fputs(text.c_str(), stdout);
    else {
      std::ofstream f(json_out, std::ios::binary);
      f << text;
      if (!f) { std::fprintf(stderr, "edgedecode rewrite: cannot write %s\n", json_out.c_str()); return 2; }
    }
  }
  if (r.Count("applied") == 0 || r.Unresolved() > 0) return 1;
  return 0;
}

}  // namespace edgedecode::cli
