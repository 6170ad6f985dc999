// edgedecode quantize: re-encode a GGUF model's tensors into another type.
#include <CLI/CLI.hpp>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "tooling/cmd_util.h"
#include "tooling/convert_util.h"
#include "tooling/quantize.h"

namespace edgedecode::cli {

int QuantizeMain(int argc, char** argv) {
  using namespace edgedecode::tooling;
  CLI::App app{"Re-encode the tensors of a GGUF model (any readable type in) into TYPE. 1-D tensors stay f32; "
               "matrices whose rows do not fit TYPE's block get a type that fits (printed per tensor).",
               "edgedecode quantize"};
  std::string in, out, type_name;
  std::vector<std::string> tensor_types;
  int threads = 2;
  bool json = false;
  app.add_option("input", in, "input GGUF")->required();
  app.add_option("output", out, "output GGUF")->required();
  app.add_option("type", type_name, WritableTypeList() + ", or a mix: q4_k_m, q5_k_m, q3_k_m, q4_k_s, q5_k_s")->required();
  app.add_option("--tensor-type", tensor_types, "PATTERN=TYPE: tensors whose name matches the regex PATTERN get TYPE "
                                                "(repeatable, first match wins), e.g. ffn_down=f16");
  app.add_option("-t,--threads", threads, "threads")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_flag("--json", json, "print a JSON summary on stdout");
  CLI11_PARSE(app, argc, argv);

  QuantizeOptions opts;
  Status s = ParseQuantizeType(type_name, &opts);
  if (!s.ok()) return Fail("quantize", s);
  for (const std::string& tt : tensor_types) {
    const size_t eq = tt.rfind('=');
    GgmlType t;
    if (eq == std::string::npos || eq == 0)
      return Fail("quantize", InvalidArgument("--tensor-type '" + tt + "': expected PATTERN=TYPE"));
    if (!ParseGgmlType(tt.substr(eq + 1), &t) || !IsWritableType(t))
      return Fail("quantize", InvalidArgument("--tensor-type '" + tt + "': unknown type '" + tt.substr(eq + 1) +
                                              "' (types: " + WritableTypeList() + ")"));
    opts.overrides.emplace_back(tt.substr(0, eq), t);
  }
  opts.threads = threads;
  opts.log = [](const std::string& line) { std::fprintf(stderr, "quantize: %s\n", line.c_str()); };
  QuantizeStats st;
  s = QuantizeModel(in, out, opts, &st);
  if (!s.ok()) return Fail("quantize", s);
  std::fprintf(stderr, "quantize: wrote %s: %d tensors, %.2f MiB -> %.2f MiB, %d fallback(s)\n", out.c_str(),
               st.tensors, st.in_bytes / 1048576.0, st.out_bytes / 1048576.0, st.fallbacks);
  if (json) {
    nlohmann::json j = {{"output", out}, {"type", type_name}, {"tensors", st.tensors}, {"in_bytes", st.in_bytes},
                        {"out_bytes", st.out_bytes}, {"fallbacks", st.fallbacks}};
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace edgedecode::cli
