// `edgedecode scan MODEL --target PROFILE`: where each node runs, why it falls back, what it costs.
// Exit codes: 0 done (no fallback, or fallbacks without --strict), 1 --strict and something falls
// back, 2 usage (bad option, unknown profile), 3 bad or unreadable model.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>

#include "cli/commands.h"
#include "scan/gguf_scan.h"
#include "scan/onnx_model.h"
#include "scan/scanner.h"

namespace edgedecode::cli {

int ScanMain(int argc, char** argv) {
  CLI::App app{"edgedecode scan: where each node of a model runs on a target device, why nodes fall back to\n"
               "the CPU and what the CPU<->accelerator copies cost per inference. Profiles: targets/*.json\n"
               "(docs/profiles.md).", "scan"};
  std::string model, target, json_out, csv_out;
  std::vector<std::string> shapes;
  bool strict = false, all = false, quantized = false;
  app.add_option("model", model, "model file (.onnx or .gguf)")->required();
  app.add_option("-t,--target", target, "device profile name (targets/NAME.json) or path to a .json")->required();
  app.add_option("--input-shape", shapes, "fix an input shape, NAME=D0,D1,... (repeatable)");
  app.add_flag("--strict", strict, "exit 1 when any node falls back to the CPU (CI gate)");
  app.add_option("--json", json_out, "write the full report as JSON to FILE ('-' = stdout)");
  app.add_option("--csv", csv_out, "write one row per node as CSV to FILE");
  app.add_flag("--all", all, "list every node and every transition in the text report");
  app.add_flag("--quantized", quantized, "assume float tensors are quantized to int8 at conversion");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  auto prof = scan::Profile::Load(target);
  if (!prof.ok()) {
    std::fprintf(stderr, "edgedecode scan: %s\n", prof.status().message().c_str());
    return prof.status().code() == StatusCode::kNotFound ? 2 : 3;
  }
  scan::InputShapes in_shapes;
  for (const auto& s : shapes) {
    Status st = scan::ParseInputShape(s, &in_shapes);
    if (!st.ok()) { std::fprintf(stderr, "edgedecode scan: %s\n", st.message().c_str()); return 2; }
  }
  scan::ScanReport report;
  if (scan::LooksLikeGguf(model)) {
    auto r = scan::ScanGguf(model, prof.value());
    if (!r.ok()) { std::fprintf(stderr, "edgedecode scan: %s\n", r.status().message().c_str()); return 3; }
    report = std::move(r.value());
  } else {
    auto m = scan::OnnxModel::Load(model, in_shapes);
    if (!m.ok()) {
      std::fprintf(stderr, "edgedecode scan: %s\n", m.status().message().c_str());
      return m.status().code() == StatusCode::kInvalidArgument ? 2 : 3;
    }
    scan::ScanOptions opts;
    opts.quantized = quantized;
    report = scan::Scan(*m.value(), prof.value(), opts);
  }
  std::fputs(report.ToText(all).c_str(), stdout);
  auto write = [&](const std::string& path, const std::string& text) {
    if (path == "-") { std::fputs(text.c_str(), stdout); return true; }
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) { std::fprintf(stderr, "edgedecode scan: cannot write %s\n", path.c_str()); return false; }
    return true;
  };
  if (!json_out.empty() && !write(json_out, report.ToJson().dump(1) + "\n")) return 2;
  if (!csv_out.empty() && !write(csv_out, report.ToCsv())) return 2;
  return strict && report.n_cpu > 0 ? 1 : 0;
}

}  // namespace edgedecode::cli
