// Entry points of the subcommands, one file each in src/cli (*_cmd.cc). Each takes the arguments after
// the subcommand name (argv[0] is the subcommand) and returns the process exit code (cli/exit_code.h).
#pragma once

namespace edgedecode::cli {

// One line per subcommand; keep in the order of `edgedecode --help`.
int RunMain(int argc, char** argv);
int ChatMain(int argc, char** argv);
int ServeMain(int argc, char** argv);
int LogitsMain(int argc, char** argv);
int BenchMain(int argc, char** argv);
int PerplexityMain(int argc, char** argv);
int PlanMain(int argc, char** argv);
int InfoMain(int argc, char** argv);
int TokenizeMain(int argc, char** argv);
int SynthMain(int argc, char** argv);
int QuantizeMain(int argc, char** argv);
int ConvertMain(int argc, char** argv);
int ScanMain(int argc, char** argv);
int RewriteMain(int argc, char** argv);
int DoctorMain(int argc, char** argv);

}  // namespace edgedecode::cli
