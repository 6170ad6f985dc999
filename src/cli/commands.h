// Entry points of the subcommands. Each takes the arguments after the subcommand name
// (argv[0] is the subcommand) and returns the process exit code. Each lives in its module
// (src/<module>/*_cmd.cc) so the CLI stays a thin table.
#pragma once

namespace edgedecode::cli {

// One line per subcommand; keep in the order of `edgedecode --help`.
int RunMain(int argc, char** argv);         // src/llm/run_cmd.cc
int LogitsMain(int argc, char** argv);      // src/llm/run_cmd.cc
int BenchMain(int argc, char** argv);       // src/llm/bench_cmd.cc
int PerplexityMain(int argc, char** argv);  // src/llm/perplexity_cmd.cc
int PlanMain(int argc, char** argv);        // src/llm/plan_cmd.cc
int TokenizeMain(int argc, char** argv);    // src/tok/tokenize_cmd.cc
int SynthMain(int argc, char** argv);       // src/llm/synth_cmd.cc
int QuantizeMain(int argc, char** argv);    // src/llm/quantize_cmd.cc
int ConvertMain(int argc, char** argv);     // src/llm/convert_cmd.cc
int ScanMain(int argc, char** argv);        // src/scan/scan_cmd.cc
int RewriteMain(int argc, char** argv);     // src/scan/rewrite_cmd.cc
int DoctorMain(int argc, char** argv);      // src/doctor/doctor_cmd.cc

}  // namespace edgedecode::cli
