#include "cli/exit_code.h"

namespace edgedecode::cli {

const char* ExitCodeText(ExitCode code) {
  switch (code) {
    case ExitCode::kOk: return "success";
    case ExitCode::kFindings: return "findings, does not fit, strict failure, nothing rewritten, or a failed run";
    case ExitCode::kUsage: return "usage error: a bad, unknown or conflicting option";
    case ExitCode::kBadInput: return "an input is unreadable or invalid";
    case ExitCode::kOracle: return "the ONNX Runtime oracle is missing or failed";
    case ExitCode::kInterrupted: return "interrupted by SIGINT (partial results printed)";
    case ExitCode::kTerminated: return "terminated by SIGTERM (partial results printed)";
  }
  return "unknown";
}

ExitCode ExitCodeFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return ExitCode::kOk;
    case StatusCode::kInvalidArgument: return ExitCode::kUsage;
    case StatusCode::kNotFound:
    case StatusCode::kIoError:
    case StatusCode::kCorrupt:
    case StatusCode::kUnsupported: return ExitCode::kBadInput;
    case StatusCode::kUnavailable: return ExitCode::kOracle;
    case StatusCode::kResourceExhausted:
    case StatusCode::kInternal: return ExitCode::kFindings;
  }
  return ExitCode::kFindings;
}

}  // namespace edgedecode::cli
