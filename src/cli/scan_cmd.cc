// `edgedecode scan MODEL --target PROFILE`: where each node runs, why it falls back, what it costs.
// Exit codes (cli/exit_code.h): 0 done (no fallback, or fallbacks without --strict), 1 --strict and something
// falls back, 2 usage (bad option, unknown profile), 3 bad or unreadable model or profile.
#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/output_file.h"
#include "scan/gguf_scan.h"
#include "scan/onnx_model.h"
#include "scan/scanner.h"

namespace edgedecode::cli {

int ScanMain(int argc, char** argv) {
  const std::string cmd = "edgedecode scan";
  CLI::App app{"edgedecode scan: where each node of a model runs on a target device, why nodes fall back to\n"
               "the CPU and what the CPU<->accelerator copies cost per inference. Profiles: targets/*.json\n"
               "(docs/profiles.md).", cmd};
  std::string model, target, csv_out;
  std::vector<std::string> shapes;
  bool strict = false, all = false, quantized = false;
  JsonOutput json;
  app.add_option("model", model, "model file (.onnx or .gguf)")->required();
  app.add_option("--target,-T", target, "device: a profile NAME (targets/NAME.json) or FILE.json")->required();
  app.add_option("--input-shape", shapes, "fix an input shape, NAME=D0,D1,... (repeatable)");
  app.add_flag("--strict", strict, "exit 1 when any node falls back to the CPU (CI gate)");
  json.Add(app, "the full report");
  app.add_option("--csv", csv_out, "write one row per node as CSV to FILE ('-': stdout)");
  app.add_flag("--all", all, "list every node and every transition in the text report");
  app.add_flag("--quantized", quantized, "assume float tensors are quantized to int8 at conversion");
  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (csv_out == "-" && json.to_stdout()) return Fail(cmd, InvalidArgument("--csv - and --json on stdout: name a FILE for one of them"));
  if (!csv_out.empty() && csv_out != "-") {
    if (Status st = CheckOutputIsNotInput(csv_out, {model}, "--csv"); !st.ok()) return Fail(cmd, st);
  }
  auto path = ResolveTarget(target);
  if (!path.ok()) return Fail(cmd, path.status());
  auto prof = scan::Profile::Load(*path);
  if (!prof.ok()) return Fail(cmd, prof.status());
  scan::InputShapes in_shapes;
  for (const auto& s : shapes)
    if (Status st = scan::ParseInputShape(s, &in_shapes); !st.ok()) return Fail(cmd, st);
  scan::ScanReport report;
  if (scan::LooksLikeGguf(model)) {
    auto r = scan::ScanGguf(model, prof.value());
    if (!r.ok()) return Fail(cmd, r.status());
    report = std::move(r.value());
  } else {
    auto m = scan::OnnxModel::Load(model, in_shapes);
    if (!m.ok()) return Fail(cmd, m.status());
    scan::ScanOptions opts;
    opts.quantized = quantized;
    report = scan::Scan(*m.value(), prof.value(), opts);
  }
  std::fputs(report.ToText(all).c_str(), csv_out == "-" ? stderr : json.text());
  if (csv_out == "-") std::fputs(report.ToCsv().c_str(), stdout);
  else if (!csv_out.empty()) {
    if (Status st = WriteFileAtomically(csv_out, report.ToCsv()); !st.ok()) return Fail(cmd, st);
  }
  if (Status st = json.Write(report.ToJson(), "scan", {model}); !st.ok()) return Fail(cmd, st);
  return strict && report.n_cpu > 0 ? 1 : 0;
}

}  // namespace edgedecode::cli
