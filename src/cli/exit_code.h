// The exit codes of every edgedecode command: a contract for scripts (docs/cli.md), one table of text.
#pragma once

#include "edgedecode/status.h"

namespace edgedecode::cli {

enum class ExitCode : int {
  kOk = 0,
  kFindings = 1,     // findings, does not fit, a --strict failure, nothing rewritten, a failed run
  kUsage = 2,        // a bad option, a conflicting option, an unknown name
  kBadInput = 3,     // an input that cannot be read or is invalid (the message names file, offset, tensor or key)
  kOracle = 4,       // an oracle the command needs (ONNX Runtime) is missing or failed
  kInterrupted = 130,  // SIGINT: what was done is printed (128 + 2)
  kTerminated = 143,   // SIGTERM: likewise (128 + 15)
};

// One line per code, as docs/cli.md lists them.
const char* ExitCodeText(ExitCode code);

// The one Status -> exit code mapping of the CLI.
ExitCode ExitCodeFor(StatusCode code);

inline int ToInt(ExitCode c) { return static_cast<int>(c); }

}  // namespace edgedecode::cli
