// The shared layer of every command: argument parsing with one set of conventions, the Status -> exit code
// mapping, `--json [FILE]`, output files that never replace an input, progress, and the target resolver.
// Everything here runs on the main thread of a command; nothing is thread-safe unless it says so.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.h"
#include "cli/exit_code.h"
#include "edgedecode/status.h"

namespace edgedecode::cli {

using Clock = std::chrono::steady_clock;
inline double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Version of every JSON document the commands print (`schema_version`); docs/json.md lists the fields.
inline constexpr int kJsonSchemaVersion = 1;

// Prints "<command>: <message>" on stderr (the message through EscapeForTerminal) and returns the exit code of
// st (exit_code.h).
int Fail(const std::string& command, const Status& st);

// Text read from a file (a tensor name, an architecture) printed safely: base/utf8.h.
using edgedecode::EscapeForTerminal;

// Parses the command line into app. Returns the exit code to return now (0 after --help, 2 after a usage
// error, with a message naming the flag), or nothing to go on. Beyond CLI11 it refuses an option that takes
// a value followed by a flag (`--json --all` does not write a file named --all), names the llama.cpp flags
// edgedecode does not have and says what to use instead, spells llama.cpp's -ctk / -ctv as --ctk / --ctv,
// and names an unknown subcommand.
std::optional<int> Parse(CLI::App& app, int argc, char** argv);

// `--json [FILE]`: without FILE, or with '-', JSON goes to stdout and every human line to stderr.
class JsonOutput {
 public:
  void Add(CLI::App& app, const std::string& what);
  bool on() const { return opt_ != nullptr && opt_->count() > 0; }
  bool to_stdout() const { return on() && (path_.empty() || path_ == "-"); }
  const std::string& path() const { return path_; }
  // Where the human-readable report goes: stderr while stdout carries the JSON.
  FILE* text() const { return to_stdout() ? stderr : stdout; }
  // Adds schema_version and command, then prints j (stdout) or writes it atomically to FILE, refusing a FILE
  // that is one of `inputs`. Strings that are not UTF-8 are written with U+FFFD, so the output always parses.
  Status Write(nlohmann::json j, const std::string& command, const std::vector<std::string>& inputs = {}) const;

 private:
  CLI::Option* opt_ = nullptr;
  std::string path_;
};

// Adds schema_version and command: every JSON document (and every JSON Lines record) carries them.
void StampJson(nlohmann::json& j, const std::string& command);

// A JSON document's text; invalid UTF-8 in strings becomes U+FFFD instead of an exception.
std::string DumpJson(const nlohmann::json& j, int indent = -1);

// Progress on stderr: one line redrawn in place on a terminal; plain lines, at most one per second, when
// stderr is a file or a pipe; nothing with --no-progress.
class Progress {
 public:
  explicit Progress(bool enabled);
  ~Progress();
  void Update(const std::string& line);  // the current state, e.g. "[3/10] ppl 12.3"
  void Done();                           // ends the redrawn line

 private:
  bool enabled_, tty_, open_ = false;
  Clock::time_point last_{};
};

// --no-progress, the same on every command that shows progress.
void AddNoProgress(CLI::App& app, bool* no_progress);

// The whole text of FILE ('-': stdin). NotFound / Corrupt naming the file when it is missing, a folder, a
// FIFO or a device, or larger than max_bytes.
Result<std::string> ReadInputText(const std::string& path, uint64_t max_bytes = uint64_t{1} << 30);

// --target NAME|FILE, one rule for plan, scan, rewrite and doctor: a value containing '/' or ending in
// ".json" is a file; a NAME is NAME.json in the first of: each folder of $EDGEDECODE_TARGETS (':'-separated),
// targets/ beside the binary, ../targets and ../share/edgedecode/targets from it, the source tree's targets/.
// An unknown NAME is a usage error listing the known ones.
Result<std::string> ResolveTarget(const std::string& arg);

}  // namespace edgedecode::cli
