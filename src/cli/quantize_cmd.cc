// `edgedecode quantize`: re-encode a GGUF model's tensors into another type, never over its input.
#include <cstdio>

#include "base/temp_path.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/output_file.h"
#include "cli/signals.h"
#include "tooling/convert_util.h"
#include "tooling/quantize.h"

namespace edgedecode::cli {

int QuantizeMain(int argc, char** argv) {
  using namespace edgedecode::tooling;
  const std::string cmd = "edgedecode quantize";
  CLI::App app{"Re-encode the tensors of a GGUF model (any readable type in) into TYPE. 1-D tensors stay f32; "
               "matrices whose rows do not fit TYPE's block get a type that fits. Every tensor whose type changes "
               "is listed.",
               cmd};
  std::string in, out, type_name;
  std::vector<std::string> tensor_types;
  int threads = 2;
  bool allow_requantize = false, quiet = false;
  JsonOutput json;
  app.add_option("input", in, "input GGUF")->required();
  app.add_option("output", out, "output GGUF (never the input)")->required();
  app.add_option("type", type_name, WritableTypeList() + ", or a mix: q4_k_m, q5_k_m, q3_k_m, q4_k_s, q5_k_s")->required();
  app.add_option("--tensor-type", tensor_types,
                 "PATTERN=TYPE: tensors whose WHOLE name matches the regex PATTERN get TYPE (repeatable, first match "
                 "wins), e.g. 'output\\.weight=q6_k' or 'blk\\..*\\.ffn_down\\.weight=f16'");
  app.add_flag("--allow-requantize", allow_requantize, "re-encode matrices that are already quantized (compounds the rounding)");
  app.add_flag("-q,--quiet", quiet, "do not list the tensors whose type changed");
  app.add_option("-t,--threads", threads, "threads")->capture_default_str();
  json.Add(app, "a summary with every tensor whose type changed");
  if (auto rc = Parse(app, argc, argv)) return *rc;
  if (threads < 1) return Fail(cmd, InvalidArgument("-t must be >= 1"));
  if (Status s = CheckOutputIsNotInput(out, {in}, "output"); !s.ok()) return Fail(cmd, s);

  QuantizeOptions opts;
  if (Status s = ParseQuantizeType(type_name, &opts); !s.ok()) return Fail(cmd, s);
  for (const std::string& tt : tensor_types) {
    const size_t eq = tt.rfind('=');
    GgmlType t;
    if (eq == std::string::npos || eq == 0)
      return Fail(cmd, InvalidArgument("--tensor-type '" + tt + "': expected PATTERN=TYPE"));
    if (!ParseGgmlType(tt.substr(eq + 1), &t) || !IsWritableType(t))
      return Fail(cmd, InvalidArgument("--tensor-type '" + tt + "': unknown type '" + tt.substr(eq + 1) + "' (types: " +
                                       WritableTypeList() + ")"));
    opts.overrides.emplace_back(tt.substr(0, eq), t);
  }
  opts.threads = threads;
  opts.allow_requantize = allow_requantize;
  opts.log = [](const std::string& line) { std::fprintf(stderr, "quantize: %s\n", line.c_str()); };
  ExitOnSignalRemoving(TempPathFor(out));
  QuantizeStats st;
  if (Status s = QuantizeModel(in, out, opts, &st); !s.ok()) return Fail(cmd, s);
  FILE* text = json.text();
  if (!quiet) {
    for (const TypeChange& c : st.changes)
      std::fprintf(text, "  %-32s %-6s -> %-6s %s\n", c.tensor.c_str(), TypeTraits(c.from).name, TypeTraits(c.to).name,
                   c.why.c_str());
  }
  std::fprintf(stderr, "quantize: wrote %s: %d tensors (%zu changed type), %.2f MiB -> %.2f MiB, %d fallback(s)\n",
               out.c_str(), st.tensors, st.changes.size(), st.in_bytes / 1048576.0, st.out_bytes / 1048576.0, st.fallbacks);
  if (json.on()) {
    nlohmann::json changes = nlohmann::json::array();
    for (const TypeChange& c : st.changes)
      changes.push_back({{"tensor", c.tensor}, {"from", TypeTraits(c.from).name}, {"to", TypeTraits(c.to).name}, {"why", c.why}});
    nlohmann::json j = {{"input", in}, {"output", out}, {"type", type_name}, {"tensors", st.tensors},
                        {"in_bytes", st.in_bytes}, {"out_bytes", st.out_bytes}, {"fallbacks", st.fallbacks},
                        {"changes", changes}};
    if (Status s = json.Write(j, "quantize", {in, out}); !s.ok()) return Fail(cmd, s);
  }
  return 0;
}

}  // namespace edgedecode::cli
