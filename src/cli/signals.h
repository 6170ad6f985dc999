// SIGINT / SIGTERM during long commands. The first signal only sets a flag: the command finishes the current
// step (a token, a window, a run, a file), prints what was done (timings, partial results, JSON with
// "interrupted": true) and exits 130 / 143. A second signal ends the process at once. Commands that write a
// file also remove its temporary name (base/temp_path.h) on the way out, so no partial file is left.
#pragma once

#include <string>

#include "cli/exit_code.h"

namespace edgedecode::cli {

class InterruptScope {
 public:
  // temp_file: the temporary file to remove if the process is ended by a second signal ("" = none).
  explicit InterruptScope(const std::string& temp_file = "");
  ~InterruptScope();  // restores the default handlers
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // The signal that arrived (SIGINT or SIGTERM), or 0. Safe to call from any thread.
  static int signal();
  static bool requested() { return signal() != 0; }
  // Forgets a signal that was handled (chat: Ctrl-C stopped one answer, the next may start).
  static void Clear();
  // 130 after SIGINT, 143 after SIGTERM.
  static ExitCode exit_code();
};

// For commands whose library call cannot stop midway (quantize, synth, convert, rewrite): the first signal
// removes temp_file and ends the process with 130 / 143. Lives until the process ends.
void ExitOnSignalRemoving(const std::string& temp_file);

}  // namespace edgedecode::cli
